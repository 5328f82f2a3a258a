"""Subcommands of the ``albic`` command line that live in modules of their own.

See ``albic.cli.main.COMMANDS`` for the contract a command module keeps.
"""
