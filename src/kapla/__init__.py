"""kapla: dataflow scheduling of neural networks on spatial accelerators."""

from kapla.errors import KaplaError

__version__ = "0.1.0"

__all__ = ["KaplaError", "__version__"]
