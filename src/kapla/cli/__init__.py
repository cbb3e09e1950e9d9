"""The ``kapla`` command line."""
