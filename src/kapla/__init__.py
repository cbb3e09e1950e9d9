"""kapla: dataflow scheduling of neural networks on spatial accelerators."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kapla.errors import KaplaError

__version__ = "0.1.0"

if TYPE_CHECKING:  # pragma: no cover
    from kapla.api import schedule


def __getattr__(name: str) -> Any:
    # the scheduling API loads the whole tool: only when asked for, so that
    # ``import kapla.arch`` (or the command line's help) stays light
    if name == "schedule":
        from kapla.api import schedule

        globals()["schedule"] = schedule
        return schedule
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["KaplaError", "__version__", "schedule"]
