"""Subcommands of the ``albic`` command line that live in modules of their own.

See ``albic.cli.main.COMMAND_MODULES`` for the contract a command module keeps.
"""
