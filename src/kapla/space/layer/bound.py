"""A lower bound on the cost of every scheme of a frame, on any memory hierarchy.

A frame (:class:`~kapla.space.layer.frames.Frame`) fixes the stacks of every
level; whatever its blocking, each unit of a level covers, over the whole run,
its *span*: the PE unit block, the template's fixed loops, what blocking must
cover (``rest``) and the stacks of the levels below it. The cost model
(:mod:`kapla.model.traffic`) charges each unit at least one word per element
of its span it touches (a block is reloaded whole or, sliding, by the union of
its windows), and a valid nest leaves no unit idle; so every charge below is
at most what the model charges any valid scheme of the frame:

* the MAC energy and the datapath's operand accesses (fixed by the layer);
* per tensor and per pair of consecutive levels holding it (DRAM last): the
  parent serving, the child buffer filling (inputs) or writing back
  (outputs), the buses in between delivering and the NoC carrying, each
  element of every unit's span once; DRAM supplying (or taking) the whole
  tensor once; under a feed, the on-chip data read from (or left in) the node
  buffers and the forwarded input crossing its hops instead;
* the run taking at least its compute steps and the DRAM bandwidth time of
  the whole tensors; static energy over that time.

Levels that do not hold a tensor are bypassed as in the model, and every
access is charged at the level's energy for that tensor (its own word width).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from kapla.dataflow.tensors import (
    DIM_INDEX,
    DIMS,
    RELEVANT_MASK,
    WINDOW_AXIS,
    Kind,
    TensorRole,
    footprints,
    ifm_extents,
    layer_dims,
    tensor_roles,
    whole_input,
    window,
)
from kapla.model.feed import Feed
from kapla.model.hardware import Hardware, mean_channel_distance
from kapla.model.objective import Objective, objective_of
from kapla.space.layer.frames import Frame
from kapla.workload.layer import Layer

#: Relative slack taken off a bound, so float noise never lets it exceed a cost it equals.
SLACK = 1e-9


@dataclass(frozen=True)
class Bound:
    """Least energy (J) and time (cycles) of any valid scheme of a frame."""

    energy: float
    time: float

    def key(self, objective: Objective | str) -> tuple[float, float]:
        """The least ``(objective, energy)`` key a scheme of the frame can have
        (every objective grows with energy and time, so the pair bounds it)."""
        obj = objective_of(objective)
        return float(obj.of(self.energy, self.time)), self.energy


def frame_bound(frame: Frame, hw: Hardware, feed: Feed | None = None) -> Bound:
    """No valid scheme of ``frame`` on ``hw`` costs less energy or time than this
    (``feed``: the layer inside a segment, as the cost model takes it; None:
    everything through DRAM)."""
    energy, time = _least_cost(_FrameView(frame, hw, feed))
    return Bound(float(energy), float(time))


def partial_bounds(frame: Frame, hw: Hardware, feed: Feed | None, top: Sequence[np.ndarray],
                   left: np.ndarray, orders: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Per partial blocking of the frame, the least energy and time of any of its
    completions: ``(F,)`` each. ``top``: the loop counts of the outermost
    ``len(top)`` levels (``(F, 8)`` each, innermost of them first); ``left``:
    ``(F, 8)`` what the unit factors and the loop counts of the levels below
    them still cover. The frame bound with the blocks of those levels known,
    so it counts the reloads their loops force whatever the orders and the
    levels below; with every level's counts given (``left`` the unit factors)
    it bounds one factor combination over all its loop orders. ``orders=False``
    leaves out what one order serving every tensor adds
    (:meth:`_PartialView.conflicts`): a weaker bound, sooner."""
    view = _PartialView(frame, hw, feed, top, left)
    energy, time = _least_cost(view, orders)
    shape = left.shape[0]
    return np.broadcast_to(energy, shape).astype(float), np.broadcast_to(time, shape).astype(float)


def _least_cost(view: _FrameView, orders: bool = True):
    """Energy and time no valid scheme the view covers goes below (floats or arrays)."""
    hw = view.hw
    energy: float | np.ndarray = view.ops * hw.mac
    dram_bits = 0.0
    for role in tensor_roles(view.frame.layer):
        energy = energy + _datapath(view, role)
        e, words = _chain(view, role)
        energy = energy + e
        dram_bits = dram_bits + words * hw.bits[role.kind]
    if orders and isinstance(view, _PartialView):
        energy = energy + view.conflicts()
    time = np.maximum(float(view.trips), dram_bits / hw.dram_bits_per_cycle)
    energy = energy + time * hw.static
    return energy * (1 - SLACK), time * (1 - SLACK)


class _FrameView:
    """What the bound reads of a frame: units and spans per level, feed, distances."""

    def __init__(self, frame: Frame, hw: Hardware, feed: Feed | None) -> None:
        self.frame, self.hw = frame, hw
        if feed is not None and not feed.on_chip and feed.dram_hops is None:
            feed = None  # as the cost model: nothing on chip, the plain convention
        self.feed = feed
        layer = frame.layer
        self.ops = layer.loop_ops * frame.batch
        full = layer_dims(layer, frame.batch)
        self.full = np.array([full[d] for d in DIMS], dtype=np.int64)
        n = len(frame.spatial)
        self.n = n
        self.node = hw.node
        stacks = [_stack_factors(sp) for sp in frame.spatial]
        self.counts = [int(np.prod(s)) for s in stacks]  # units of each level inside one parent unit
        self.stacks = stacks
        self.unit = unit = np.array([dict(frame.spatial[0].unit).get(d, 1) for d in DIMS], dtype=np.int64)
        self.inner = inner = np.ones(len(DIMS), dtype=np.int64)
        for lp in frame.spatial[0].inner:
            inner[DIM_INDEX[lp.dim]] *= lp.count
        run = unit * inner * np.array(frame.rest, dtype=np.int64)
        self.trips = int(np.prod(run))
        self.spans = []  # per level (DRAM last): what one unit covers over the run
        self.least = []  # per level: the smallest block of it (or a group of its children) a loop moves
        self.groups = []  # per level: what single operands under one unit of it span at a step
        below = np.ones(len(DIMS), dtype=np.int64)
        for i in range(n + 1):
            self.spans.append(np.minimum(run * below, self.full) if i < n else self.full)
            self.least.append(np.minimum(unit * below, self.full))  # the template's loops may still move
            self.groups.append(np.minimum(below, self.full))
            below = below * stacks[i] if i < n else below

    def units(self, level: int) -> int:
        """Units of ``level`` on the whole block (DRAM: one)."""
        return math.prod(self.counts[level:])

    def spread(self, level: int) -> int:
        """Units of the levels below ``level`` inside one unit of it."""
        return math.prod(self.counts[:level])

    def each_once(self, level: int, role: TensorRole, child: int | None = None):
        """Words every unit of ``level`` must receive (or give back) at least once,
        as blocks of holder ``child`` (below it) or its own move: its span's elements."""
        step = self.spans[level] if child is None else self.least[child]  # a level's own blocks move by themselves
        words = _touched(role.kind, self.spans[level], self.least[level], step, self.frame.layer)
        return self.units(level) * words * role.copies

    def distance(self) -> float:
        """Mean hops between the nodes and DRAM (0 without a node level)."""
        if self.node is None:
            return 0.0
        if self.feed is not None and self.feed.dram_hops is not None:
            return float(self.feed.dram_hops)
        rows = math.prod(st.rows for st in self.frame.spatial[self.node].stacks)
        cols = math.prod(st.cols for st in self.frame.spatial[self.node].stacks)
        return mean_channel_distance(self.hw.channels, (0, 0), (rows, cols))

    def shr(self, kind: Kind) -> int:
        return dict(self.frame.shr).get(kind, 1)


def _stack_factors(sp) -> np.ndarray:
    out = np.ones(len(DIMS), dtype=np.int64)
    for st in sp.stacks:
        out[DIM_INDEX[st.dim]] *= st.count
    return out


def _datapath(view: _FrameView, role: TensorRole) -> float:
    """The operands the datapath reads (and the outputs it writes) at the innermost
    holder, and the buses they cross from there: fixed by the frame, as the model counts them."""
    hw, kind = view.hw, role.kind
    chain = hw.holders(kind)
    first = chain[0] if chain else view.n
    per_op = float(view.ops * role.copies)
    if first == 0:
        lvl = hw.levels[0]
        return per_op * (lvl.read[kind] + (lvl.write[kind] if role.written else 0.0))
    layer = view.frame.layer
    share = float(footprints(view.groups[first], layer, (kind,))[kind]) / view.spread(first)
    lvl = hw.levels[first]
    energy = per_op * share * (lvl.read[kind] + (lvl.write[kind] if role.written else 0.0))
    for j in range(first):
        bus = hw.levels[j].bus
        if bus is not None:
            group = float(footprints(view.groups[j], layer, (kind,))[kind])
            energy += view.units(j) * view.trips * group * role.copies * bus.energy[kind]
    return energy


def _chain(view: _FrameView, role: TensorRole) -> tuple[float, float]:
    """Energy every pair of consecutive holders of ``role`` costs at least, and
    the words DRAM moves for it at least."""
    hw = view.hw
    path = hw.holders(role.kind) + (view.n,)
    energy = dram = 0.0
    for c, p in zip(path, path[1:], strict=False):
        if role.written:
            e, d = _output_pair(view, role, c, p)
        else:
            e, d = _input_pair(view, role, c, p)
        energy += e + _buses(view, role, c, p)
        dram += d
    return energy, dram


def _on_top(view: _FrameView, role: TensorRole, p: int) -> bool:
    """The tensor's traffic with DRAM stays on chip under the feed (this pair's parent being DRAM)."""
    feed = view.feed
    if feed is None or p != view.n:
        return False
    if role.written:
        return not feed.to_dram
    if role.kind == Kind.IFM:
        return feed.ifm_hops is not None
    return role.kind == Kind.WGT and feed.pinned


def _spans_node(view: _FrameView, c: int, p: int) -> bool:
    return view.node is not None and c <= view.node < p


def _child_counted(view: _FrameView, c: int) -> bool:
    """The child buffer counts what fills it and what it writes back (registers and a PE-side node buffer do not)."""
    return c > 0 and not (c == view.node and view.hw.gbuf_pe_side)


def _pair_energy(view: _FrameView, role: TensorRole, c: int, p: int):
    """Energy of ``role`` between holder ``c`` and its parent ``p``, buses included."""
    pair = _output_pair if role.written else _input_pair
    return pair(view, role, c, p)[0] + _buses(view, role, c, p)


def _input_pair(view: _FrameView, role: TensorRole, c: int, p: int) -> tuple[float, float]:
    """A read-only tensor between holder ``c`` and its parent ``p``: (energy, DRAM words)."""
    hw, kind = view.hw, role.kind
    fills = view.each_once(c, role)
    shr = view.shr(kind) if c == view.node else 1
    rotated = fills * (shr - 1) / shr  # words a sharing group's units pass each other
    energy = rotated * hw.hop[kind]
    into_nodes = 0.0
    if _spans_node(view, c, p):
        assert view.node is not None
        into_nodes = fills / shr if c == view.node else view.each_once(view.node, role, c)
    part = 1.0  # of the words at the top, those from the parent (the rest forwarded on chip)
    if _on_top(view, role, p):
        if kind == Kind.WGT:
            return energy, 0.0  # pinned weights: nothing at the top
        assert view.feed is not None and view.feed.ifm_hops is not None
        at = c if view.node is None else view.node
        once = view.each_once(p, role, c)
        share = view.feed.ifm_share
        energy += share * once * (hw.levels[at].read[kind] + view.feed.ifm_hops * hw.hop[kind])
        if share >= 1.0:
            return energy, 0.0
        part = 1.0 - share
    if p == view.n and hw.per_node_dram and _spans_node(view, c, p):
        served = into_nodes  # every node fetches its own copy
    else:
        served = view.each_once(p, role, c)
    fetched = served * hw.levels[p].read[kind]
    if _child_counted(view, c):
        fetched += fills * hw.levels[c].write[kind] + rotated * hw.levels[c].read[kind]
    fetched += into_nodes * view.distance() * hw.hop[kind]
    return energy + part * fetched, part * served if p == view.n else 0.0


def _output_pair(view: _FrameView, role: TensorRole, c: int, p: int) -> tuple[float, float]:
    """A written tensor between holder ``c`` and its parent ``p``: (energy, DRAM words).
    Partial sums read back and combined are not counted (at least zero)."""
    hw, kind = view.hw, role.kind
    written = view.each_once(p, role, c)
    if _on_top(view, role, p):
        if hw.gbuf_pe_side:
            return 0.0, 0.0  # what stays for the consumers is not served to the PEs
        at = c if view.node is None else view.node
        return written * hw.levels[at].write[kind], 0.0
    energy = written * hw.levels[p].write[kind]
    if _child_counted(view, c):
        energy += view.each_once(c, role) * hw.levels[c].read[kind]
    if _spans_node(view, c, p):
        energy += written * view.distance() * hw.hop[kind]
    return energy, written if p == view.n else 0.0


def _buses(view: _FrameView, role: TensorRole, c: int, p: int) -> float:
    """The buses between holder ``c`` and its parent ``p``: every word delivered
    into a unit of each (a systolic array: only what crosses its edge)."""
    hw, kind = view.hw, role.kind
    energy = 0.0
    for j in range(c, p):
        bus = hw.levels[j].bus
        if bus is None:
            continue
        if j == 0 and hw.systolic:
            words = _edge_words(view, role, c, p)
        else:
            words = view.each_once(j, role, c)
        energy += words * bus.energy[kind]
    return energy


def _edge_words(view: _FrameView, role: TensorRole, c: int, p: int):
    """Words the edge of a systolic array (level ``c``, the registers) passes at
    least: what the level above serves it (the parent's side of the pair, or the
    next level's units)."""
    if c + 1 < p:
        return view.each_once(c + 1, role, c)
    if not role.written and p == view.n and view.hw.per_node_dram and _spans_node(view, c, p):
        assert view.node is not None
        return view.each_once(view.node, role, c) / (view.shr(role.kind) if c == view.node else 1)
    return view.each_once(p, role, c)


def _touched(kind: Kind, span: np.ndarray, least: np.ndarray, step: np.ndarray, layer: Layer) -> int:
    """Words of ``kind`` the model charges at least for a unit covering ``span``
    over the run in blocks no smaller than ``least``, its loops moving them by
    no less than ``step``: its footprint, but an input's rows and columns as
    :func:`_axis_least` counts them."""
    if kind != Kind.IFM:
        return int(footprints(span, layer, (kind,))[kind])
    col = DIM_INDEX
    (sy, sx), (dy, dx) = layer.stride, layer.dilation
    full_rows, full_cols = whole_input(layer)
    rows = _axis_least((int(span[col["Y"]]), int(span[col["S"]])), (int(least[col["Y"]]), int(least[col["S"]])),
                       (int(step[col["Y"]]), int(step[col["S"]])), sy, dy, full_rows)
    cols = _axis_least((int(span[col["X"]]), int(span[col["R"]])), (int(least[col["X"]]), int(least[col["R"]])),
                       (int(step[col["X"]]), int(step[col["R"]])), sx, dx, full_cols)
    return int(span[col["N"]] * span[col["G"]] * span[col["C"]]) * rows * cols


@lru_cache(maxsize=1 << 14)
def _axis_least(span: tuple[int, int], least: tuple[int, int], step: tuple[int, int], stride: int, dilation: int,
                whole: int) -> int:
    """Input rows (or columns) the model charges at least for ``span`` (outputs,
    filter taps) covered in blocks of at least ``least``, moved by loops of at
    least ``step`` (outputs, taps).

    Blocks that do not slide cover every position read at least once. A loop
    that slides a block's window counts the windows' union as one run
    (:func:`kapla.model.traffic._volume`): over a window with gaps (a stride
    longer than the block's taps; with dilation, a window of several outputs)
    that is fewer words than positions, so the least such count over every
    block size is taken too (:func:`_slid`)."""
    (outs, taps), (out_min, tap_min) = span, least
    best = int(window(outs, taps, stride, dilation))
    if (outs, taps) == (out_min, tap_min):
        return best  # no loop moves a block: nothing slides
    o = np.arange(out_min, outs + 1, dtype=np.int64)[:, None]
    t = np.arange(tap_min, taps + 1, dtype=np.int64)[None, :]
    w = window(o, t, stride, dilation)
    moves = (-(-outs // o), -(-taps // t))
    slid = _slid(w, moves, (np.minimum(o, step[0]) * stride, np.minimum(t, step[1]) * dilation), whole)
    return min(best, int(slid.min()))


def _slid(w: np.ndarray, moves: tuple[np.ndarray, np.ndarray], steps: tuple[np.ndarray, np.ndarray],
          whole: int) -> np.ndarray:
    """The least a loop sliding blocks of window ``w`` counts, the blocks moved
    ``moves`` (outputs, taps) times by ``steps`` positions: the union of one
    sweep's windows (as the model counts it) times the other axis' moves."""
    big = np.iinfo(np.int64).max
    by_taps = np.where(moves[1] > 1, moves[0] * np.minimum(w + (moves[1] - 1) * np.minimum(w, steps[1]), whole), big)
    by_outs = np.where(moves[0] > 1, moves[1] * np.minimum(w + (moves[0] - 1) * np.minimum(w, steps[0]), whole), big)
    return np.minimum(by_taps, by_outs)


class _PartialView(_FrameView):
    """A frame with the loop counts of its outermost levels known (arrays over
    the partial blockings): every unit of such a level (or of a level above it,
    receiving its blocks) is charged its blocks' words once per move of the
    loops above them that it depends on, in any order; the levels below are
    charged as in the frame bound."""

    def __init__(self, frame: Frame, hw: Hardware, feed: Feed | None, top: Sequence[np.ndarray],
                 left: np.ndarray) -> None:
        super().__init__(frame, hw, feed)
        first = self.n - len(top)
        assert first >= 0
        counts = [None] * first + list(top)
        self.first = first
        self.fixed = counts  # per level its loop counts (None: still open)
        self._regime: tuple[int, int, int] | None = None  # (child, level, dim): see :meth:`conflicts`
        self._words: dict[tuple, np.ndarray] = {}
        self._memo: dict[tuple, Any] = {}  # blocks and what is read of them, by block (they live as long)
        # what a level's loops move per iteration: ``left`` (unit and lower counts) grown by the fixed levels
        self.tiles: dict[int, np.ndarray] = {}
        self.above: dict[int, np.ndarray] = {}
        tile = self.unit * left
        for i in range(self.n):
            if i >= first:
                self.tiles[i] = tile
            if i == 0:
                tile = tile * self.inner
            tile = tile * self.stacks[i]
            if i >= first:
                tile = tile * counts[i]
        above = np.ones_like(left)
        for i in range(self.n - 1, first - 1, -1):
            c = counts[i]
            assert c is not None
            above = above * (c * self.inner if i == 0 else c)
            self.above[i] = above

    def each_once(self, level: int, role: TensorRole, child: int | None = None):
        # the pair terms ask for the same words many times: worked out once per view
        key = (level, role.kind, role.copies, child, self._regime if self._regime and self._regime[0] == (
            level if child is None else child) else None)
        words = self._words.get(key)
        if words is None:
            words = self._words[key] = self._each_once(level, role, child)
        return words

    def _each_once(self, level: int, role: TensorRole, child: int | None = None):
        c = level if child is None else child
        if c not in self.tiles:
            return super().each_once(level, role, child)
        block = self._block(c, level)
        if self._regime is not None and self._regime[0] == c:
            words = self._reloaded(role.kind, block, self._regime[1], self._regime[2])
        else:
            # every loop above the blocks advances by at least its own level's stack of them
            words = _moved(role.kind, block, self.above[c], self.tiles[c] * self.stacks[c], self.frame.layer,
                           self._footprint(block, role.kind), self._extents(block))
        return self.units(level) * words * role.copies

    def _block(self, c: int, level: int) -> np.ndarray:
        """The blocks of level ``c`` one unit of ``level`` holds, clipped to the layer."""
        key = ("block", c, level)
        if key not in self._memo:
            block = self.tiles[c]
            for i in range(c, level):
                block = block * self.stacks[i]
            self._memo[key] = np.minimum(block, self.full)
        return self._memo[key]

    def _footprint(self, block: np.ndarray, kind: Kind) -> np.ndarray:
        key = ("fp", id(block), kind)
        if key not in self._memo:
            self._memo[key] = footprints(block, self.frame.layer, (kind,))[kind].astype(float)
        return self._memo[key]

    def _extents(self, block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key = ("extents", id(block))
        if key not in self._memo:
            self._memo[key] = ifm_extents(block, self.frame.layer)
        return self._memo[key]

    def _looping(self, level: int) -> np.ndarray:
        """``(F, 8)`` the loop counts of fixed ``level`` (level 0 with the template's loops)."""
        counts = self.fixed[level]
        assert counts is not None
        return counts * self.inner if level == 0 else counts

    def _reloaded(self, kind: Kind, block: np.ndarray, level: int, dim: int) -> np.ndarray:
        """``(F,)`` words of ``kind`` the model charges for ``block`` when the innermost
        loop of ``level``, over ``dim`` (one the tensor depends on), is its last
        reloading loop: once per iteration of every loop of that level and above
        (a sliding window: the new rows or columns only)."""
        layer = self.frame.layer
        key = ("every", level)
        if key not in self._memo:
            self._memo[key] = np.prod(self.above[level], axis=1).astype(float)
        every = self._memo[key]
        fp = self._footprint(block, kind)
        axis = int(WINDOW_AXIS[dim])
        if kind != Kind.IFM or axis < 0:
            return fp * every
        rows, cols = self._extents(block)
        extent = rows if axis == 0 else cols
        whole = whole_input(layer)[axis]
        (sy, sx), (dy, dx) = layer.stride, layer.dilation
        shift = {"Y": sy, "S": dy, "X": sx, "R": dx}[DIMS[dim]]
        count = self._looping(level)[:, dim]
        step = (self.tiles[level] * self.stacks[level])[:, dim] * shift
        union = np.minimum(extent + (count - 1) * np.minimum(extent, step), whole)
        return every / count * fp / extent * union

    def conflicts(self) -> np.ndarray:
        """``(F,)`` energy the frame bound leaves out because one loop order serves
        every tensor: at a fixed level, whatever loop is innermost, each tensor
        that depends on it and whose reloads that level decides (its lowest
        level with a loop it depends on) is reloaded at every iteration of that
        level and the ones above. The least such extra over the level's looping
        dims, summed over the fixed levels (their orders are independent).
        Level 0 is left out when the template adds loops inside its order."""
        F = self.tiles[self.n - 1].shape[0]
        extra = np.zeros(F)
        pairs = []
        for role in tensor_roles(self.frame.layer):
            rel = RELEVANT_MASK[role.kind]
            path = self.hw.holders(role.kind) + (self.n,)
            for c, p in zip(path, path[1:], strict=False):
                if c < self.first:
                    continue
                decides = np.full(F, -1)
                for lvl in range(self.n - 1, c - 1, -1):  # the lowest level with a loop the tensor depends on
                    decides = np.where(np.any(rel & (self._looping(lvl) > 1), axis=1), lvl, decides)
                if np.any(decides >= 0):
                    pairs.append((role, c, p, decides, _pair_energy(self, role, c, p)))
        for lvl in range(self.first, self.n):
            if lvl == 0 and np.any(self.inner > 1):
                continue
            looping = self._looping(lvl) > 1
            least = np.full(F, np.inf)
            known: dict[tuple[int, int], np.ndarray] = {}  # (pair, dim or -1 where no window slides): extra
            for d in range(len(DIMS)):
                if not looping[:, d].any():
                    continue
                more = np.zeros(F)
                for i, (role, c, p, decides, plain) in enumerate(pairs):
                    mine = decides == lvl
                    if not RELEVANT_MASK[role.kind][d] or not mine.any():
                        continue
                    key = (i, d if role.kind == Kind.IFM and WINDOW_AXIS[d] >= 0 else -1)
                    if key not in known:
                        self._regime = (c, lvl, d)
                        try:
                            reloaded = _pair_energy(self, role, c, p)
                        finally:
                            self._regime = None
                        known[key] = np.where(mine, np.maximum(reloaded - plain, 0.0), 0.0)
                    more = more + known[key]
                least = np.where(looping[:, d], np.minimum(least, more), least)
            extra = extra + np.where(np.isfinite(least), least, 0.0)
        return extra


def _moved(kind: Kind, block: np.ndarray, above: np.ndarray, step: np.ndarray, layer: Layer,
           fp: np.ndarray, extents: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``(F,)`` words of ``kind`` the model charges at least for ``block`` (its
    footprint ``fp`` and input ``extents``) under loops of ``above`` counts
    moving it by at least ``step``: each distinct block once, an input's rows
    and columns at least as a sliding loop counts them."""
    if kind != Kind.IFM:
        return fp * np.prod(np.where(RELEVANT_MASK[kind], above, 1), axis=1)
    col = DIM_INDEX
    rows, cols = extents
    plain = fp / (rows * cols) * above[:, col["N"]] * above[:, col["G"]] * above[:, col["C"]]
    (sy, sx), (dy, dx) = layer.stride, layer.dilation
    full_rows, full_cols = whole_input(layer)
    out = plain
    for w, o, t, stride, dilation, whole in ((rows, "Y", "S", sy, dy, full_rows), (cols, "X", "R", sx, dx, full_cols)):
        moves = (above[:, col[o]], above[:, col[t]])
        steps = (step[:, col[o]] * stride, step[:, col[t]] * dilation)
        out = out * np.minimum(moves[0] * moves[1] * w, _slid(w, moves, steps, whole))
    return out


__all__ = ["Bound", "SLACK", "frame_bound", "partial_bounds"]
