"""The intra-layer space over any memory hierarchy, as frames and blockings.

A *frame* fixes the spatial part of a scheme at every on-chip level (its
stacks, from the level's unroll: :mod:`kapla.space.layer.unroll`) and the buffer
sharing of the node level; what each dimension still needs after all the
stacks (``rest``) is left to temporal *blocking*: per dimension, a unit
factor (the register block grows by it) and a loop count at every level,
multiplying to the rest, and a loop order per level. Frames are chosen top
down (the node partition first, each level's units then splitting what one
unit of the level above covers); blockings grow bottom up, each level's
block checked against its buffers before the next is chosen.

:class:`FrameEvaluator` turns arrays of blockings of one frame into the cost
model's :class:`~kapla.model.nests.Nests`; :func:`blockings` enumerates every
blocking that fits the buffers, one loop order per class of orders that cost
the same (:func:`kapla.space.layer.skeletons.distinct_orders`), as arrays.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from types import MappingProxyType

import numpy as np

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme, LevelScheme, Loop, Stack
from kapla.dataflow.tensors import DIM_INDEX, DIMS, Kind, TensorRole, layer_dims, tensor_roles
from kapla.model.cost import Costs, evaluate_nests
from kapla.model.feed import Feed
from kapla.model.hardware import Hardware, hardware
from kapla.model.nests import Loops, Nests, Stacks
from kapla.model.rules import block_words, fits, tile_coverage
from kapla.space.layer.skeletons import (
    class_table,
    looping_mask,
    order_counts,
    order_product,
    read_kinds,
    sharing_by_reads,
)
from kapla.space.layer.unroll import Spatial, partition_options, spatial_options
from kapla.workload.layer import Layer

ND = len(DIMS)
CHUNK = 1 << 13  # candidates per model call: large enough to amortise numpy, small enough to stay in cache


@dataclass(frozen=True)
class Frame:
    """The spatial part of a scheme at every on-chip level (innermost first)."""

    layer: Layer
    batch: int
    spatial: tuple[Spatial, ...]
    shr: tuple[tuple[Kind, int], ...]
    rest: tuple[int, ...]  # per loop dim (DIMS order): what temporal blocking covers
    levels: tuple[str, ...]

    @cached_property
    def dims(self) -> tuple[int, ...]:
        """Columns of the dims blocking splits (more than one step left); kept
        (the frame is immutable): merging frames' nests asks for it per level."""
        return _split_dims(self.rest)

    @property
    def relaxed(self) -> bool:
        """Some level holds a relaxed template mapping (a strip or partial filter left to blocking)."""
        return any(sp.relaxed for sp in self.spatial)

    def describe(self) -> str:
        parts = [f"{name}: {sp.describe()}" for name, sp in zip(self.levels, self.spatial, strict=True)
                 if sp.stacks or sp.unit]
        shared = ",".join(f"{k}/{n}" for k, n in self.shr)
        return " | ".join(parts + ([f"shr {shared}"] if shared else [])) or "no unrolling"


@lru_cache(maxsize=1 << 12)
def _split_dims(rest: tuple[int, ...]) -> tuple[int, ...]:
    # thousands of a layer's frames leave the same rest
    return tuple(j for j, n in enumerate(rest) if n > 1)


@lru_cache(maxsize=1 << 10)
def _sharing_factors(shr: tuple[tuple[Kind, int], ...]) -> Mapping[Kind, np.int64]:
    # a layer's frames share a handful of sharing choices (read-only: shared by them)
    return MappingProxyType({k: np.int64(n) for k, n in shr})


@lru_cache(maxsize=1 << 12)
def _dims_mask(dims: tuple[int, ...]) -> np.ndarray:
    mask = np.zeros(ND, dtype=bool)
    mask[list(dims)] = True
    mask.setflags(write=False)  # shared by every frame with these dims
    return mask


def frames(layer: Layer, batch: int, arch: ArchSpec, relax: bool = True) -> list[Frame]:
    """Every frame of ``layer`` on ``arch`` whose blocks tile the layer; ``relax=False`` leaves out the
    relaxed template mappings (strips and partial filters, offered where whole rows or filters do not fit)."""
    full = layer_dims(layer, batch)
    n = len(arch.levels) - 1
    names = arch.level_names[:n]
    node = n - 1
    sharing = arch.options.buffer_sharing and n >= 2
    # a level's choices and all below them depend on what one of its units covers alone:
    # middle levels meet the same blocks under many choices above them
    below: dict[tuple, list[tuple[tuple[Spatial, ...], tuple[int, ...]]]] = {}

    def descend(level: int, extents: dict[str, int]) -> list[tuple[tuple[Spatial, ...], tuple[int, ...]]]:
        """The choices of ``level`` and every level below it (innermost first) for a block of ``extents``, with
        what each leaves to blocking, in the order of a depth-first walk."""
        key = tuple(extents[d] for d in DIMS)
        if level < 0:
            return [((), key)]
        if (level, key) not in below:
            below[(level, key)] = under(level, spatial_options(arch, level, layer, extents, relax), extents)
        return below[(level, key)]

    def under(level: int, options: list[Spatial], extents: dict[str, int]
              ) -> list[tuple[tuple[Spatial, ...], tuple[int, ...]]]:
        """Each of ``options`` for ``level`` with every choice of the levels below it."""
        out: list[tuple[tuple[Spatial, ...], tuple[int, ...]]] = []
        block = [extents[d] for d in DIMS]
        for sp in options:
            left = tuple([-(-n // c) for n, c in zip(block, sp.covered_row, strict=True)])
            if level == 0:  # what one unit leaves is the rest (hundreds of options: no dict for each)
                out.append(((sp,), left))
                continue
            out += [(chosen + (sp,), rest) for chosen, rest in descend(level - 1, dict(zip(DIMS, left, strict=True)))]
        return out

    found = descend(n - 1, dict(full))
    ok = _covers(full, found)
    if not ok.any() and n >= 2 and arch.unroll_of(node).kind == "partition":
        # The node partitions using the most nodes can leave the levels below blocks that
        # do not tile the layer (a few rows per node that the PE array then pads into a
        # wholly idle pass: 81 rows over 8 nodes, 11 each, by 6 PE rows): then those of
        # the largest block of nodes whose partitions do, leaving the others idle, as
        # where a layer is too small for every node.
        for choices in itertools.islice(partition_options(full, arch.levels[node].array), 1, None):
            found = under(node, choices, dict(full))
            ok = _covers(full, found)
            if ok.any():
                break
    # the two walkers hold each other (and this memo) in a cycle: emptied, the memo
    # of every block's choices goes now, not at the cycle collector's next pass
    below.clear()
    if not ok.any():
        return []
    out: list[Frame] = []
    # a node partition is the choice of many frames: its sharing options are looked up once
    # (by identity; hashing its stacks and the layer costs more than the lookup saves)
    shared: dict[int, tuple[tuple[tuple[Kind, int], ...], ...]] = {}
    read = read_kinds(layer)
    for (spatial, rest), good in zip(found, ok, strict=True):
        if not good:
            continue
        options = shared.get(id(spatial[node]))
        if options is None:
            options = shared[id(spatial[node])] = sharing_by_reads(spatial[node].stacks, read) if sharing else ((),)
        out.extend(Frame(layer, batch, spatial, shr, rest, names) for shr in options)
    return out


def _covers(full: dict[str, int], found) -> np.ndarray:
    """Frames whose blocks tile the layer with each rest looping at the top
    (:func:`kapla.model.rules.tile_coverage`), all at once. Each level's few
    distinct choices give their loops (stacks, then fixed loops innermost first)
    once, padded with loops of one iteration, which change no coverage."""
    if not found:
        return np.zeros(0, dtype=bool)
    picks, tables = level_choices([spatial for spatial, _ in found])
    dims, counts = [], []
    for level, table in enumerate(tables):
        loops = [sp.coverage_loops for sp in table]
        width = max(len(d) for d, _ in loops)
        dims.append(_padded_rows([d for d, _ in loops], width, 0)[picks[:, level]])
        counts.append(_padded_rows([c for _, c in loops], width, 1)[picks[:, level]])
    # what is left loops at the top, once per dim (one iteration where nothing is left)
    rest = np.array([r for _, r in found], dtype=np.int64).reshape(len(found), ND)
    dims.append(np.broadcast_to(np.arange(ND, dtype=np.int64), rest.shape))
    counts.append(rest)
    return tile_coverage(np.array([full[d] for d in DIMS], dtype=np.int64), unit_rows(tables[0])[picks[:, 0]],
                         np.concatenate(dims, axis=1), np.concatenate(counts, axis=1)).ok


def level_choices(spatials: Sequence[tuple[Spatial, ...]]) -> tuple[np.ndarray, list[list[Spatial]]]:
    """Each level's distinct choices among frames' ``spatials`` (one depth), and
    ``(F, levels)`` which one each frame takes: frames are many, a level's choices
    few and shared (told by identity), so what a choice gives is worked out once."""
    levels = len(spatials[0])
    index: list[dict[int, int]] = [{} for _ in range(levels)]
    tables: list[list[Spatial]] = [[] for _ in range(levels)]
    # a frame's sharing variants share its tuple of choices: each tuple is looked up once
    seen: dict[int, int] = {}
    flat: list[int] = []  # per distinct tuple, its choice at each level
    which: list[int] = []
    for spatial in spatials:
        at = seen.get(id(spatial))
        if at is None:
            at = seen[id(spatial)] = len(seen)
            for level, sp in enumerate(spatial):
                k = index[level].get(id(sp))
                if k is None:
                    k = index[level][id(sp)] = len(tables[level])
                    tables[level].append(sp)
                flat.append(k)
        which.append(at)
    picks = np.array(flat, dtype=np.int64).reshape(len(seen), levels)[np.array(which, dtype=np.int64)]
    return picks, tables


def unit_rows(table: Sequence[Spatial]) -> np.ndarray:
    """``(len(table), 8)`` the unit blocks of a level's choices (:attr:`Spatial.unit_row`:
    a choice is one object per mapping or partition, kept across solves, and keeps its row)."""
    if not table:
        return np.ones((0, ND), dtype=np.int64)
    return np.stack([sp.unit_row for sp in table])


@dataclass(frozen=True, eq=False)
class Blockings:
    """Blockings of one frame: per factor combination (``F`` rows, full ``(F, 8)``)
    the unit factors and each level's loop counts; per candidate (``M`` rows)
    its combination and each level's loop order (``(M, 8)`` permutations of the
    dims, outermost first)."""

    unit: np.ndarray
    counts: tuple[np.ndarray, ...]
    rows: np.ndarray
    orders: tuple[np.ndarray, ...]

    def __len__(self) -> int:
        return int(self.rows.shape[0])


class FrameEvaluator:
    """Blockings of one frame as the cost model's nests, and their costs."""

    def __init__(self, frame: Frame, arch: ArchSpec | Hardware) -> None:
        # a search builds one per frame and uses few of them past merged model calls: the
        # arrays the other methods need are built when first asked for
        self.frame = frame
        self.hw = arch if isinstance(arch, Hardware) else hardware(arch)
        self.levels = len(frame.spatial)
        self.mu = frame.spatial[0].unit_row
        self.inner = frame.spatial[0].inner_columns
        self.shr = _sharing_factors(frame.shr)
        # per level, its stacks' dims, rows and columns as lists (its choice's own: shared, never changed)
        self.stack_lists = [sp.stack_lists for sp in frame.spatial]

    @cached_property
    def spatial(self) -> list[np.ndarray]:
        """Per level, ``(8,)`` product of its stack counts per dimension."""
        return [self._stack_factors(sp.stacks) for sp in self.frame.spatial]

    @cached_property
    def _stack_rows(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per level, its stacks' dims, rows and columns of units, as ``(1, S)`` rows."""
        return [tuple(_one_row(x) for x in lists) for lists in self.stack_lists]  # type: ignore[misc]

    @cached_property
    def _inner_dims(self) -> np.ndarray:
        return _one_row([d for d, _ in self.inner])

    @cached_property
    def _inner_counts(self) -> np.ndarray:
        return _one_row([c for _, c in self.inner])

    @cached_property
    def _full(self) -> np.ndarray:
        full = layer_dims(self.frame.layer, self.frame.batch)
        return np.array([full[d] for d in DIMS], dtype=np.int64)

    @cached_property
    def _roles(self) -> tuple[TensorRole, ...]:
        return tensor_roles(self.frame.layer)

    @cached_property
    def nests_probe(self) -> Nests:
        """A nest of this frame (its layer, roles and sharing), for block-level rules."""
        return self.nests(Blockings(np.ones((1, ND), np.int64), tuple(np.ones((1, ND), np.int64)
                                                                      for _ in range(self.levels)),
                                    np.zeros(1, np.int64),
                                    tuple(np.broadcast_to(np.arange(ND), (1, ND)) for _ in range(self.levels))))

    @staticmethod
    def _stack_factors(stacks: Sequence[Stack]) -> np.ndarray:
        out = np.ones(ND, dtype=np.int64)
        for st in stacks:
            out[DIM_INDEX[st.dim]] *= st.count
        return out

    def nests(self, b: Blockings) -> Nests:
        F, M = b.unit.shape[0], b.rows.shape[0]
        # every row's stacks are the frame's: read-only views of one row
        stacks = tuple(Stacks(*(np.broadcast_to(a, (F, a.shape[1])) for a in row)) for row in self._stack_rows)
        updates = []
        for i in range(self.levels):
            dims = self._looping(b.orders[i])
            counts = np.take_along_axis(b.counts[i][b.rows], dims, axis=1)
            if i == 0 and self.inner:
                dims = np.concatenate([dims, np.broadcast_to(self._inner_dims, (M, len(self.inner)))], axis=1)
                counts = np.concatenate([counts, np.broadcast_to(self._inner_counts, (M, len(self.inner)))], axis=1)
            updates.append(Loops(dims, counts))
        shr: list[dict] = [{} for _ in range(self.levels)]
        if self.frame.shr:
            shr[self.levels - 1] = {k: np.full(F, n) for k, n in self.shr.items()}
        return Nests(self.frame.layer, self.frame.batch, self.mu * b.unit, tuple(stacks), tuple(updates), tuple(shr),
                     b.rows, level_names=self.frame.levels)

    def _looping(self, orders: np.ndarray) -> np.ndarray:
        """``orders`` ``(M, 8)`` with only the dims blocking splits (the others
        loop once everywhere): the cost model's work grows with its loop columns."""
        keep = self.frame.dims
        if len(keep) == ND:
            return orders
        return orders[self._looping_mask[orders]].reshape(orders.shape[0], len(keep))

    @property
    def _looping_mask(self) -> np.ndarray:
        return _dims_mask(self.frame.dims)

    @cached_property
    def coverage_layout(self) -> tuple[list[int], list[int], tuple[int, ...]]:
        """The frame's loops innermost first, as its nests lay them out
        (:meth:`kapla.model.nests.Nests.dim_loops`), for :func:`coverage_of_units`:
        their dims and counts, and per level the column where its blocking
        loops start (one per dim, in :data:`DIMS` order; their counts left 1 here)."""
        dims: list[int] = []
        counts: list[int] = []
        starts = []
        for lvl, (st_dims, st_rows, st_cols) in enumerate(self.stack_lists):
            dims += st_dims
            counts += [r * c for r, c in zip(st_rows, st_cols, strict=True)]
            if lvl == 0 and self.inner:  # innermost first
                dims += [d for d, _ in reversed(self.inner)]
                counts += [c for _, c in reversed(self.inner)]
            starts.append(len(dims))
            dims += range(ND)
            counts += [1] * ND
        return dims, counts, tuple(starts)

    def costs(self, b: Blockings, feed: Feed | None = None, rules: bool = True) -> Costs:
        return evaluate_nests(self.nests(b), self.hw, feed, rules=rules)

    # ------------------------------------------------------------ blocks

    def block(self, level: int, unit: np.ndarray, counts: Sequence[np.ndarray]) -> np.ndarray:
        """Clipped blocks ``(F, 8)`` of ``level`` from unit factors and the loop
        counts of the levels below it."""
        tile = self.mu * unit
        for i in range(level):
            tile = tile * self.stacked(i) * counts[i]
        return np.minimum(tile, self._full)

    def stacked(self, level: int) -> np.ndarray:
        """``(8,)`` what ``level``'s stacks multiply a block by (at the PE level, with its fixed inner loops)."""
        out = self.spatial[level]
        if level == 0 and self.inner:
            out = out.copy()
            for d, c in self.inner:
                out[d] *= c
        return out

    def fits(self, level: int, block: np.ndarray) -> np.ndarray:
        """``(F,)`` blocks one unit of ``level`` can hold (each per-tensor buffer on its own)."""
        return self._fits_with(level, block, self.shr)

    def _fits_with(self, level: int, block: np.ndarray, shr: Mapping[Kind, np.ndarray | np.integer]) -> np.ndarray:
        """:meth:`fits` with the node level's sharing factors ``shr`` (per block, or the frame's own)."""
        # a frame's nests bypass nothing the hardware holds; only the node level shares
        words = block_words(block, self.frame.layer, self._roles, self.hw, level, (),
                            shr if level == self.levels - 1 else {})
        return fits(words, self.hw, level) if words else np.ones(block.shape[0], dtype=bool)

    def fits_above(self, level: int, unit: np.ndarray, counts: Sequence[np.ndarray],
                   upto: int | None = None) -> np.ndarray:
        """``(F,)`` partial blockings (unit factors, the loop counts of levels
        below ``level``) whose smallest blocks at ``level`` and every level above
        (no more loops there; ``upto``: below that level only) still fit: those
        that can be completed."""
        ok = np.ones(unit.shape[0], dtype=bool)
        ones = np.ones_like(unit)
        below = list(counts)
        for j in range(level, self.levels if upto is None else upto):
            ok &= self.fits(j, self.block(j, unit, below))
            below.append(ones)
        return ok

    def scheme(self, b: Blockings, i: int, ifm_name: str | None = None) -> LayerScheme:
        """Candidate ``i`` as directives (loops of count 1 left out)."""
        row = b.rows[i]
        unit = dict(self.frame.spatial[0].unit)
        for j, d in enumerate(DIMS):
            if b.unit[row, j] > 1:
                unit[d] = unit.get(d, 1) * int(b.unit[row, j])
        levels = []
        for lvl in range(self.levels):
            sp = self.frame.spatial[lvl]
            loops = tuple(Loop(DIMS[j], int(b.counts[lvl][row, j])) for j in b.orders[lvl][i]
                          if b.counts[lvl][row, j] > 1)
            if lvl == 0:
                loops += sp.inner
            shr = self.frame.shr if lvl == self.levels - 1 else ()
            levels.append(LevelScheme(self.frame.levels[lvl], sp.stacks, loops, shr))
        return LayerScheme(self.frame.layer, self.frame.batch, tuple(unit.items()), tuple(levels), ifm_name=ifm_name)


def fits_above_many(evs: Sequence[FrameEvaluator], which: np.ndarray, unit: np.ndarray, level: int,
                    upto: int | None = None) -> np.ndarray:
    """:meth:`FrameEvaluator.fits_above` of unit factors ``unit`` ``(F, 8)``
    with every loop below ``level`` counting one, row ``r`` in frame
    ``evs[which[r]]`` (frames of one layer, batch, hardware and depth), all
    rows in one go: a block is the unit times what the frame's levels below
    stack (:meth:`FrameEvaluator.block`; exact integers, whatever the order)."""
    ok = np.ones(unit.shape[0], dtype=bool)
    if not len(evs):
        return ok
    first = evs[0]
    # per frame, what one unit factor becomes at level ``j``: its PE unit and every level below stacked
    here = np.stack([ev.mu for ev in evs])
    end = first.levels if upto is None else upto
    for j in range(end):
        if j >= level:
            block = np.minimum(here[which] * unit, first._full)
            shr = {}
            if j == first.levels - 1:  # only the node level shares
                kinds = dict.fromkeys(k for ev in evs for k in ev.shr)
                shr = {k: np.array([ev.shr.get(k, 1) for ev in evs], dtype=np.int64)[which] for k in kinds}
            ok &= first._fits_with(j, block, shr)
        if j + 1 < end:
            here = here * np.stack([ev.stacked(j) for ev in evs])
    return ok


def _one_row(values: Sequence[int]) -> np.ndarray:
    return np.array(values, dtype=np.int64).reshape(1, len(values))


def merged_nests(parts: Sequence[tuple[Frame, Blockings]]) -> Iterator[tuple[Nests, list[tuple[int, slice]]]]:
    """The nests of each frame's blockings, all frames of one layer and batch
    merged into one :class:`~kapla.model.nests.Nests` (one model call instead of
    one per frame; model calls cost a fixed overhead each): per merged nests,
    the part each slice of its candidates comes from. Frames with fewer stacks
    or loops at a level are padded with stacks and loops of count 1, and a
    kind a frame does not share gets a sharing factor of 1: neither changes a cost.
    The merged arrays are those of the frames' own :meth:`FrameEvaluator.nests`
    padded and stacked, built for all frames at once (the frames are many, their
    blockings often few: per-frame arrays would cost a numpy call each)."""
    groups: dict[tuple, list[int]] = {}
    # a layer is told by its value, each object hashed once (the frames are thousands, their layers few)
    first_of: dict[Layer, int] = {}
    tag_of: dict[int, int] = {}
    for i, (frame, _) in enumerate(parts):
        layer = frame.layer
        tag = tag_of.get(id(layer))
        if tag is None:
            tag = tag_of[id(layer)] = first_of.setdefault(layer, id(layer))
        # frames of another layer, batch or depth never share a batch
        groups.setdefault((tag, frame.batch, len(frame.spatial)), []).append(i)
    for members in groups.values():
        frames_ = [parts[i][0] for i in members]
        bs = [parts[i][1] for i in members]
        merged = _merge(frames_, bs)
        # plain ints: thousands of slices of numpy scalars cost more than the model call
        starts = list(itertools.accumulate((len(b.rows) for b in bs), initial=0))
        yield merged, [(i, slice(starts[k], starts[k + 1])) for k, i in enumerate(members)]


def _merge(frames_: Sequence[Frame], bs: Sequence[Blockings]) -> Nests:
    """The nests of frames ``frames_`` (one layer, batch and depth) with blockings ``bs``, as one.
    What a frame's spatial choices and sharing give is laid out once per distinct
    choice and picked for each frame (a model ranking merges thousands of frames)."""
    first = frames_[0]
    levels = len(first.spatial)
    combos = np.array([b.unit.shape[0] for b in bs], dtype=np.int64)
    cands = np.array([b.rows.shape[0] for b in bs], dtype=np.int64)
    offsets = np.cumsum(combos) - combos
    rows = np.concatenate([b.rows for b in bs]) + np.repeat(offsets, cands)
    picks, tables = level_choices([f.spatial for f in frames_])
    unit = np.repeat(unit_rows(tables[0])[picks[:, 0]], combos, axis=0) * np.concatenate([b.unit for b in bs])
    stacks = []
    for lvl in range(levels):
        lists = [sp.stack_lists for sp in tables[lvl]]
        width = max(len(dims) for dims, _, _ in lists)
        stacks.append(Stacks(*(np.repeat(_padded_rows([x[f] for x in lists], width, fill)[picks[:, lvl]], combos,
                                         axis=0)
                               for f, fill in ((0, 0), (1, 1), (2, 1)))))
    # per candidate, the dims of the frame that loop (the others loop once at every level)
    split = np.array([f.rest for f in frames_], dtype=np.int64).reshape(len(frames_), ND) > 1
    looping = np.repeat(split, cands, axis=0)
    inner = [sp.inner_columns for sp in tables[0]]
    inner_len = np.array([len(x) for x in inner], dtype=np.int64)[picks[:, 0]]
    split_len = split.sum(axis=1)
    updates = []
    for lvl in range(levels):
        orders = np.concatenate([b.orders[lvl] for b in bs])
        counts = np.take_along_axis(np.concatenate([b.counts[lvl] for b in bs])[rows], orders, axis=1)
        keep = np.take_along_axis(looping, orders, axis=1)
        width = int((split_len + (inner_len if lvl == 0 else 0)).max())
        if lvl == 0 and inner_len.any():
            most = max(len(x) for x in inner)
            orders = np.concatenate([orders, np.repeat(_padded_rows([[d for d, _ in x] for x in inner], most, 0)
                                                       [picks[:, 0]], cands, axis=0)], axis=1)
            counts = np.concatenate([counts, np.repeat(_padded_rows([[c for _, c in x] for x in inner], most, 1)
                                                       [picks[:, 0]], cands, axis=0)], axis=1)
            keep = np.concatenate([keep, np.repeat(_padded_rows([[True] * len(x) for x in inner], most, False)
                                                   [picks[:, 0]], cands, axis=0)], axis=1)
        updates.append(_kept_last(orders, counts, keep, width))
    # only the node level shares; frames of one partition share their few sharing choices
    shr: list[dict[Kind, np.ndarray]] = [{} for _ in range(levels - 1)]
    which: dict[int, int] = {}
    choices: list[tuple[tuple[Kind, int], ...]] = []
    pick = np.empty(len(frames_), dtype=np.int64)
    for n, f in enumerate(frames_):
        at = which.get(id(f.shr))
        if at is None:
            at = which[id(f.shr)] = len(choices)
            choices.append(f.shr)
        pick[n] = at
    kinds = sorted({k for c in choices for k, _ in c})
    shr.append({k: np.repeat(np.array([dict(c).get(k, 1) for c in choices], dtype=np.int64)[pick], combos)
                for k in kinds})
    return Nests(first.layer, first.batch, unit, tuple(stacks), tuple(updates), tuple(shr), rows,
                 level_names=first.levels)


def _padded_rows(values: Sequence[Sequence], width: int, fill) -> np.ndarray:
    """Rows of ``values`` each padded in front to ``width`` with ``fill``, ``(len(values), width)``."""
    dtype = bool if isinstance(fill, bool) else np.int64
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    out = np.full((len(values), width), fill, dtype=dtype)
    # a merge pads hundreds of short rows: one flat copy, placed row by row at each row's end
    flat = np.fromiter(itertools.chain.from_iterable(values), dtype=dtype, count=int(lengths.sum()))
    out[np.arange(width)[None, :] >= width - lengths[:, None]] = flat
    return out


def _kept_last(dims: np.ndarray, counts: np.ndarray, keep: np.ndarray, width: int) -> Loops:
    """The loop columns ``keep`` marks (at most ``width`` per row), in order,
    padded in front with loops of count 1 over dim 0, ``(M, width)``."""
    # a kept column lands as many places from the end as there are kept columns from it
    # on (a stable sort of the marks, with flat indices: the rows are thousands)
    rows, cols = keep.shape
    flat = np.flatnonzero(keep)
    from_end = np.cumsum(keep[:, ::-1], axis=1)[:, ::-1].reshape(-1)[flat]
    at = flat // cols * width + width - from_end
    out_dims = np.zeros(rows * width, dtype=dims.dtype)
    out_counts = np.ones(rows * width, dtype=counts.dtype)
    out_dims[at] = dims.reshape(-1)[flat]
    out_counts[at] = counts.reshape(-1)[flat]
    return Loops(out_dims.reshape(rows, width), out_counts.reshape(rows, width))


def _pad(a: np.ndarray, width: int, fill: int) -> np.ndarray:
    """``a`` ``(R, K)`` with ``width - K`` columns of ``fill`` in front (the outside of a level's loops)."""
    if a.shape[1] == width:
        return a
    return np.concatenate([np.full((a.shape[0], width - a.shape[1]), fill, dtype=a.dtype), a], axis=1)


def totals_of_many(parts: Sequence[tuple[FrameEvaluator, Blockings]], feed: Feed | None = None) -> list[np.ndarray]:
    """The energies (``costs(b, feed, rules=False).total``) of each frame's blockings,
    every frame of a layer costed in one batch (:func:`merged_nests`): the same
    numbers, row by row."""
    if not parts:
        return []
    return frame_totals([(ev.frame, b) for ev, b in parts], parts[0][0].hw, feed)


def frame_totals(parts: Sequence[tuple[Frame, Blockings]], hw: Hardware, feed: Feed | None = None
                 ) -> list[np.ndarray]:
    """:func:`totals_of_many` of frames on ``hw``, without an evaluator for each (a
    model ranking costs every frame of a deep hierarchy, thousands per layer)."""
    out: list[np.ndarray] = [np.zeros(0)] * len(parts)
    for merged, where in merged_nests(parts):
        total = evaluate_nests(merged, hw, feed, rules=False).total
        for i, rows in where:
            out[i] = total[rows]
    return out


def coverage_of_units(evs: Sequence[FrameEvaluator], which: np.ndarray, unit: np.ndarray, level: int) -> np.ndarray:
    """``(R,)`` which blockings leave no wholly idle iteration (:func:`kapla.model.rules.tile_coverage`,
    as :func:`kapla.model.rules.coverage` of their nests): those with unit factors
    ``unit`` ``(R, 8)``, row ``r`` in frame ``evs[which[r]]`` (frames of one
    layer and batch), all that is left of the frame's rest looping at ``level``
    and every other loop counting one (their orders cannot change which blocks
    they visit). Every row is checked in one batch: frames with fewer loops are
    padded with outermost loops of one iteration, which change no coverage."""
    layouts = [ev.coverage_layout for ev in evs]
    width = max(len(columns) for columns, _, _ in layouts)
    dims_of = np.zeros((len(evs), width), dtype=np.int64)
    counts_of = np.ones((len(evs), width), dtype=np.int64)
    for n, (columns, counts, _) in enumerate(layouts):
        dims_of[n, :len(columns)] = columns
        counts_of[n, :len(counts)] = counts
    start = np.array([layout[2][level] for layout in layouts], dtype=np.int64)
    rest = np.array([ev.frame.rest for ev in evs], dtype=np.int64).reshape(len(evs), ND)
    counts = counts_of[which]
    # each row's blocking loops of ``level``: ND columns from its frame's start
    counts[np.arange(len(unit))[:, None], start[which][:, None] + np.arange(ND)] = rest[which] // unit
    full_unit = np.stack([ev.mu for ev in evs])[which] * unit
    return tile_coverage(evs[0]._full, full_unit, dims_of[which], counts).ok


@lru_cache(maxsize=4096)
def _divisors(n: int) -> tuple[int, ...]:
    return tuple(d for d in range(1, n + 1) if n % d == 0)


def split_rows(left: np.ndarray, dims: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Every way to take a divisor of ``left`` ``(F, 8)`` along each of ``dims``:
    ``(G,)`` the source row of each and ``(G, 8)`` the factors taken."""
    rows = np.arange(left.shape[0])
    taken = np.ones((left.shape[0], ND), dtype=np.int64)
    for d in dims:
        # the distinct values among the source rows (fewer than the rows grown so far)
        if left.shape[0] == 1:
            values, which = left[:, d], np.zeros(len(rows), dtype=np.int64)
        else:
            values, first = np.unique(left[:, d], return_inverse=True)
            which = first.reshape(-1)[rows]
        divs = [_divisors(int(v)) for v in values]
        flat = np.array([x for v in divs for x in v], dtype=np.int64)
        sizes = np.array([len(v) for v in divs], dtype=np.int64)
        starts = np.cumsum(sizes) - sizes
        counts = sizes[which]
        # each row's divisors in turn: its value's run of ``flat``
        at = np.repeat(starts[which] - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))
        rows = np.repeat(rows, counts)
        taken = np.repeat(taken, counts, axis=0)
        taken[:, d] = flat[at]
    return rows, taken


def factor_combos(ev: FrameEvaluator) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Every split of the frame's rest into a unit factor and a loop count per
    level whose blocks fit every buffer, grown bottom up: ``(F, 8)`` unit
    factors and per level ``(F, 8)`` loop counts."""
    frame = ev.frame
    dims = frame.dims
    rest = np.array(frame.rest, dtype=np.int64)[None, :]
    src, unit = split_rows(rest, dims)
    keep = ev.fits(0, ev.block(0, unit, ()))
    unit = unit[keep]
    left = rest[src[keep]] // unit
    counts: list[np.ndarray] = []
    for level in range(ev.levels - 1):
        src, taken = split_rows(left, dims)
        unit, counts, left = unit[src], [c[src] for c in counts], left[src]
        counts.append(taken)
        keep = ev.fits(level + 1, ev.block(level + 1, unit, counts))
        unit, counts, left = unit[keep], [c[keep] for c in counts], (left // taken)[keep]
    counts.append(left)
    return unit, tuple(counts)


def order_classes(layer: Layer, counts: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row of loop counts ``(F, 8)``, one order per class of equivalent
    orders of its looping dims (:func:`kapla.space.layer.skeletons.order_perms`)."""
    table = class_table(layer, DIMS)
    return tuple(table(int(m)) for m in looping_mask(counts))


def blockings(ev: FrameEvaluator, chunk: int = CHUNK) -> Iterator[Blockings]:
    """Every blocking of the frame that fits the buffers, one order per class
    at every level, in chunks of about ``chunk`` candidates."""
    unit, counts = factor_combos(ev)
    table = class_table(ev.frame.layer, DIMS)
    masks = [looping_mask(c) for c in counts]
    n = [order_counts(table, m) for m in masks]
    ends = np.cumsum(np.prod(np.stack(n), axis=0))
    start = 0
    while start < unit.shape[0]:
        base = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, base + chunk, side="right")))
        part = slice(start, stop)
        rows, orders = order_product([table] * len(counts), [m[part] for m in masks], [c[part] for c in n])
        yield Blockings(unit[part], tuple(c[part] for c in counts), rows, orders)
        start = stop


__all__ = ["Blockings", "Frame", "FrameEvaluator", "blockings", "factor_combos", "frames", "order_classes"]
