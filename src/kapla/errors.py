"""Errors kapla reports to its users.

Every error a user can cause (a malformed file, an unknown layer, a network
that does not fit) is a :class:`KaplaError`. Its message is one line that names
what is wrong and where; the command line prints it and exits non-zero instead
of showing a traceback.
"""

from __future__ import annotations


class KaplaError(Exception):
    """Base class of all errors caused by user input."""


class NetworkError(KaplaError):
    """A network definition is inconsistent (cycle, dangling input, shape mismatch)."""


class SpecError(KaplaError):
    """A network or hardware file is malformed."""


class UnsupportedOpError(KaplaError):
    """An imported model uses an operator kapla cannot represent."""


class ArchError(KaplaError):
    """A hardware description is invalid."""


class InteropError(KaplaError):
    """Another tool's output (e.g. nn_dataflow's JSON) cannot be read or imported."""
