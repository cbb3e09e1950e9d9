"""The search's run options, apart from the hardware: what a user may switch
off for one run (layer pipelining, buffer sharing) and how wide KAPLA's
network DP looks (``top_k``)."""

from __future__ import annotations

from dataclasses import dataclass

from kapla.arch.spec import ArchSpec
from kapla.errors import KaplaError


@dataclass(frozen=True)
class SearchOptions:
    """``pipelining=False`` / ``buffer_sharing=False`` turn those optimisations
    off even where the hardware allows them; ``top_k`` is the default of a
    network scheduler that keeps the best k chains."""

    pipelining: bool = True
    buffer_sharing: bool = True
    top_k: int = 4

    def __post_init__(self) -> None:
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 1:
            raise KaplaError(f"--top-k must be at least 1, got {self.top_k}")

    def apply(self, arch: ArchSpec) -> ArchSpec:
        """The hardware block the search works on: the spec with what this run switches off."""
        if not self.pipelining:
            arch = arch.with_options(spatial_layer_pipe=False, temporal_layer_pipe=False)
        if not self.buffer_sharing:
            arch = arch.with_options(buffer_sharing=False)
        return arch


__all__ = ["SearchOptions"]
