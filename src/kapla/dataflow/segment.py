"""Segment-level directives: which layers run together, where, and how data flows.

A segment (KAPLA Sec. III-A, TANGRAM Sec. 3.2-3.3) is a group of layers that
run on the accelerator at the same time. It is split into spatial *slots*,
each on its own block of nodes (a rectangle, :class:`Region`, or a stripe
folded zig-zag across the array, :class:`FoldedRegion`); the layers of one
slot run one after another on that region. Inside a segment, an fmap a later layer
consumes is forwarded on chip instead of going through DRAM; only what
leaves the segment (or is kept for training) is written to DRAM. Each layer's
intra-layer scheme is a :class:`~kapla.dataflow.directives.LayerScheme`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from kapla.dataflow.directives import LayerScheme

Cell = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Region:
    """A rows x cols block of nodes whose top-left node is ``origin``."""

    origin: tuple[int, int]
    shape: tuple[int, int]

    @property
    def nodes(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def folded(self) -> bool:
        """A rectangle never turns."""
        return False

    @property
    def center(self) -> tuple[float, float]:
        return (self.origin[0] + (self.shape[0] - 1) / 2, self.origin[1] + (self.shape[1] - 1) / 2)

    def cells(self) -> tuple[Cell, ...]:
        """Its nodes' (row, column) on the array, row by row."""
        (r0, c0), (rows, cols) = self.origin, self.shape
        return tuple((r, c) for r in range(r0, r0 + rows) for c in range(c0, c0 + cols))

    def distance(self, other: AnyRegion) -> float:
        """Manhattan hops between the two regions' centres (0 for the same region)."""
        (a, b), (c, d) = self.center, other.center
        return abs(a - c) + abs(b - d)


@dataclass(frozen=True, slots=True)
class FoldedRegion:
    """A run of node columns along a zig-zag path of stripes: nn_dataflow's folded region, in kapla's terms.

    The path covers the array from row ``top`` down in stripes ``stripe``
    rows high: it crosses the first stripe left to right over the array's
    ``width`` columns, turns, crosses the next right to left, and so on. Its
    positions are columns of ``stripe`` nodes, numbered 0, 1, ... along the
    path; the region holds ``columns`` of them from position ``start``, so
    any multiple of the stripe height is a region's node count, and regions
    of one segment allocated one after another along the same path never
    share a node.

    The layer on it sees a ``stripe x columns`` block (:attr:`shape`): its
    logical node ``(r, j)`` is row ``r`` of path position ``start + j``, so
    logical neighbours are neighbours on the chip except across a turn,
    where the next column lies ``stripe`` rows further down.
    """

    top: int
    stripe: int
    width: int
    start: int
    columns: int

    def __post_init__(self) -> None:
        if min(self.stripe, self.width, self.columns) < 1 or self.top < 0 or self.start < 0:
            raise ValueError(f"not a folded region: {self!r}")

    @property
    def nodes(self) -> int:
        return self.stripe * self.columns

    @property
    def shape(self) -> tuple[int, int]:
        """The block the layer's scheme sees: stripe height x columns along the path."""
        return (self.stripe, self.columns)

    @property
    def stripes(self) -> range:
        """The stripes (0: the first of the path) the region has columns in."""
        return range(self.start // self.width, (self.start + self.columns - 1) // self.width + 1)

    @property
    def folded(self) -> bool:
        """Whether the region turns at least once (else it is a rectangle)."""
        return len(self.stripes) > 1

    def column(self, position: int) -> Cell:
        """(first row, column) on the array of path position ``position``."""
        stripe, offset = divmod(position, self.width)
        col = offset if stripe % 2 == 0 else self.width - 1 - offset
        return (self.top + stripe * self.stripe, col)

    def cell(self, r: int, j: int) -> Cell:
        """The array node of the layer's logical node ``(r, j)``."""
        row, col = self.column(self.start + j)
        return (row + r, col)

    @property
    def origin(self) -> Cell:
        """The node of logical ``(0, 0)``: the first node of the region along the path."""
        return self.cell(0, 0)

    def cells(self) -> tuple[Cell, ...]:
        """Its nodes on the array, column by column along the path."""
        return tuple(self.cell(r, j) for j in range(self.columns) for r in range(self.stripe))

    @property
    def center(self) -> tuple[float, float]:
        """The mean position of its nodes (a rectangle's centre)."""
        return _folded_center(self)

    def distance(self, other: AnyRegion) -> float:
        """Manhattan hops between the two regions' centres (as for rectangles)."""
        (a, b), (c, d) = self.center, other.center
        return abs(a - c) + abs(b - d)

    def rectangle(self) -> Region | None:
        """The same nodes as a :class:`Region` when the region does not turn (None if it does)."""
        if self.folded:
            return None
        (r0, c0), (_, c1) = self.column(self.start), self.column(self.start + self.columns - 1)
        return Region((r0, min(c0, c1)), (self.stripe, self.columns))


#: A layer's block of nodes: a rectangle or a folded stripe.
AnyRegion = Region | FoldedRegion


@dataclass(frozen=True)
class LayerPlacement:
    """How one layer of a segment is placed and fed.

    ``onchip_inputs`` are producers (in the same segment) whose fmaps arrive
    over the NoC instead of from DRAM; ``ifm_share`` the share of the layer's
    input words they bring (the rest, fmaps from outside the segment, read from
    DRAM beside them; 1: every input forwarded); ``shares_input_of`` is a layer of the
    segment that reads the same fmaps from DRAM and passes them on over the
    NoC (siblings of a branch: the gates of an LSTM cell, an inception
    module's branches); ``to_dram`` says whether the output is
    written to DRAM (a consumer outside the segment, or kept for training);
    ``pinned`` says the weights stay on chip for the whole run (model pinning).
    """

    layer: str
    region: AnyRegion
    onchip_inputs: tuple[str, ...] = ()
    to_dram: bool = True
    pinned: bool = False
    shares_input_of: str | None = None
    ifm_share: float = 1.0

    @property
    def forwarders(self) -> tuple[str, ...]:
        """The layers of the segment whose regions send this layer its input over the NoC."""
        if self.onchip_inputs:
            return self.onchip_inputs
        return () if self.shares_input_of is None else (self.shares_input_of,)


@lru_cache(maxsize=1 << 12)  # a search measures distances between the same few regions many times
def _folded_center(region: FoldedRegion) -> tuple[float, float]:
    # every position holds `stripe` rows: row sums go by position, the mean row offset is (stripe - 1) / 2
    firsts = [region.column(region.start + j) for j in range(region.columns)]
    row = sum(r for r, _ in firsts) / region.columns + (region.stripe - 1) / 2
    return (row, sum(c for _, c in firsts) / region.columns)


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
