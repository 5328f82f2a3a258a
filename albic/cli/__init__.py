"""The ``albic`` command line: :mod:`albic.cli.main` and one module per subcommand in
:mod:`albic.cli.commands`. The top room: it may import every other."""
