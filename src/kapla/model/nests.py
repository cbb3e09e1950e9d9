"""Many loop nests of one layer, as arrays: the form the cost model computes on.

A scheme (:class:`~kapla.dataflow.directives.LayerScheme`) is one loop nest:
a unit block, then per on-chip level its stacks (spatial loops) and updates
(temporal loops, outermost first). :class:`Nests` holds ``M`` such nests of
one layer at once, so that the evaluator judges one scheme and a solver's
thousands of candidates with the same code (:func:`from_schemes` makes a
batch of one). Everything a loop count decides is an integer array; dims are
column indices into :data:`~kapla.dataflow.tensors.DIMS`.

Candidates often share their factors and differ only in loop order, so the
factor arrays (unit, stacks, per-level factor products, sharing) have ``F``
rows, one per distinct factor combination, and ``rows`` maps each of the
``M`` candidates to its combination; the updates (with their order) have
``M`` rows. Loops of count 1 are allowed anywhere (they pad candidates to a
common number of loop columns and never change a cost).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.tensors import DIM_INDEX, DIMS, Kind, TensorRole, layer_dims, tensor_roles
from kapla.workload.layer import Layer

ND = len(DIMS)
_FEW_COLUMNS = 1024  # loop columns (rows x loops) up to which Loops.factors works on every dim at once


def counts_by_dim(dims: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``(R, K, 8)``: each loop's count (``(R, K)`` columns over ``dims``) under its dim, 1 under the others."""
    return np.where(dims[:, :, None] == np.arange(ND), counts[:, :, None], 1)


@dataclass(frozen=True, eq=False)
class Loops:
    """Loop columns of one level: ``dims`` and ``counts``, both ``(R, K)`` int64."""

    dims: np.ndarray
    counts: np.ndarray

    @staticmethod
    def empty(rows: int) -> Loops:
        return Loops(np.zeros((rows, 0), np.int64), np.ones((rows, 0), np.int64))

    def factors(self) -> np.ndarray:
        """``(R, 8)`` product of the counts per dimension."""
        if self.dims.size <= _FEW_COLUMNS:
            # few loops: all at once (a loop per column costs a numpy call each)
            return np.prod(counts_by_dim(self.dims, self.counts), axis=1)
        out = np.ones((self.dims.shape[0], ND), dtype=np.int64)
        rows = np.arange(out.shape[0])
        for k in range(self.dims.shape[1]):  # one loop per row and column: plain fancy indexing is exact
            d = self.dims[:, k]
            out[rows, d] = out[rows, d] * self.counts[:, k]
        return out

    def take(self, rows: np.ndarray) -> Loops:
        return Loops(self.dims[rows], self.counts[rows])


@dataclass(frozen=True, eq=False)
class Stacks:
    """Spatial loops of one level, as declared (innermost first): dims, rows and
    columns of units each spans, ``(F, S)`` int64."""

    dims: np.ndarray
    rows: np.ndarray
    cols: np.ndarray

    @property
    def counts(self) -> np.ndarray:
        return self.rows * self.cols

    def loops(self) -> Loops:
        return Loops(self.dims, self.counts)

    def grid(self) -> tuple[np.ndarray, np.ndarray]:
        """``(F,)`` rows and columns of units the stacks occupy."""
        return np.prod(self.rows, axis=1), np.prod(self.cols, axis=1)


@dataclass(frozen=True, eq=False)
class Nests:
    """``M`` loop nests of one layer at one batch (see the module docstring).

    ``unit`` ``(F, 8)``: the block one PE works through (the level-0 block);
    ``stacks`` / ``updates``: per on-chip level, innermost level first;
    ``shr``: per level, buffer-sharing factor per kind ``(F,)`` (absent: 1);
    ``bypass``: per level, tensors the scheme streams through without storing
    there (besides those the hardware level does not hold); ``rows`` ``(M,)``.
    """

    layer: Layer
    batch: int
    unit: np.ndarray
    stacks: tuple[Stacks, ...]
    updates: tuple[Loops, ...]
    shr: tuple[Mapping[Kind, np.ndarray], ...]
    rows: np.ndarray
    bypass: tuple[frozenset[Kind], ...] = ()
    ifm_name: str | None = None
    level_names: tuple[str, ...] = ()
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.bypass:
            object.__setattr__(self, "bypass", tuple(frozenset() for _ in self.stacks))

    # ------------------------------------------------------------ shape

    @property
    def levels(self) -> int:
        """On-chip levels."""
        return len(self.stacks)

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    @property
    def combos(self) -> int:
        return int(self.unit.shape[0])

    @cached_property
    def full(self) -> np.ndarray:
        """``(8,)`` the layer's extent of every loop dimension."""
        dims = layer_dims(self.layer, self.batch)
        return np.array([dims[d] for d in DIMS], dtype=np.int64)

    @cached_property
    def roles(self) -> tuple[TensorRole, ...]:
        return tensor_roles(self.layer, self.ifm_name)

    @cached_property
    def ops(self) -> int:
        """MACs (or pooling / element-wise / vector operations) of the layer."""
        return self.layer.ops * self.batch

    # ------------------------------------------------------------ factors (F rows)

    @cached_property
    def spatial(self) -> tuple[np.ndarray, ...]:
        """Per level, ``(F, 8)`` product of its stack counts per dimension."""
        return tuple(st.loops().factors() for st in self.stacks)

    @cached_property
    def temporal(self) -> tuple[np.ndarray, ...]:
        """Per level, ``(F, 8)`` product of its update counts per dimension."""
        out = []
        first = self.first_rows
        for up in self.updates:
            out.append(up.take(first).factors())
        return tuple(out)

    @cached_property
    def first_rows(self) -> np.ndarray:
        """For each factor combination, one candidate using it (its loop counts
        are the combination's; every candidate of a combination shares them)."""
        first = np.zeros(self.combos, dtype=np.int64)
        first[self.rows[::-1]] = np.arange(len(self) - 1, -1, -1)
        return first

    @cached_property
    def parallelism(self) -> tuple[np.ndarray, ...]:
        """Per level, ``(F,)`` units its stacks use inside one parent unit."""
        return tuple(np.prod(st.counts, axis=1) for st in self.stacks)

    def units(self, level: int) -> np.ndarray:
        """``(F,)`` units of ``level`` in use on the whole block of hardware
        (the DRAM level, ``levels``, is one)."""
        out = np.ones(self.combos, dtype=np.int64)
        for p in self.parallelism[level:]:
            out = out * p
        return out

    @cached_property
    def nominal_tiles(self) -> tuple[np.ndarray, ...]:
        """``(F, 8)`` block of each level as the loops lay it out (index ``levels``:
        what the whole nest spans); loops advance by it."""
        tiles = [self.unit]
        for s, t in zip(self.spatial, self.temporal, strict=True):
            tiles.append(tiles[-1] * s * t)
        return tuple(tiles)

    @cached_property
    def tiles(self) -> tuple[np.ndarray, ...]:
        """The largest block of the layer one unit of each level holds: the
        nominal block clipped to the layer (a last, partial block is smaller)."""
        return tuple(np.minimum(t, self.full) for t in self.nominal_tiles)

    @cached_property
    def trips(self) -> np.ndarray:
        """``(F,)`` sequential steps: the unit's own work times every update."""
        out = np.prod(self.unit, axis=1)
        for t in self.temporal:
            out = out * np.prod(t, axis=1)
        return out

    def group(self, child: int, upto: int) -> np.ndarray:
        """``(F, 8)`` what the units of ``child`` (-1: single operands) inside one
        unit of level ``upto`` hold together at one step: the child block times
        the stacks in between, never more of a dimension than the layer has."""
        key = ("group", child, upto)
        if key not in self._cache:
            block = self.tiles[child] if child >= 0 else np.ones_like(self.unit)
            for s in self.spatial[max(child, 0):upto]:
                block = block * s
            self._cache[key] = np.minimum(block, self.full)
        return self._cache[key]

    # ------------------------------------------------------------ loops (M rows)

    def temporal_above(self, level: int) -> np.ndarray:
        """``(F, 8)`` product of the update counts of ``level`` and every level
        above it, per dimension: what the loops enclosing the level multiply to, per
        factor combination (whatever their order)."""
        key = ("temporal above", level)
        if key not in self._cache:
            out = np.ones_like(self.unit)
            for t in self.temporal[level:]:
                out = out * t
            self._cache[key] = out
        return self._cache[key]

    def dim_loops(self, cands: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Every loop of the nest, innermost first as the blocks are laid out
        (per level its stacks, then its updates innermost first), as ``(M, L)``
        dims and counts, and a label per column (``cands``: those candidates only)."""
        cands = np.arange(len(self)) if cands is None else cands
        rows = self.rows[cands]
        dims, counts, labels = [], [], []
        for i in range(self.levels):
            st = self.stacks[i]
            name = self.level_names[i] if self.level_names else f"level {i}"
            dims.append(st.dims[rows])
            counts.append(st.counts[rows])
            labels += [f"{name} stack"] * st.dims.shape[1]
            up = self.updates[i]
            dims.append(up.dims[cands, ::-1])
            counts.append(up.counts[cands, ::-1])
            labels += [f"{name} update"] * up.dims.shape[1]
        if not labels:
            return np.zeros((len(cands), 0), np.int64), np.zeros((len(cands), 0), np.int64), []
        return np.concatenate(dims, axis=1), np.concatenate(counts, axis=1), labels

    @cached_property
    def order_free(self) -> bool:
        """Whether every candidate's updates loop over each dimension at most
        once per level: then a candidate's blocks, and whether they cover the
        layer, depend on its factor combination and not on its loop orders."""
        for up in self.updates:
            if up.dims.shape[1] < 2:
                continue
            bits = np.where(up.counts > 1, np.left_shift(1, up.dims), 0)
            if np.any(np.bitwise_or.reduce(bits, axis=1) != bits.sum(axis=1)):
                return False
        return True

    # ------------------------------------------------------------ subsets

    def take(self, idx: np.ndarray) -> Nests:
        """These candidates (their factor combinations kept as they are)."""
        idx = np.asarray(idx, dtype=np.int64)
        return Nests(self.layer, self.batch, self.unit, self.stacks,
                     tuple(up.take(idx) for up in self.updates), self.shr, self.rows[idx], self.bypass,
                     self.ifm_name, self.level_names)


def from_schemes(schemes: Sequence[LayerScheme]) -> Nests:
    """Schemes of one layer and batch (with the same levels) as a batch of nests."""
    first = schemes[0]
    n = len(first.levels)
    M = len(schemes)
    unit = np.array([[dict(s.unit).get(d, 1) for d in DIMS] for s in schemes], dtype=np.int64).reshape(M, ND)
    stacks, updates, shr = [], [], []
    kinds = set()
    for i in range(n):
        width = max(len(s.levels[i].stacks) for s in schemes)
        sd = np.zeros((M, width), np.int64)
        sr = np.ones((M, width), np.int64)
        sc = np.ones((M, width), np.int64)
        loops = max(len(s.levels[i].updates) for s in schemes)
        ud = np.zeros((M, loops), np.int64)
        uc = np.ones((M, loops), np.int64)
        share: dict[Kind, np.ndarray] = {}
        for m, s in enumerate(schemes):
            lvl = s.levels[i]
            for k, st in enumerate(lvl.stacks):
                sd[m, k], sr[m, k], sc[m, k] = DIM_INDEX[st.dim], st.rows, st.cols
            # pad on the outside: loops of count 1 change nothing wherever they are
            pad = loops - len(lvl.updates)
            for k, lp in enumerate(lvl.updates):
                ud[m, pad + k], uc[m, pad + k] = DIM_INDEX[lp.dim], lp.count
            for kind, n_shr in lvl.shr:
                share.setdefault(kind, np.ones(M, np.int64))[m] = n_shr
                kinds.add(kind)
        stacks.append(Stacks(sd, sr, sc))
        updates.append(Loops(ud, uc))
        shr.append(share)
    bypass = tuple(frozenset(first.levels[i].bypass) for i in range(n))
    return Nests(first.layer, first.batch, unit, tuple(stacks), tuple(updates), tuple(shr),
                 np.arange(M, dtype=np.int64), bypass, first.ifm_name, tuple(lvl.level for lvl in first.levels))


def constant_stacks(stacks: Sequence[tuple[str, int, int]], rows: int) -> Stacks:
    """The same ``(dim, rows, cols)`` stacks for ``rows`` factor combinations."""
    k = len(stacks)
    dims = np.array([[DIM_INDEX[d] for d, _, _ in stacks]] * rows, dtype=np.int64).reshape(rows, k)
    r = np.array([[a for _, a, _ in stacks]] * rows, dtype=np.int64).reshape(rows, k)
    c = np.array([[b for _, _, b in stacks]] * rows, dtype=np.int64).reshape(rows, k)
    return Stacks(dims, r, c)


__all__ = ["Loops", "Nests", "Stacks", "constant_stacks", "counts_by_dim", "from_schemes"]
