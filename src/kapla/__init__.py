"""kapla: dataflow scheduling of neural networks on spatial accelerators."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kapla.errors import KaplaError
from kapla.lazy import lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:  # pragma: no cover
    from kapla.api import recost, schedule

__all__ = ["KaplaError", "__version__", "recost", "schedule"]

# the scheduling API loads the whole tool: only when asked for, so that
# ``import kapla.arch`` (or the command line's help) stays light
__getattr__ = lazy_exports(__name__, {"schedule": "api", "recost": "api"})
