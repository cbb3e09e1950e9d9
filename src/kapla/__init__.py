"""kapla: dataflow scheduling of neural networks on spatial accelerators."""

from kapla.errors import KaplaError

__version__ = "0.1.0"

from kapla.api import schedule  # noqa: E402 - after __version__, which the modules it imports may read

__all__ = ["KaplaError", "__version__", "schedule"]
