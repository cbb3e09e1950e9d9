"""Tensor-centric dataflow directives (KAPLA Sec. III-B) for one layer.

A layer's intra-layer scheme is written level by level, from the PE register
files outwards. At each on-chip memory level:

* ``tensor(...)`` declares the block of each tensor one buffer of this level
  holds (derived here from the loop extents the level covers);
* ``stack(dim+=shift, repl)`` replicates that block over ``repl`` units of the
  level (PEs, nodes) at offsets ``shift`` apart: spatial parallelism;
* ``update(dim+=step)`` moves the blocks through the next level's block, in
  order from the outermost to the innermost loop: temporal iteration.

Here every stack and update runs over one loop dimension (``N G C K Y X S R``);
the shifts and steps of the derived tensor dimensions (``Yi`` of a stack over
``Y``, for instance) follow from the layer's geometry and are printed, not
stored. The innermost block (``unit``) is what the PE-array mapping template
puts into one PE. Blocks grow outwards:
``tile(level + 1) = tile(level) x stacks(level) x updates(level)`` per
dimension, and the outermost tile must be the whole layer. A tensor kept in a
level with buffer sharing (TANGRAM's BSD) is stored once across ``shr`` units
of that level, each holding ``1/shr`` of the block.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

from kapla.dataflow.tensors import DIMS, Kind, TensorRole, layer_dims, tensor_roles
from kapla.workload.layer import Layer, shape_key


def _freeze(mapping: Mapping[str, int] | Iterable[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    items = dict(mapping)
    return tuple((d, int(items[d])) for d in DIMS if d in items and items[d] != 1)


@dataclass(frozen=True, slots=True)
class Loop:
    """A temporal loop (``update``) over one dimension."""

    dim: str
    count: int


@dataclass(frozen=True, slots=True)
class Stack:
    """A spatial loop (``stack``) over one dimension, laid out as rows x cols units."""

    dim: str
    rows: int = 1
    cols: int = 1

    @property
    def count(self) -> int:
        return self.rows * self.cols


@dataclass(frozen=True)
class LevelScheme:
    """The stacks and updates of one memory level (the tile is derived)."""

    level: str
    stacks: tuple[Stack, ...] = ()
    updates: tuple[Loop, ...] = ()  # outermost first
    shr: tuple[tuple[Kind, int], ...] = ()  # buffer sharing factor per tensor kind
    bypass: frozenset[Kind] = frozenset()  # tensors not buffered at this level

    def __post_init__(self) -> None:
        object.__setattr__(self, "stacks", tuple(self.stacks))
        object.__setattr__(self, "updates", tuple(self.updates))
        object.__setattr__(self, "shr", tuple(sorted(dict(self.shr).items())))
        object.__setattr__(self, "bypass", frozenset(self.bypass))

    @property
    def parallelism(self) -> int:
        return math.prod(s.count for s in self.stacks)

    @property
    def grid(self) -> tuple[int, int]:
        """Rows x columns of units this level's stacks occupy."""
        return (math.prod(s.rows for s in self.stacks), math.prod(s.cols for s in self.stacks))

    def factor(self, dim: str, spatial: bool | None = None) -> int:
        """Product of this level's loop counts over ``dim`` (stacks, updates or both)."""
        stacked, updated = self._factors
        if spatial is True:
            return stacked.get(dim, 1)
        if spatial is False:
            return updated.get(dim, 1)
        return stacked.get(dim, 1) * updated.get(dim, 1)

    @cached_property
    def _factors(self) -> tuple[dict[str, int], dict[str, int]]:
        # The evaluator asks for these in its inner loop: count them once.
        stacked: dict[str, int] = {}
        for st in self.stacks:
            stacked[st.dim] = stacked.get(st.dim, 1) * st.count
        updated: dict[str, int] = {}
        for up in self.updates:
            updated[up.dim] = updated.get(up.dim, 1) * up.count
        return stacked, updated

    def sharing(self, kind: Kind) -> int:
        return dict(self.shr).get(kind, 1)


@dataclass(frozen=True)
class LayerScheme:
    """A complete intra-layer scheme: the PE unit block and one entry per on-chip level.

    ``levels`` run from the innermost (register file) outwards; DRAM, which
    holds every tensor whole, has no entry.
    """

    layer: Layer
    batch: int
    unit: tuple[tuple[str, int], ...]
    levels: tuple[LevelScheme, ...]
    ifm_name: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "unit", _freeze(self.unit))
        object.__setattr__(self, "levels", tuple(self.levels))

    # Worked out on first use: a network search holds a hundred thousand schemes
    # and asks few of them for their blocks (a dict per level each, kept, would be
    # a third of its memory on ResNet-1001's training DAG).
    @cached_property
    def _tiles(self) -> tuple[dict[str, int], ...]:
        tiles = [{d: dict(self.unit).get(d, 1) for d in DIMS}]
        for lvl in self.levels:
            prev = tiles[-1]
            tiles.append({d: prev[d] * lvl.factor(d) for d in DIMS})
        return tuple(tiles)

    @cached_property
    def _clipped(self) -> tuple[dict[str, int], ...]:
        full = self.dims
        return tuple({d: min(t[d], full[d]) for d in DIMS} for t in self._tiles)

    # ------------------------------------------------------------ structure

    @property
    def dims(self) -> dict[str, int]:
        """Full loop extents of the layer at this batch."""
        return layer_dims(self.layer, self.batch)

    def nominal_tile(self, index: int) -> dict[str, int]:
        """The block of level ``index`` as the loops lay it out (0 = innermost;
        ``len(levels)`` is what the whole scheme spans): loops advance by it."""
        return dict(self._tiles[index])

    def tile(self, index: int) -> dict[str, int]:
        """The largest block of the layer one unit at level ``index`` holds: the
        nominal block, clipped to the layer (a last, partial block is smaller)."""
        return dict(self._clipped[index])

    @cached_property
    def roles(self) -> tuple[TensorRole, ...]:
        return tensor_roles(self.layer, self.ifm_name)

    def temporal_loops(self, index: int) -> tuple[Loop, ...]:
        """Temporal loops at and above level ``index``, outermost first."""
        loops: list[Loop] = []
        for lvl in reversed(self.levels[index:]):
            loops.extend(lvl.updates)
        return tuple(loops)

    @property
    def trips(self) -> int:
        """Sequential steps of the whole scheme: all updates times the unit's own work."""
        unit_ops = math.prod(dict(self.unit).values()) if self.unit else 1
        return unit_ops * math.prod(u.count for lvl in self.levels for u in lvl.updates)

    @property
    def total_parallelism(self) -> int:
        return math.prod(lvl.parallelism for lvl in self.levels)


def dataflow_key(scheme: LayerScheme) -> Hashable:
    """The scheme without its layer's identity (what it compares equal by, but
    for the layer's name and its input's): a layer solve's scheme before it is
    renamed for the layer that uses it; equal keys cost the same."""
    return (shape_key(scheme.layer), scheme.batch, scheme.unit, scheme.levels)
