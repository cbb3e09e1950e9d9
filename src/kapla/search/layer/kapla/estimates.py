"""KAPLA's analytic estimates of frames and register blocks (Sec. IV-C), over any hierarchy.

A frame is never blocked to be ranked. Its estimate is

* **on chip**: the data each PE and each node must receive at least once
  (array bus, the node buffer), and the layer's compute steps of static energy
  (:func:`on_chip`);
* **DRAM**: the cheapest DRAM and NoC traffic of a small family of analytic
  blockings of the two outer levels (:func:`dram`). Each member keeps one tensor
  resident in the node buffer (its irrelevant loops innermost, over the
  smallest blocks) and splits that tensor's own dimensions over the DRAM-level
  loops by one of a few counts; it is costed as the cost model counts DRAM
  reads and writes, NoC hops and buffer-sharing rotation, and must fit the
  node buffer. DRAM energy dominates large layers, so a frame ranks mostly by
  how little it must re-fetch;
* **register-aware** (:func:`regf`): the same kind of family one level down,
  in place of the on-chip bound (which assumes registers that hold a PE's
  whole block).

A deeper hierarchy is seen through its two ends: level 0 (the PEs, with every
stack of the levels between them and the node level) and the node level (the
outermost on-chip level, under DRAM). The estimates only order frames and
register blocks; every scheme is costed by the cost model before it can win.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kapla.arch.spec import ArchSpec
from kapla.dataflow.mapping import STREAMED_DIMS
from kapla.dataflow.tensors import DIM_INDEX, DIMS, RELEVANT, Kind, TensorRole, layer_dims, tensor_roles
from kapla.model.hardware import channel_distance, hardware, word_energy
from kapla.model.rules import fits
from kapla.space.layer.frames import Frame, level_choices, unit_rows
from kapla.space.layer.skeletons import divisors
from kapla.space.layer.unroll import Spatial
from kapla.workload.layer import Layer

ND = len(DIMS)
_SPLITS = (0.0, 1 / 3, 2 / 3, 1.0)  # loop counts tried per dim: 1, about the cube root, its square, all
_UNFIT_PENALTY = 4  # a frame no analytic blocking fits ranks behind every one that fits, by this factor
_FILTER = (DIM_INDEX["S"], DIM_INDEX["R"])
_MERGED_GRID = 1 << 16  # grid cells (rows times splits) up to which every pattern goes in one family call
_ROW_FIELDS = ("rest", "mu", "s0", "in0", "s1", "dist", "nodes", "pes", "trips", "below", "units")


@dataclass
class FrameArrays:
    """The numbers of many frames of one layer, one row each (loop dims in :data:`DIMS` order)."""

    layer: Layer
    full: np.ndarray  # (8,) layer extents
    rest: np.ndarray  # (S, 8) what blocking covers
    mu: np.ndarray  # (S, 8) the PE mapping's unit block
    s0: np.ndarray  # (S, 8) stacks below the node level (the PE array, and any level between)
    in0: np.ndarray  # (S, 8) the mapping's innermost loops
    s1: np.ndarray  # (S, 8) node stacks
    shr: dict  # Kind -> (S,) sharing
    dist: np.ndarray
    nodes: np.ndarray
    pes: np.ndarray
    trips: np.ndarray
    choices: np.ndarray  # (S, 8, len(_SPLITS)) DRAM-level loop counts tried per dim
    below: np.ndarray  # (S, M, 8) per level between the PEs and the node level: the stacks below it
    units: np.ndarray  # (S, M) per such level: its units per node

    def take(self, idx) -> FrameArrays:
        """These rows (repeats allowed)."""
        idx = np.asarray(idx, dtype=np.int64)
        rows = {f: getattr(self, f)[idx] for f in _ROW_FIELDS + ("choices",)}
        return FrameArrays(self.layer, self.full, shr={k: v[idx] for k, v in self.shr.items()}, **rows)

    def with_units(self, blocks: np.ndarray) -> FrameArrays:
        """These rows (one per register block) with each register block
        (``blocks``, ``(F, 8)`` factors) folded into the mapping's unit."""
        rest = self.rest // blocks
        values, where = np.unique(rest, return_inverse=True)
        table = np.array([_split_choices(int(n)) for n in values], dtype=np.int64)
        fields = {f: getattr(self, f) for f in _ROW_FIELDS}
        fields.update(rest=rest, mu=self.mu * blocks)
        return FrameArrays(self.layer, self.full, shr=self.shr, choices=table[where.reshape(rest.shape)], **fields)


def frame_arrays(frames: Sequence[Frame], arch: ArchSpec) -> FrameArrays:
    """The rows of ``frames`` (of one layer) for the estimates."""
    layer, batch = frames[0].layer, frames[0].batch
    full = np.array([layer_dims(layer, batch)[d] for d in DIMS], dtype=np.int64)
    rows: dict = {}  # a row's index in ``unique``
    unique: list[Frame] = []
    which = np.empty(len(frames), dtype=np.int64)
    shr = {k: np.ones(len(frames), dtype=np.int64) for k in Kind}
    for i, f in enumerate(frames):
        for k, n in f.shr:
            shr[k][i] = n
        # by identity: the sharing choices of one spatial choice share its tuple
        key = (id(f.spatial), f.rest)
        at = rows.get(key)
        if at is None:
            at = rows[key] = len(unique)
            unique.append(f)
        which[i] = at
    rest, mu, s0, in0, s1, dist, nodes, pes, trips, choices, below, units = _rows(unique, arch)
    M = below.shape[1]
    return FrameArrays(layer, full, rest[which], mu[which], s0[which], in0[which], s1[which], shr, dist[which],
                       nodes[which], pes[which], trips[which], choices[which],
                       below[which].reshape(len(frames), M, ND), units[which].reshape(len(frames), M))


def _rows(frames: Sequence[Frame], arch: ArchSpec) -> tuple[np.ndarray, ...]:
    """The numbers of each of ``frames`` (one spatial choice and rest each), as arrays:
    each level's choices are few and shared by many frames, so their factors are
    looked up per level and multiplied across levels for all frames at once."""
    levels = len(frames[0].spatial)
    node = levels - 1 if levels >= 2 else None
    # per level: each frame's choice, as an index into that level's table of distinct choices
    picks, tables = level_choices([f.spatial for f in frames])
    vectors = [_choice_vectors(table) for table in tables]  # per level: unit, stacks, inner, grid, count
    ones = np.ones((len(frames), ND), dtype=np.int64)
    mu = vectors[0][0][picks[:, 0]]
    s0, in0, s1 = ones, ones, ones
    for level in range(levels):
        _, stacks, inner, _, _ = vectors[level]
        if level == node:
            s1 = stacks[picks[:, level]]
        else:
            s0 = s0 * stacks[picks[:, level]]
            in0 = in0 * inner[picks[:, level]]
    # the chip's mean distance to DRAM from a block of nodes, per grid of nodes used
    if node is None:
        grids = [(1, 1)]
        grid_of = np.zeros(len(frames), dtype=np.int64)
    else:
        grids = [tuple(g) for g in vectors[node][3].tolist()]
        grid_of = picks[:, node]
    by_grid: dict[tuple[int, int], float] = {}
    for g in grids:
        if g not in by_grid:
            by_grid[g] = channel_distance(arch, g) if arch.node_level is not None else 0.0
    dist = np.array([by_grid[g] for g in grids], dtype=float)[grid_of]
    rest = np.array([f.rest for f in frames], dtype=np.int64).reshape(len(frames), ND)
    table = {r: [_split_choices(n) for n in r] for r in dict.fromkeys(f.rest for f in frames)}
    choices = np.array([table[f.rest] for f in frames], dtype=np.int64)
    # the levels between the PEs and the node level: the stacks below each, its units per node
    between = range(1, levels - 1)
    below = np.ones((len(frames), len(between), ND), dtype=np.int64)
    units = np.ones((len(frames), len(between)), dtype=np.int64)
    acc = ones
    for level in range(levels - 1):
        if level:
            below[:, level - 1] = acc
            for k in range(level, levels - 1):
                units[:, level - 1] = units[:, level - 1] * vectors[k][4][picks[:, k]]
        acc = acc * vectors[level][1][picks[:, level]]
    trips = np.prod(mu, axis=1) * np.prod(in0, axis=1) * np.prod(rest, axis=1)
    return (rest, mu, s0, in0, s1, dist, np.prod(s1, axis=1).astype(float), np.prod(s0, axis=1).astype(float),
            trips.astype(float), choices, below, units.astype(float))


def _choice_vectors(table: Sequence[Spatial]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per spatial choice of one level: its unit block, stacks and innermost loops
    as per-dim factors (DIMS order), its grid of units (rows, columns) and the
    units its stacks use. A level has hundreds of choices: their stacks are
    multiplied in all at once, read off the stacks themselves (not each
    choice's cached lists: most choices are never descended)."""
    n = len(table)
    flat = [(k, DIM_INDEX[st.dim], st.rows, st.cols) for k, sp in enumerate(table) for st in sp.stacks]
    at, dims, rows, cols = np.array(flat, dtype=np.int64).reshape(len(flat), 4).T
    units = rows * cols
    stacks = np.ones((n, ND), dtype=np.int64)
    grid = np.ones((n, 2), dtype=np.int64)
    count = np.ones(n, dtype=np.int64)
    np.multiply.at(stacks, (at, dims), units)
    np.multiply.at(grid[:, 0], at, rows)
    np.multiply.at(grid[:, 1], at, cols)
    np.multiply.at(count, at, units)
    inner = np.ones((n, ND), dtype=np.int64)
    loops = [(k, DIM_INDEX[lp.dim], lp.count) for k, sp in enumerate(table) for lp in sp.inner]
    if loops:
        at, dims, counts = np.array(loops, dtype=np.int64).T
        np.multiply.at(inner, (at, dims), counts)
    return unit_rows(table), stacks, inner, grid, count


@functools.lru_cache(maxsize=4096)
def _split_choices(n: int) -> tuple[int, ...]:
    """The DRAM-level loop counts tried for a dim with ``n`` left (:data:`_SPLITS`)."""
    divs = divisors(n)
    return tuple(min(divs, key=lambda v: (abs(math.log(v) - f * math.log(n)), v)) for f in _SPLITS)


def faithful(arch: ArchSpec) -> bool:
    """Whether the estimates see the whole hierarchy: registers under one node
    level under DRAM, each holding every tensor (deeper ones are seen through
    their two ends, tensors bypassing a level as if they did not)."""
    hw = hardware(arch)
    return len(arch.levels) <= 3 and all(len(level.holds) == len(Kind) for level in hw.levels[:-1])


def _node(arch: ArchSpec) -> int:
    """The node level's index (the outermost on-chip level; DRAM's on a one-level chip)."""
    return max(len(arch.levels) - 2, 1)


def estimates(arr: FrameArrays, arch: ArchSpec) -> np.ndarray:
    """Each frame's estimate: :func:`on_chip` plus :func:`dram`."""
    return on_chip(arr, arch) + dram(arr, arch)


def on_chip(arr: FrameArrays, arch: ArchSpec) -> np.ndarray:
    """Each PE and each node must load the data its block touches at least
    once, and the layer takes at least its compute steps of static energy.
    MAC and register energy are the same for every frame."""
    layer = arr.layer
    pe_span = arr.mu * arr.in0 * arr.rest
    node_span = pe_span * arr.s0
    fp_pe = footprints(pe_span, layer)
    fp_node = footprints(node_span, layer)
    systolic = arch.levels[0].same_level_transfer
    itcn = np.zeros(len(arr.rest))
    gbuf = np.zeros(len(arr.rest))
    for r in tensor_roles(layer):
        per_node = fp_node[r.kind] * r.copies
        itcn += (per_node if systolic else fp_pe[r.kind] * r.copies * arr.pes) * arr.nodes
        gbuf += per_node * arr.nodes
    energy = itcn * arch.bus_energy + gbuf * word_energy(arch, _node(arch)) + arr.trips * arch.static_energy
    # each unit of a level between them loads what its block touches at least once too
    hw = hardware(arch)
    for m in range(arr.below.shape[1]):
        level = hw.levels[m + 1]
        fp = footprints(pe_span * arr.below[:, m], layer)
        for r in tensor_roles(layer):
            if r.kind in level.holds:
                energy = energy + fp[r.kind] * r.copies * arr.units[:, m] * arr.nodes * level.read[r.kind]
    return energy


def _role_energy(role: TensorRole, fp_node: np.ndarray, fp_pe: np.ndarray, reload: np.ndarray,
                 distinct: np.ndarray, nodes: np.ndarray, node_pes: np.ndarray, arch: ArchSpec) -> np.ndarray:
    """On-chip energy of one tensor role below the node buffer, for :func:`regf`:
    its node and PE blocks (``fp_node``, ``fp_pe`` words) fetched ``reload``
    times (written blocks: read back all but the ``distinct`` first times); on
    a systolic array the node buffer feeds the array's edge and neighbours pass
    the rest on, else every PE is fed over the bus.

    The grids are large and the terms few: each step of the plain expression
    is worked out in place where its shape allows, in the same order (the same bits)."""
    group = _times(_copies(fp_node * reload, role.copies), nodes)
    pe = _times(_copies(fp_pe * reload, role.copies), node_pes)
    if role.written:
        group = _minus(_times(group, 2), _times(_copies(fp_node * distinct, role.copies), nodes))
        pe = _minus(_times(pe, 2), _times(_copies(fp_pe * distinct, role.copies), node_pes))
    e_node = word_energy(arch, _node(arch))
    if arch.levels[0].same_level_transfer:
        regf_ = np.maximum(pe - group, 0)
        total = _plus(group * e_node, _times(group, arch.bus_energy))
        return _plus(total, _times(regf_, word_energy(arch, 0)))
    # no register term: adding a zero changes no sum of non-negative terms
    return _plus(_times(group, e_node), _times(pe, arch.bus_energy))


def _copies(words: np.ndarray, copies: int) -> np.ndarray:
    """``words * copies`` (fresh integers: in place; times one, the same)."""
    if copies != 1:
        words *= copies
    return words


_IN_PLACE = 4096  # elements from which a grid is worth working out in place (below, a new array costs less)


def _fills(a, b) -> bool:
    """Whether ``a`` is a float array of the shape of ``a`` combined with ``b``."""
    if not (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.size >= _IN_PLACE):
        return False
    shape = np.shape(b)
    return len(shape) <= a.ndim and all(m in (1, n) for n, m in zip(a.shape[a.ndim - len(shape):], shape, strict=True))


def _times(a: np.ndarray, b) -> np.ndarray:
    """``a * b``, in ``a`` (a fresh array) where it can hold the result."""
    return np.multiply(a, b, out=a) if _fills(a, b) else a * b


def _plus(a: np.ndarray, b) -> np.ndarray:
    """``a + b``, in ``a`` (a fresh array) where it can hold the result."""
    return np.add(a, b, out=a) if _fills(a, b) else a + b


def _minus(a: np.ndarray, b) -> np.ndarray:
    """``a - b``, in ``a`` (a fresh array) where it can hold the result."""
    return np.subtract(a, b, out=a) if _fills(a, b) else a - b


def _fit(arch: ArchSpec, level: int, words: Mapping[Kind, np.ndarray | int]) -> np.ndarray:
    """Which blocks of ``words`` per tensor kind one unit of ``level`` holds
    (:func:`kapla.model.rules.fits`; tensors the level does not hold take no
    room), in a shape that broadcasts to the blocks'."""
    hw = hardware(arch)
    held = {k: w for k, w in words.items() if k in hw.levels[level].holds}
    return fits(held, hw, level) if held else np.ones((), dtype=bool)


def _add_words(words: dict, kind: Kind, value) -> None:
    words[kind] = words[kind] + value if kind in words else value


def regf(arr: FrameArrays, arch: ArchSpec) -> np.ndarray:
    """The cheapest array-bus and node-buffer traffic of a family of analytic
    register-level blockings, per frame (the :func:`dram` family one level
    down): for each tensor ``T`` kept in the registers, the register block
    holds one of a few splits of ``T``'s own dims and the smallest block of the
    others, whose loops run innermost (inside them, the mapping's own loops).
    A tensor is re-fetched by every loop outside its innermost relevant one;
    outputs write back and re-read their partial sums. Blocks that overflow
    the registers are dropped (inf if all do)."""
    # frames that differ only at the node level (its sharing, its partition where the
    # PEs are left the same) have the same estimate here: each is worked out once
    if len(arr.rest) < 2:
        return _by_pattern(arr, lambda sub, varying: _regf_family(sub, arch, varying))
    distinct, where = _distinct_rows(arr, _REGF_FIELDS)
    return _by_pattern(arr.take(distinct), lambda sub, varying: _regf_family(sub, arch, varying))[where]


def regf_rows(arr: FrameArrays) -> tuple[np.ndarray, np.ndarray]:
    """Frames with the same :func:`regf` (they differ only at the node level):
    one frame of each kind, and which kind each frame is (:func:`_distinct_rows`)."""
    return _distinct_rows(arr, _REGF_FIELDS)


def regf_floor(arr: FrameArrays, arch: ArchSpec) -> np.ndarray:
    """A lower bound of :func:`regf` per frame, cheap enough for every frame:
    each tensor crossing the array bus and read from the node buffer once.

    Every member of :func:`regf`'s family loops over all of a PE's block and
    of its node's (clipped to the layer), and re-fetches a tensor's register
    and node blocks at least the product of its relevant loops' counts (a
    written one: twice its re-fetches less its distinct blocks, no fewer); a
    footprint grows at most in proportion to its block (a window's span
    included), so those re-fetches move at least the footprint of the whole
    block. The bound is lowered by a relative 1e-9 so that rounding never
    lifts it above the value it bounds."""
    layer = arr.layer
    pe_span = np.minimum(arr.mu * arr.in0 * arr.rest, arr.full)
    node_span = np.minimum(arr.mu * arr.in0 * arr.rest * arr.s0, arr.full)
    fp_pe, fp_node = footprints(pe_span, layer), footprints(node_span, layer)
    systolic = arch.levels[0].same_level_transfer
    e_node = word_energy(arch, _node(arch))
    total = np.zeros(len(arr.rest))
    for r in tensor_roles(layer):
        group = fp_node[r.kind] * r.copies * arr.nodes
        bus = group if systolic else fp_pe[r.kind] * r.copies * arr.nodes * arr.pes
        total += group * e_node + bus * arch.bus_energy
    return total * (1 - 1e-9)


#: What :func:`_regf_family` reads of a frame's row (with the layer's extents).
_REGF_FIELDS = ("rest", "mu", "s0", "in0", "nodes", "pes", "choices")


def _distinct_rows(arr: FrameArrays, fields: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """One row of ``arr`` per distinct value of ``fields`` (their bits), in order of
    first appearance, and which of those each row is: ``arr.take(first)[where]``
    has every row's values."""
    key = np.concatenate([np.ascontiguousarray(getattr(arr, f)).reshape(len(arr.rest), -1).view(np.int64)
                          for f in fields], axis=1)
    # a dict of the rows' bytes: far cheaper than sorting rows this wide
    raw, width = key.tobytes(), key.shape[1] * key.itemsize
    seen: dict[bytes, int] = {}
    where = np.array([seen.setdefault(raw[a:a + width], len(seen)) for a in range(0, len(raw), width)],
                     dtype=np.int64)
    first = np.zeros(len(seen), dtype=np.int64)
    first[where[::-1]] = np.arange(len(where) - 1, -1, -1)
    return first, where


def _regf_family(arr: FrameArrays, arch: ArchSpec, varying: list[int]) -> np.ndarray:
    """:func:`regf` of rows that loop over the same dims (``varying``)."""
    layer = arr.layer
    roles = tensor_roles(layer)
    S = len(arr.rest)
    in_dims = [i for i in range(ND) if np.any(arr.in0[:, i] > 1)]
    best = np.full(S, np.inf)
    tabs = _count_tables(arr, arr.mu, arr.s0)
    windows: dict[tuple[int, int], tuple] = {}
    for T in dict.fromkeys(r.kind for r in roles):
        # a filter a relaxed mapping leaves to blocking loops whole above the registers
        fam = _Family(arr, T, varying, looped=_FILTER)
        row = fam.row
        at = fam.filter_counts()
        if at not in windows:
            windows[at] = _window_tables(tabs, layer, at)
        picked, fp_c, fp_g = fam.footprints(tabs, windows[at])
        c0 = [e[0] for e in picked]
        held = _held_extents(c0, arch)
        fp_held = fp_c if held is c0 else footprints_of(held, layer)
        words: dict = {}
        for r in roles:
            _add_words(words, r.kind, fp_held[r.kind] * r.copies)
        # loops outermost first: T's dims, the others, then the mapping's inner loops
        loop_counts = [fam.counts[j] for j in fam.outer + fam.inner] + [row(arr.in0[:, i]) for i in in_dims]
        loop_dims = [DIMS[j] for j in fam.outer + fam.inner] + [DIMS[i] for i in in_dims]
        cum = _running_products(loop_counts)
        nodes, node_pes = row(arr.nodes), row(arr.nodes * arr.pes)
        energy = np.zeros(fam.shape)
        for r in roles:
            rel = [d in RELEVANT[r.kind] for d in loop_dims]
            distinct = _grid_product([c for c, flag in zip(loop_counts, rel, strict=True) if flag])
            energy += _role_energy(r, fp_g[r.kind], fp_c[r.kind], _grid_reloads(loop_counts, cum, rel), distinct,
                                   nodes, node_pes, arch)
        np.copyto(energy, np.inf, where=~_fit(arch, 0, words))
        best = np.minimum(best, energy.reshape(S, -1).min(axis=1))
    return best


def _held_extents(extents: list, arch: ArchSpec) -> list:
    """The register block's extents a PE holds (:func:`kapla.model.rules.streamed_window`
    under counting ``regf_holds: window``)."""
    if not arch.counting.streams_rows:
        return extents
    held = list(extents)
    for d in STREAMED_DIMS:
        held[DIM_INDEX[d]] = np.ones_like(held[DIM_INDEX[d]])
    return held


def _by_pattern(arr: FrameArrays, family) -> np.ndarray:
    """``family(rows, varying)`` of the rows of ``arr`` grouped by the dims they
    still loop over (``varying``: more than one step left), scattered back: a
    family's grid has an axis per varying dim, so one row that strips a dim
    (a relaxed mapping) would otherwise multiply the grid of every row by a
    dim along which the others have nothing to split."""
    masks = (arr.rest > 1) @ (1 << np.arange(ND, dtype=np.int64))  # the looping dims as bits
    patterns, where = np.unique(masks, return_inverse=True)
    where = where.reshape(-1)
    union = int(np.bitwise_or.reduce(patterns))
    if len(patterns) == 1 or len(arr.rest) * len(_SPLITS) ** union.bit_count() <= _MERGED_GRID:
        # a row looping over fewer dims than the union has one count, 1, on each
        # other dim's axis: the same value, and on a small grid one call costs
        # less than one per pattern (a family call is a few hundred numpy calls)
        return family(arr, [j for j in range(ND) if union >> j & 1])
    out = np.empty(len(arr.rest))
    for p, pattern in enumerate(patterns.tolist()):
        idx = np.flatnonzero(where == p)
        out[idx] = family(arr.take(idx), [j for j in range(ND) if pattern >> j & 1])
    return out


class _Family:
    """The loop counts above the buffer of a family keeping ``T`` resident:
    ``T``'s own varying dims (``outer``) split by each combination of
    :data:`_SPLITS`, the others (``inner``) looping over all that is left;
    ``held`` dims do not loop (the buffer holds all that is left of them),
    ``looped`` ones are never split (all that is left of them loops).

    The combinations are the axes of a grid ``shape`` = ``(S, K, ..., K)``
    (``K`` = ``len(_SPLITS)``, one axis per outer dim, the last varying
    fastest when flattened: ``itertools.product`` order); every number that
    depends on one dim's count lives on that dim's axis (broadcastable arrays)
    and is only spread over the whole grid when combined with the others."""

    def __init__(self, arr: FrameArrays, T: Kind, varying: list[int], held: tuple[int, ...] = (),
                 looped: tuple[int, ...] = ()) -> None:
        S = len(arr.rest)
        self.outer = [j for j in varying if DIMS[j] in RELEVANT[T] and j not in held + looped]
        self.inner = [j for j in varying if (DIMS[j] not in RELEVANT[T] or j in looped) and j not in held]
        n, K = len(self.outer), len(_SPLITS)
        self.S = S
        self.shape = (S,) + (K,) * n
        self._ones = (1,) * n
        self.counts: dict[int, np.ndarray] = {}  # loop dim -> its loop count, on the grid
        self._axis: dict[int, tuple[int, ...]] = {}  # an outer dim's shape on the grid
        for a, j in enumerate(self.outer):
            self._axis[j] = (S,) + tuple(K if b == a else 1 for b in range(n))
            self.counts[j] = arr.choices[:, j, :].reshape(self._axis[j])
        for j in self.inner:
            self.counts[j] = self.row(arr.rest[:, j])

    def row(self, values: np.ndarray) -> np.ndarray:
        """Per-frame values ``(S,)`` on the grid."""
        return values.reshape((self.S,) + self._ones)

    def _count_index(self, j: int) -> int:
        # a dim not split here loops over all that is left (the last count) or not at all (the first, 1)
        return len(_SPLITS) - 1 if j in self.counts else 0

    def _place(self, j: int, values: np.ndarray) -> np.ndarray:
        """Dim ``j``'s values ``(..., S, K)``, one per count of ``arr.choices``, on the grid
        (after any leading axes): all of them along an outer dim's axis, else the one of
        the dim's single count."""
        lead = values.shape[:-2]
        if j in self._axis:
            return values.reshape(lead + self._axis[j])
        return values[..., self._count_index(j)].reshape(lead + (self.S,) + self._ones)

    def pick(self, table: np.ndarray) -> list[np.ndarray]:
        """Per loop dim, its values of ``table`` ``(..., S, 8, K)`` (:func:`_count_tables`) on the grid."""
        return [self._place(j, table[..., j, :]) for j in range(ND)]

    def footprints(self, tables: np.ndarray, windows: tuple[np.ndarray, np.ndarray]
                   ) -> tuple[list[np.ndarray], dict[Kind, np.ndarray], dict[Kind, np.ndarray]]:
        """The blocks' extents on the grid (stacked: node blocks first), and the
        footprints of the node and group blocks (:func:`_count_tables`, with their
        :func:`_window_tables`), both worked out as one stack: a family is a few
        hundred numpy calls on small grids."""
        picked = self.pick(tables)
        both = _footprint_products(picked, *self.pick_windows(windows))
        return picked, {k: v[0] for k, v in both.items()}, {k: v[1] for k, v in both.items()}

    def pick_windows(self, tables: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The rows and columns of input a block spans (:func:`_window_tables`) on the grid."""
        return self._place(DIM_INDEX["Y"], tables[0]), self._place(DIM_INDEX["X"], tables[1])

    def filter_counts(self) -> tuple[int, int]:
        """The count index of each filter dim (S, R): never split here."""
        assert not any(j in self._axis for j in _FILTER)
        return self._count_index(_FILTER[0]), self._count_index(_FILTER[1])


def _count_tables(arr: FrameArrays, base: np.ndarray, stacks: np.ndarray) -> np.ndarray:
    """Per row, loop dim and count of ``arr.choices``, ``(2, S, 8, K)``: the block
    ``base`` times what that many loops above leave, clipped to the layer, and
    that block ``stacks`` times over (clipped too). Every family of a call picks
    its blocks from these (:meth:`_Family.pick`): worked out once, not per family."""
    full = arr.full[None, :, None]
    own = np.minimum(base[:, :, None] * (arr.rest[:, :, None] // arr.choices), full)
    return np.stack((own, np.minimum(own * stacks[:, :, None], full)))


def _window_tables(table: np.ndarray, layer: Layer, counts: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """The rows and columns of input the blocks of ``table`` (:func:`_count_tables`)
    span, per row and count of their Y and X dims ``(S, K)``, under the filter
    extents (S, R) at ``counts`` (:meth:`_Family.filter_counts`); any leading axes kept."""
    y, x, s, r = (DIM_INDEX[d] for d in "YXSR")
    return _spans(table[..., y, :], table[..., s, counts[0]:counts[0] + 1], table[..., x, :],
                  table[..., r, counts[1]:counts[1] + 1], layer)


def _running_products(counts: list[np.ndarray]) -> list[np.ndarray]:
    """Products of the loop counts (outermost first) down to each loop."""
    out: list[np.ndarray] = []
    for c in counts:
        out.append(c if not out else out[-1] * c)
    return out


def _size(value) -> int:
    """``np.size(value)`` of an array or a Python number, without numpy's dispatch."""
    return value.size if isinstance(value, np.ndarray) else 1


def _grid_product(factors: list) -> np.ndarray:
    """The product of integer factors that broadcast together, the smallest
    multiplied first (integer products are exact in any order)."""
    factors = [f for f in factors if not (isinstance(f, int) and f == 1)]
    if len(factors) > 2:
        factors.sort(key=_size)
    if not factors:
        return np.ones((), dtype=np.int64)
    out = factors[0]
    for f in factors[1:]:
        out = out * f
    return out


def _grid_reloads(counts: list[np.ndarray], cum: list[np.ndarray], relevant: list[bool]):
    """How often a tensor is fetched through loops of ``counts`` (outermost first;
    ``cum`` their running products): the product of the counts down to its
    innermost looping relevant loop (``relevant``, per loop), 1 if none loops."""
    reload: np.ndarray | int = 1
    found = None  # where a loop further in already decided
    for i in range(len(counts) - 1, -1, -1):
        if not relevant[i]:
            continue
        if all(relevant[:i + 1]):
            # every loop out to here is relevant: where none further in loops,
            # the innermost looping one leaves only loops of count 1 up to here
            return cum[i] if found is None else np.where(found, reload, cum[i])
        looping = counts[i] > 1
        if not looping.any():
            continue
        if looping.all():
            return cum[i] if found is None else np.where(found, reload, cum[i])
        if found is None:
            reload, found = np.where(looping, cum[i], 1), looping
        else:
            looping = looping & ~found
            reload, found = np.where(looping, cum[i], reload), found | looping
    return reload


def dram(arr: FrameArrays, arch: ArchSpec, once: bool = False, unfit: float | None = None) -> np.ndarray:
    """The cheapest DRAM-level traffic of a family of analytic blockings, per frame
    (0 without a level between the registers and DRAM).

    For each tensor ``T`` kept resident, the node buffer holds the smallest
    blocks along the dimensions ``T`` does not index (their loops innermost)
    and ``T``'s own dimensions are split over the DRAM-level loops by 1, about
    the cube root, about its square, or all of what is left. A tensor is
    re-fetched by every loop outside its innermost relevant one; outputs read
    back their partial sums. The energy counts DRAM words, NoC hops to the
    nearest channel and buffer-sharing rotation, and the static energy of
    DRAM-bound time; blockings that overflow the node buffer are dropped.
    ``once``: less what fetching every tensor once would cost. A frame none
    of whose blockings fits gets ``unfit``, or by default a value that ranks
    it behind every frame of ``arr`` that fits.
    """
    if len(arch.levels) < 3:
        return np.zeros(len(arr.rest))
    best = _by_pattern(arr, lambda sub, varying: _dram_family(sub, arch, varying))
    if once:
        best = best - fetch_once(arr, arch)
    # a frame none of whose analytic blockings fits still gets ranked (last)
    finite = np.isfinite(best)
    if unfit is not None:
        return np.where(finite, best, unfit)
    if not finite.all():
        best = np.where(finite, best, (best[finite].max() if finite.any() else 0.0) * _UNFIT_PENALTY + 1.0)
    return best


def fetch_once(arr: FrameArrays, arch: ArchSpec) -> np.ndarray:
    """What fetching every tensor once costs at the DRAM level, per frame (the
    DRAM words, NoC hops and rotation, and static energy :func:`dram` counts for
    a blocking that re-fetches nothing): a lower bound of :func:`dram`'s
    finite values (0 without a level between the registers and DRAM)."""
    if len(arch.levels) < 3:
        return np.zeros(len(arr.rest))
    layer, S = arr.layer, len(arr.rest)
    full, s1, shr, dist, nodes, trips = arr.full, arr.s1, arr.shr, arr.dist, arr.nodes, arr.trips
    e_node = word_energy(arch, _node(arch))
    nom = arr.mu * arr.s0 * arr.in0 * arr.rest
    c1 = np.minimum(nom, full)
    g1 = np.minimum(c1 * s1, full)
    fps_c = footprints(c1, layer)
    fps_g = footprints(g1, layer)
    dram_ = np.zeros(S)
    noc = np.zeros(S)
    rot = np.zeros(S)
    for r in tensor_roles(layer):
        dram_ += fps_g[r.kind] * r.copies
        if r.written:
            noc += fps_g[r.kind] * r.copies * dist
        else:
            node_words = fps_c[r.kind] * r.copies * nodes
            noc += node_words / shr[r.kind] * dist
            rot += node_words * (shr[r.kind] - 1) / shr[r.kind]
    return (dram_ * word_energy(arch, -1) + (noc + rot) * arch.hop_energy + 2 * rot * e_node
            + np.maximum(dram_ / arch.dram_bandwidth_words - trips, 0) * arch.static_energy)


def _dram_family(arr: FrameArrays, arch: ArchSpec, varying: list[int]) -> np.ndarray:
    """The cheapest member of :func:`dram`'s family, of rows that loop over the same dims (``varying``)."""
    layer = arr.layer
    roles = tensor_roles(layer)
    S = len(arr.rest)
    node = _node(arch)
    s1, shr, dist, nodes, trips = arr.s1, arr.shr, arr.dist, arr.nodes, arr.trips
    base = arr.mu * arr.s0 * arr.in0  # nominal node block per step of the blocking factors
    best = np.full(S, np.inf)
    e_node, e_dram = word_energy(arch, node), word_energy(arch, -1)
    hop, bandwidth, static = arch.hop_energy, arch.dram_bandwidth_words, arch.static_energy
    with_noc = bool(dist.any())
    shared_kinds = {k for k, n in shr.items() if (n != 1).any()}
    tabs = _count_tables(arr, base, s1)
    windows: dict[tuple[int, int], tuple] = {}
    for T in dict.fromkeys(r.kind for r in roles):
        # a filter a relaxed mapping leaves to blocking is held whole in the node
        # buffer: splitting it too would multiply the family for little
        fam = _Family(arr, T, varying, _FILTER)
        row = fam.row
        at = fam.filter_counts()
        if at not in windows:
            windows[at] = _window_tables(tabs, layer, at)
        _, fps_c, fps_g = fam.footprints(tabs, windows[at])
        words: dict = {}  # whole words per kind (exact as integers)
        for r in roles:
            need = fps_c[r.kind]
            if r.kind in shared_kinds:
                need = -(-need // row(shr[r.kind]))
            _add_words(words, r.kind, need * r.copies if r.copies != 1 else need)
        # loop order: T's dims (outer) in DIMS order, then the others
        order = fam.outer + fam.inner
        tt = [fam.counts[j] for j in order]
        cum = _running_products(tt)
        # the sums below are those of the plain expressions, term by term, in
        # place (terms known to be zero everywhere are left out: adding them
        # changes no bit)
        dram_: np.ndarray = np.zeros(fam.shape)
        noc: np.ndarray = np.zeros(fam.shape)
        rot: np.ndarray = np.zeros(fam.shape)
        tmp = np.empty(fam.shape)
        with_rot = False
        node_n, dist_n = row(nodes), row(dist)
        for r in roles:
            rel = [DIMS[j] in RELEVANT[r.kind] for j in order]
            reload = _grid_reloads(tt, cum, rel)
            group_words = _grid_product([fps_g[r.kind], reload, r.copies])
            if r.written:
                distinct = _grid_product([c for c, flag in zip(tt, rel, strict=True) if flag])
                words_out = 2 * group_words - _grid_product([fps_g[r.kind], distinct, r.copies])
                dram_ += words_out
                if with_noc:
                    np.multiply(words_out, dist_n, out=tmp)
                    noc += tmp
            else:
                dram_ += group_words
                shared = r.kind in shared_kinds
                if not (with_noc or shared):
                    continue
                k_shr = row(shr[r.kind])
                node_words = np.multiply(_grid_product([fps_c[r.kind], reload, r.copies]), node_n, out=tmp)
                if with_noc:
                    noc += node_words / k_shr * dist_n if shared else node_words * dist_n
                if shared:
                    with_rot = True
                    np.multiply(node_words, k_shr - 1, out=tmp)
                    tmp /= k_shr
                    rot += tmp
        energy = dram_ * e_dram
        if with_noc or with_rot:
            np.add(noc, rot, out=tmp)
            tmp *= hop
            energy += tmp
        if with_rot:
            np.multiply(rot, 2, out=tmp)
            tmp *= e_node
            energy += tmp
        np.divide(dram_, bandwidth, out=tmp)
        tmp -= row(trips)
        np.maximum(tmp, 0, out=tmp)
        tmp *= static
        energy += tmp
        np.copyto(energy, np.inf, where=~_fit(arch, node, words))
        best = np.minimum(best, energy.reshape(S, -1).min(axis=1))
    return best


def _window(out, kernel, stride, dilation, whole):
    span = (out - 1) * stride + (kernel - 1) * dilation + 1
    return np.minimum(np.minimum(span, out * kernel), whole)


@functools.lru_cache(maxsize=1024)
def _whole_window(out: int, kernel: int, stride: int, dilation: int) -> int:
    from kapla.dataflow.tensors import window

    return window(out, kernel, stride, dilation)


def footprints(block: np.ndarray, layer: Layer) -> dict[Kind, np.ndarray]:
    """Elements of each kind blocks ``(..., 8)`` touch."""
    return footprints_of([block[..., i] for i in range(ND)], layer)


def footprints_of(extents, layer: Layer) -> dict[Kind, np.ndarray]:
    """Elements of each kind a block touches, from its extent per loop dim
    (:data:`DIMS` order; integer arrays that broadcast together)."""
    _, _, _, _, y, x, s, r = extents
    return _footprint_products(extents, *_spans(y, s, x, r, layer))


def _spans(y, s, x, r, layer: Layer):
    """The input rows and columns blocks of these extents span (output rows ``y``
    under filter rows ``s``, columns ``x`` under ``r``), never more than the whole input."""
    (sy, sx), (dy, dx) = layer.stride, layer.dilation
    return (_window(y, s, sy, dy, _whole_window(layer.yo, layer.s, sy, dy)),
            _window(x, r, sx, dx, _whole_window(layer.xo, layer.r, sx, dx)))


def _footprint_products(extents, rows, cols) -> dict[Kind, np.ndarray]:
    """:func:`footprints_of` from the extents and the input rows and columns they span."""
    n, g, c, k, y, x, s, r = extents
    return {Kind.WGT: _grid_product([g, k, c, s, r]), Kind.OFM: _grid_product([n, g, k, y, x]),
            Kind.IFM: _grid_product([n, g, c, rows, cols])}


__all__ = ["FrameArrays", "dram", "estimates", "faithful", "fetch_once", "footprints", "footprints_of", "frame_arrays",
           "on_chip", "regf", "regf_floor", "regf_rows"]
