"""One layer solve as a value: the layer, its batch, the hardware block it
runs on, what to minimise and where its data come from and go to.

Every layer solver takes a :class:`Problem`; :attr:`Problem.key` is the one
statement of what a layer solve depends on (a cache, the worker pool and the
on-disk store all key by it or by a coarser key that determines it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kapla.arch.spec import ArchSpec
from kapla.errors import KaplaError
from kapla.model.feed import FROM_DRAM, Feed
from kapla.model.objective import OBJECTIVES, objective_of
from kapla.workload.layer import Layer, shape_key


class NoSchemeError(KaplaError):
    """No valid scheme exists for a layer on the given hardware."""


@dataclass(frozen=True)
class Problem:
    """One layer solve: the layer, its batch, the hardware block it runs on
    (``arch``, already cut to its region of nodes), what to minimise, and the
    ``feed`` saying which data stay on chip when it runs inside a segment."""

    layer: Layer
    batch: int
    arch: ArchSpec
    objective: str = "energy"
    feed: Feed = FROM_DRAM
    ifm_name: str | None = None  # the input tensor's name in the directives

    def __post_init__(self) -> None:
        check_objective(self.objective)

    @property
    def fed(self) -> Feed | None:
        """The feed, or None when everything goes through DRAM (the plain, faster path)."""
        return None if self.feed == FROM_DRAM else self.feed

    @property
    def key(self) -> Problem:
        """The problem without the layer's identity: equal keys need equal schemes."""
        return replace(self, layer=shape_key(self.layer), ifm_name=None)


def check_objective(objective: str) -> str:
    """``objective`` if it is one kapla knows (the error names them otherwise)."""
    objective_of(objective)
    return objective


__all__ = ["OBJECTIVES", "NoSchemeError", "Problem", "check_objective", "shape_key"]
