"""Segment-level directives: which layers run together, where, and how data flows.

A segment (KAPLA Sec. III-A, TANGRAM Sec. 3.2-3.3) is a group of layers that
run on the accelerator at the same time. It is split into spatial *slots*,
each on its own block of nodes (a :class:`Region`); the layers of one slot
run one after another on that region. Inside a segment, an fmap a later layer
consumes is forwarded on chip instead of going through DRAM; only what
leaves the segment (or is kept for training) is written to DRAM. Each layer's
intra-layer scheme is a :class:`~kapla.dataflow.directives.LayerScheme`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kapla.dataflow.directives import LayerScheme


@dataclass(frozen=True, slots=True)
class Region:
    """A rows x cols block of nodes whose top-left node is ``origin``."""

    origin: tuple[int, int]
    shape: tuple[int, int]

    @property
    def nodes(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def center(self) -> tuple[float, float]:
        return (self.origin[0] + (self.shape[0] - 1) / 2, self.origin[1] + (self.shape[1] - 1) / 2)

    def distance(self, other: Region) -> float:
        """Manhattan hops between the two regions' centres (0 for the same region)."""
        (a, b), (c, d) = self.center, other.center
        return abs(a - c) + abs(b - d)


@dataclass(frozen=True)
class LayerPlacement:
    """How one layer of a segment is placed and fed.

    ``onchip_inputs`` are producers (in the same segment) whose fmaps arrive
    over the NoC instead of from DRAM; ``to_dram`` says whether the output is
    written to DRAM (a consumer outside the segment, or kept for training);
    ``pinned`` says the weights stay on chip for the whole run (model pinning).
    """

    layer: str
    region: Region
    onchip_inputs: tuple[str, ...] = ()
    to_dram: bool = True
    pinned: bool = False


def layout_of(layers: Sequence[str], slots: Sequence[Sequence[str]]) -> str:
    """How a segment's layers share the chip: single (one layer), spatial (each
    slot on its own nodes, pipelined) or temporal (one slot, one layer after another)."""
    if len(layers) == 1:
        return "single"
    return "spatial" if len(slots) > 1 else "temporal"


@dataclass(frozen=True)
class SegmentScheme:
    """A segment: spatial slots of temporally ordered layers, their placements and schemes."""

    slots: tuple[tuple[str, ...], ...]
    placements: Mapping[str, LayerPlacement]
    schemes: Mapping[str, LayerScheme]
    groups: int = 1  # forwarding granularity: batch groups x fmap groups (ALLO)
    _order: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "slots", tuple(tuple(s) for s in self.slots))
        object.__setattr__(self, "placements", dict(self.placements))
        object.__setattr__(self, "schemes", dict(self.schemes))
        object.__setattr__(self, "_order", tuple(name for slot in self.slots for name in slot))

    @property
    def layers(self) -> tuple[str, ...]:
        return self._order

    @property
    def layout(self) -> str:
        """single (one layer), spatial (slots on their own nodes, pipelined) or temporal (one slot)."""
        return layout_of(self.layers, self.slots)

    def slot_of(self, layer: str) -> int:
        for i, slot in enumerate(self.slots):
            if layer in slot:
                return i
        raise KeyError(layer)
