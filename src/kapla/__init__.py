"""kapla: dataflow scheduling of neural networks on spatial accelerators."""

from kapla.errors import KaplaError

__version__ = "0.1.0"


def schedule(*args, **kwargs):
    """Schedule a network on an accelerator; see :func:`kapla.api.schedule`."""
    from kapla.api import schedule as _schedule

    return _schedule(*args, **kwargs)


__all__ = ["KaplaError", "__version__", "schedule"]
