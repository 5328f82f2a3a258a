"""The shared model (design section 3), its metrics and independent validator, its JSON form,
the planner contract and registry (section 4), and the key -> key-group hashes. Imports only
:mod:`albic.base`."""
