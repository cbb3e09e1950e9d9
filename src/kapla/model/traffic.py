"""Data movement of loop nests: words read and written per level and tensor, bus
words and NoC word-hops (KAPLA Sec. III-B: sizes from ``tensor``, parallelism
from ``stack``, access counts from ``update`` and ``tensor`` together).

Each tensor is kept by a chain of levels (those that hold it), DRAM last; a
level that does not hold it is bypassed. Along the chain, per pair of
consecutive holders, a *child* below and its *parent* above:

* a child unit re-loads its block whenever a temporal loop above it that the
  tensor depends on advances, and for every iteration of the loops enclosing
  that one; when the advancing loop slides an input window (``Y``/``X``/
  ``S``/``R`` of an input fmap), only the new rows or columns come in;
* the parent reads what the child units inside one of its units need at each
  step once: units stacked over dimensions the tensor does not depend on
  share one (multicast) read, and overlapping windows of neighbours are read
  once; such a group never spans more of a dimension than the layer has;
* an output block is written back each time it is evicted and read back for
  every later visit (``2f - 1`` transfers for ``f`` evictions); partial sums
  of units stacked over reduced dimensions are combined before they reach
  the parent (``reduced`` words, combined between neighbour units);
* with buffer sharing (``shr``) a group of units stores one copy; each unit
  gets ``1/shr`` of its block from the parent and the rest from neighbours
  (``rotated`` words: a read and a write each).

A stack's units lying wholly beyond the layer (which a valid nest never has;
another tool's scheme may) get no work and move no data
(:func:`kapla.model.rules.used_units`).

Below the innermost holder the datapath reads operands: one read of each
input and a read and a write of the output per operation at level 0; from a
holder further out, once per group of units that share the operand.

Levels count accesses as nn_dataflow does: level 0 (the PE registers) only
for the datapath (and systolic neighbour hops), every other level for what
it serves, what fills it and what it writes back. A bus carries every word
delivered into its level's units (a systolic array's bus only what enters
or leaves the array); the NoC carries the node level's traffic with DRAM
over the mean distance to the nearest channel (every receiving node pays:
multicast trees are not modelled) and one hop per rotated or reduced word.

A layer inside a segment (:class:`~kapla.model.feed.Feed`) changes the top of
the chain: a forwarded input is read from the node buffers (once per word
they serve together, whatever the DRAM convention) and crosses the NoC from
its producer, an output kept on chip stays in the node buffers (not counted
there when the buffer counts only its PE side), pinned weights cost nothing
there. Such data sit in the node buffers even where a scheme's node level
bypasses them, and the buses below deliver them like any other data: pinned
weights streamed past the node level are read from the node buffers once per
word their units use together, as a forwarded input is (but under
nn_dataflow's counting, :attr:`~kapla.model.feed.Feed.free_bypassed_pins`).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np

from kapla.dataflow.tensors import DIMS, RELEVANT_MASK, WINDOW_AXIS, Kind, footprints, ifm_extents, whole_input
from kapla.model.feed import Feed
from kapla.model.hardware import Hardware, mean_channel_distance
from kapla.model.nests import Nests
from kapla.model.rules import used_sharers, used_units


@dataclass(frozen=True, eq=False)
class Traffic:
    """Words moved by ``M`` nests, per level (on-chip levels then DRAM) and role.

    ``reads`` / ``writes``: ``(levels + 1, R, M)``; ``bus``: words delivered
    into each level's units over its bus ``(levels, R, M)``; ``bus_side``: the
    words the level above puts on that bus (multicast once), for its time;
    ``hops``: NoC word-hops ``(R, M)``; ``top_reads``: the parent-side reads of
    each role's outermost boundary ``(R, M)`` (what the feed rule checks).
    """

    reads: np.ndarray
    writes: np.ndarray
    bus: np.ndarray
    bus_side: np.ndarray
    hops: np.ndarray
    top_reads: np.ndarray
    flows: dict[tuple[int, int], Flow]  # (role, child level) -> that boundary's words


@dataclass(frozen=True, eq=False)
class Flow:
    """Words of one tensor between a holder (``child``) and the next one out, all
    units together, ``(M,)`` each: ``fills`` into the child buffers (outputs:
    partial sums read back), ``parent_reads`` serving them (multicast once),
    ``writebacks`` out of them and ``parent_writes`` after reduction (outputs),
    ``rotated`` between sharing units, ``reduced`` combined between units."""

    child: int
    parent: int
    fills: np.ndarray | float
    parent_reads: np.ndarray | float
    writebacks: np.ndarray | float
    parent_writes: np.ndarray | float
    rotated: np.ndarray | float
    reduced: np.ndarray | float


class _Blocks:
    """Footprints of the nests' blocks, worked out once per factor combination."""

    def __init__(self, nests: Nests, kinds: tuple[Kind, ...]) -> None:
        self.nests, self.kinds = nests, kinds
        self.cache: dict = {}
        self.whole = whole_input(nests.layer)

    def get(self, child: int, upto: int | None = None) -> tuple[dict, np.ndarray | None, np.ndarray | None]:
        """Per candidate: footprints by kind, input rows and columns of the block of
        ``child`` (``upto``: its group inside one unit of that level)."""
        key = (child, upto)
        if key not in self.cache:
            n = self.nests
            block = n.tiles[child] if upto is None else n.group(child, upto)
            rows = cols = extents = None
            if Kind.IFM in self.kinds:
                extents = ifm_extents(block, n.layer)
                rows, cols = extents[0][n.rows], extents[1][n.rows]
            fp = footprints(block, n.layer, self.kinds, extents)
            self.cache[key] = ({k: v[n.rows] for k, v in fp.items()}, rows, cols)
        return self.cache[key]


@dataclass(frozen=True, eq=False)
class _Sweep:
    """How loops (outermost first) reload a tensor's blocks: the product of the
    innermost looping loop it depends on and every loop enclosing it
    (``upto``), and the distinct blocks the loops visit."""

    has: np.ndarray
    upto: np.ndarray
    distinct: np.ndarray
    slides: np.ndarray | None  # the last loop moves an input window
    axis: np.ndarray | None
    count: np.ndarray | None
    step: np.ndarray | None  # how far the window moves per iteration


class _Loops:
    """The nests' temporal loops as the sweeps read them, level by level (a
    level's loops outermost first), each piece worked out once per call of
    :func:`traffic`."""

    def __init__(self, nests: Nests) -> None:
        self.nests = nests
        self.cache: dict = {}

    def innermost(self, kind: Kind, level: int) -> tuple[np.ndarray, np.ndarray]:
        """Per nest, whether a loop of ``level`` iterates and matters to ``kind``,
        and the column of the innermost one (``(M,)`` each)."""
        key = ("innermost", kind, level)
        if key not in self.cache:
            sweeping = _ITERATES_OVER[kind][self.iterating(level)]
            width = sweeping.shape[1]
            if width <= _PACKED_COLUMNS:
                # one bit per column, exact in a float: the innermost is the highest set bit
                packed = sweeping @ (1 << np.arange(width, dtype=np.int64))
                self.cache[key] = (packed > 0, np.frexp(packed)[1].astype(np.int64) - 1)
            else:
                self.cache[key] = (sweeping.any(axis=1), width - 1 - np.argmax(sweeping[:, ::-1], axis=1))
        return self.cache[key]

    def iterating(self, level: int) -> np.ndarray:
        """``(M, w)`` the dim of each of ``level``'s loops that iterates, ``ND`` for those that do not."""
        key = ("iterating", level)
        if key not in self.cache:
            up = self.nests.updates[level]
            self.cache[key] = np.where(up.counts > 1, up.dims, ND)
        return self.cache[key]

    def running(self, level: int) -> np.ndarray:
        """``(M, w)`` running products of ``level``'s loop counts, outermost first."""
        key = ("running", level)
        if key not in self.cache:
            self.cache[key] = np.cumprod(self.nests.updates[level].counts, axis=1)
        return self.cache[key]

    def outer(self, level: int) -> np.ndarray:
        """``(F,)`` iterations of every loop of the levels above ``level``."""
        key = ("outer", level)
        if key not in self.cache:
            self.cache[key] = np.prod(self.nests.temporal_above(level + 1), axis=1)
        return self.cache[key]

    def reach(self, level: int) -> np.ndarray:
        """``(F, 8)`` what one pass of ``level``'s units covers: its loops advance by it."""
        return self.nests.nominal_tiles[level] * self.nests.spatial[level]


def _sweep(kind: Kind, nests: Nests, level: int, shift: np.ndarray, loops: _Loops) -> _Sweep:
    """How the loops above ``level`` reload ``kind``'s blocks there. What does
    not depend on their order (the distinct blocks, whether any relevant loop
    iterates) is worked out per factor combination; the innermost loop that
    iterates and matters is looked for level by level, innermost first (the
    loops above a level are its own and those of the levels above it)."""
    M = len(nests)
    relevant = np.where(RELEVANT_MASK[kind], nests.temporal_above(level), 1)
    # (the array method: numpy's function wrapper costs more than this small reduction)
    distinct = relevant.prod(axis=1)[nests.rows]
    has = np.any(relevant > 1, axis=1)[nests.rows]  # a loop of one iteration changes nothing
    if not has.any():
        return _Sweep(has, np.ones(M, np.int64), distinct, None, None, None, None)
    here, col = loops.innermost(kind, level)
    groups: list[tuple[int, np.ndarray | None, np.ndarray]]
    if not (has & ~here).any():
        # the usual case: the level's own loops hold the innermost one of every nest that reloads
        # (the others' values are masked below)
        groups = [(level, None, col)]
    else:
        found = here.copy()
        at_level, column = np.where(here, level, -1), col.copy()
        for lvl in range(level + 1, nests.levels):
            if found.all():
                break
            here, col = loops.innermost(kind, lvl)
            new = here & ~found
            at_level[new], column[new] = lvl, col[new]
            found |= here
        has_loop = has & found  # (not so only where some count is below one: an invalid nest)
        groups = []
        for lvl in range(level, nests.levels):
            picked = np.nonzero(has_loop & (at_level == lvl))[0]
            if len(picked):
                groups.append((lvl, picked, column[picked]))
    is_ifm = kind == Kind.IFM
    if groups[0][1] is not None:
        upto = np.ones(M, dtype=np.int64)
        dim, count, step = np.zeros(M, dtype=np.int64), np.ones(M, dtype=np.int64), np.zeros(M, dtype=np.int64)
    for lvl, sel, last in groups:
        up = nests.updates[lvl]
        width = up.dims.shape[1]
        nest: np.ndarray = np.arange(M) if sel is None else sel
        at = nest * width + last  # the last loop's place in the level's (M, w) arrays, flat
        f = nests.rows[nest]
        value = loops.outer(lvl)[f] * loops.running(lvl).reshape(-1)[at]
        if is_ifm:
            d = up.dims.reshape(-1)[at]
            n = up.counts.reshape(-1)[at]
            # a loop advances by the level's reach times the loops of its dim inside it: none
            # of those iterates, or it would be the innermost that matters
            by = loops.reach(lvl).reshape(-1)[f * ND + d]
        if sel is None:
            upto = np.where(has, value, 1)
            if is_ifm:
                dim, count, step = d, n, by
        else:
            upto[sel] = value
            if is_ifm:
                dim[sel], count[sel], step[sel] = d, n, by
    slides = axis = None
    if is_ifm:
        axis = WINDOW_AXIS[dim]
        slides = has & (axis >= 0)
        if slides.any():
            step = step * shift[dim]
        else:
            slides = None
    return _Sweep(has, upto, distinct, slides, axis, count if slides is not None else None,
                  step if slides is not None else None)


_PACKED_COLUMNS = 52  # a level's loops up to which their flags pack into a float's mantissa

ND = len(DIMS)
#: Per kind, by dim (``ND``: a loop that does not iterate): 1 where it reloads the tensor's blocks.
_ITERATES_OVER = {k: np.append(mask, False).astype(np.int64) for k, mask in RELEVANT_MASK.items()}


def _volume(kind: Kind, sw: _Sweep, block, whole: tuple[int, int]) -> np.ndarray:
    """Words loaded to keep a block current through the sweep's loops (``(M,)``)."""
    fp, in_rows, in_cols = block
    fp = fp[kind]
    vol = (sw.upto * fp).astype(float)
    if sw.slides is not None:
        assert sw.axis is not None and sw.count is not None and sw.step is not None  # set with slides
        extent = np.where(sw.axis == 0, in_rows, in_cols)
        union = np.minimum(extent + (sw.count - 1) * np.minimum(extent, sw.step),
                           np.where(sw.axis == 0, whole[0], whole[1]))
        vol = np.where(sw.slides, (sw.upto // sw.count) * fp / extent * union, vol)
    return vol


def _crossing(kind: Kind, sw: _Sweep, blocks: _Blocks, c: int, units: list[np.ndarray], written: bool, cp: int,
              j: int) -> np.ndarray:
    """Words crossing into the units of level ``j`` from holder ``c`` (``c < j``), all units."""
    vol = _volume(kind, sw, blocks.get(c, j), blocks.whole)
    if not written:
        return units[j] * vol * cp
    fp = blocks.get(c, j)[0][kind]
    return units[j] * (2 * vol - _first_writes(sw, vol, fp)) * cp


def _first_writes(sw: _Sweep, vol: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """Of a written tensor's ``vol`` words written back through the sweep, those
    written for the first time (not read back before): its distinct blocks. Where
    the sweep slides a window (a data gradient is written with the input's halo),
    consecutive blocks overlap, which shrinks the first writes as it shrinks
    ``vol``: a share ``distinct / upto`` of it, never more than it is."""
    first = sw.distinct * fp
    if sw.slides is None:
        return first
    return np.where(sw.slides, vol * sw.distinct / sw.upto, first)


def traffic(nests: Nests, hw: Hardware, feed: Feed | None = None) -> Traffic:
    """Words moved by every nest of ``nests`` on ``hw`` (see the module docstring)."""
    n = hw.onchip
    M = len(nests)
    rows = nests.rows
    roles = nests.roles
    R = len(roles)
    layer = nests.layer
    reads = np.zeros((n + 1, R, M))
    writes = np.zeros((n + 1, R, M))
    bus = np.zeros((n, R, M))
    bus_side = np.zeros((n, R, M))
    hops = np.zeros((R, M))
    top_reads = np.zeros((R, M))
    flows: dict[tuple[int, int], Flow] = {}
    blocks = _Blocks(nests, tuple(dict.fromkeys(r.kind for r in roles)))
    sy, sx = layer.stride
    dy, dx = layer.dilation
    # the shift of an input window per step of each loop dim (Y/X: stride; S/R: dilation)
    shift = np.array([sy, dy, sx, dx, 0])[np.array([{"Y": 0, "S": 1, "X": 2, "R": 3}.get(d, 4)
                                                     for d in "NGCKYXSR"])]
    units = [u.astype(float) for u in used_units(nests)]
    trips = nests.trips[rows].astype(float)
    node = hw.node
    # without a node level no pair of holders spans one
    node_at = n if node is None else node
    distance = _distance(nests, hw, feed)
    loops = _Loops(nests)

    for r, role in enumerate(roles):
        kind, cp, written = role.kind, role.copies, role.written
        chain = hw.holders(kind, nests.bypass)
        first = chain[0] if chain else n

        # ---- the datapath and the innermost holder
        per_op = float(nests.ops * cp)
        if first == 0:
            reads[0, r] += per_op
            if written:
                writes[0, r] += per_op
        else:
            # operands served from further out: once per group of units sharing them
            spread = np.prod(np.stack([nests.parallelism[i] for i in range(first)]), axis=0)[rows]
            share = blocks.get(-1, first)[0][kind] / spread
            reads[first, r] += per_op * share
            if written:
                writes[first, r] += per_op * share
            for j in range(first):
                if hw.levels[j].bus is None:
                    continue
                into = units[j] * trips * blocks.get(-1, j)[0][kind] * cp
                out = units[j + 1] * trips * blocks.get(-1, j + 1)[0][kind] * cp
                bus[j, r] += into
                bus_side[j, r] += out

        # ---- each pair of consecutive holders, DRAM last
        path = chain + (n,)
        for c, p in itertools.pairwise(path):
            sw = _sweep(kind, nests, c, shift, loops)
            vol_c = _volume(kind, sw, blocks.get(c), blocks.whole)

            # flow(j): words crossing into the units of level ``j`` (``c < j <= p``)
            flow = functools.partial(_crossing, kind, sw, blocks, c, units, written, cp)

            fp_c = blocks.get(c)[0][kind]
            shared = nests.shr[c].get(kind)
            shr = 1.0 if shared is None else shared[rows].astype(float)
            if written:
                writebacks = units[c] * vol_c * cp
                fills = writebacks - units[c] * _first_writes(sw, vol_c, fp_c) * cp
                vol_p = _volume(kind, sw, blocks.get(c, p), blocks.whole)
                parent_writes = units[p] * vol_p * cp
                parent_reads = parent_writes - units[p] * _first_writes(sw, vol_p, blocks.get(c, p)[0][kind]) * cp
                reduced = writebacks - parent_writes
                rotated = 0.0
                delivered = fills + writebacks
                parent_side = parent_reads + parent_writes
            else:
                fills = units[c] * vol_c * cp
                vol_p = _volume(kind, sw, blocks.get(c, p), blocks.whole)
                parent_reads = units[p] * vol_p * cp
                parent_writes = 0.0
                rotated = fills * (shr - 1) / shr
                reduced = 0.0
                writebacks = 0.0
                delivered = fills
                parent_side = parent_reads
            spans_node = c <= node_at < p
            # words entering the node buffers (a sharing group gets one copy)
            into_nodes = (fills / shr if c == node_at else flow(node_at)) if spans_node and not written else 0.0
            if p == n:
                # what on-chip data may be read is a rule about the data, not about how they are counted
                top_reads[r] = parent_reads
                if spans_node and not written and hw.per_node_dram:
                    parent_reads = into_nodes  # every node fetches its own copy
                    group = nests.shr[node_at].get(kind)
                    if c < node_at and group is not None and not (feed is not None
                                                                  and _stays_on_chip(kind, written, feed)):
                        # but a sharing group fetches one copy between its nodes, even of
                        # data the node buffers bypass (nn_dataflow's access forwarding;
                        # only an imported scheme shares what it bypasses)
                        parent_reads = into_nodes / np.minimum(group[rows], used_sharers(nests, node_at, kind))
                        # that copy comes over the NoC, the rest from a neighbour, one hop a word
                        hops[r] += into_nodes - parent_reads
                        into_nodes = parent_reads
                elif spans_node and written and hw.psums_through_dram:
                    reads_in, writes_out = _node_partial_sums(kind, sw, blocks, c, node_at, units[node_at], cp)
                    # only what the PEs of one node combine is reduced before it goes out
                    reduced = reduced + parent_writes - writes_out
                    parent_reads, parent_writes = reads_in, writes_out
                    parent_side = parent_reads + parent_writes
            flows[(r, c)] = Flow(c, p, fills, parent_reads, writebacks, parent_writes, rotated, reduced)

            if spans_node:
                if c == node_at:
                    hops[r] += rotated + reduced
                elif written:  # partial sums combined between nodes on their way out
                    hops[r] += np.maximum(flow(node_at) - parent_side, 0.0) / 2
            onchip = feed is not None and p == n and _stays_on_chip(kind, written, feed)
            share = 0.0  # of the words at the top, those on chip
            if onchip:
                assert feed is not None
                # of an input forwarded in part, the rest comes from DRAM as any input does
                share = feed.ifm_share if kind == Kind.IFM and not written else 1.0
                if not (kind == Kind.WGT and not written):  # pinned weights: nothing at the top
                    # read from (or left in) the node buffers, even where the scheme has the
                    # node level bypass them, once per word they serve together (as the data
                    # rule reads them: on-chip data are not fetched per node); a forwarded
                    # input crosses the NoC
                    at = c if node is None else node
                    if not written:
                        forwarded = top_reads[r] if share == 1.0 else share * top_reads[r]
                        reads[at, r] += forwarded
                        hops[r] += forwarded * feed.ifm_hops
                    elif not hw.gbuf_pe_side:  # what stays for the consumers is not served to the PEs
                        reads[at, r] += parent_reads
                        writes[at, r] += parent_writes
                elif node is not None and c < node and not feed.free_bypassed_pins:
                    # pinned weights live in the node buffers: a scheme whose node level bypasses
                    # them still reads each word it fetches from the buffer that holds it (once per
                    # word its units use together, as the data rule reads them); held there, the
                    # node level's own reads serve them (nn_dataflow counts no read at all: its
                    # imported schedules are costed so, :attr:`Feed.free_bypassed_pins`)
                    reads[node, r] += top_reads[r]
            if not onchip or share < 1.0:
                part = 1.0 - share  # 1.0 unless forwarded in part (kept exact: no copies of the arrays)
                reads[p, r] += parent_reads if part == 1.0 else part * parent_reads
                writes[p, r] += parent_writes if part == 1.0 else part * parent_writes
                if c > 0 and not (c == node and hw.gbuf_pe_side):
                    # a buffer above the registers: what it serves, what fills it, what it writes back
                    writes[c, r] += (fills + reduced) if part == 1.0 else part * (fills + reduced)
                    served = writebacks + rotated + reduced
                    reads[c, r] += served if part == 1.0 else part * served
                if spans_node:
                    hops[r] += (parent_side if written else into_nodes) * (distance if part == 1.0
                                                                           else part * distance)
            # the buses between the two holders (for on-chip data: below the node level)
            for j in range(c, p):
                lvl = hw.levels[j]
                if lvl.bus is None:
                    continue
                side = parent_side if j + 1 == p else flow(j + 1)
                if j == 0 and hw.systolic:
                    # words enter and leave at the array's edges; the rest hop between
                    # neighbour PEs, one register write each
                    into = delivered if j == c else flow(j)
                    bus[j, r] += side
                    writes[0, r] += np.maximum(into - side, 0.0)
                else:
                    bus[j, r] += delivered if j == c else flow(j)
                bus_side[j, r] += side
    return Traffic(reads, writes, bus, bus_side, hops, top_reads, flows)


def _node_partial_sums(kind: Kind, sw: _Sweep, blocks: _Blocks, c: int, node: int, nodes: np.ndarray,
                       cp: int) -> tuple[np.ndarray, np.ndarray]:
    """Partial sums all nodes read back and write out, each its own (nn_dataflow's
    convention: nodes splitting a reduction do not combine): ``(reads, writes)``."""
    block = blocks.get(c, node) if c < node else blocks.get(c)
    vol = _volume(kind, sw, block, blocks.whole)
    writes = nodes * vol * cp
    return writes - nodes * _first_writes(sw, vol, block[0][kind]) * cp, writes


def _stays_on_chip(kind: Kind, written: bool, feed: Feed) -> bool:
    """The tensor's top-level traffic is on chip under ``feed``."""
    if written:
        return not feed.to_dram
    if kind == Kind.IFM:
        return feed.ifm_hops is not None
    return kind == Kind.WGT and feed.pinned


def _distance(nests: Nests, hw: Hardware, feed: Feed | None) -> np.ndarray | float:
    """Mean hops from each candidate's nodes to their nearest DRAM channel."""
    if hw.node is None:
        return 0.0
    if feed is not None and feed.dram_hops is not None:
        return float(feed.dram_hops)
    g_rows, g_cols = nests.stacks[hw.node].grid()
    g_rows, g_cols = np.broadcast_arrays(np.asarray(g_rows, dtype=np.int64), np.asarray(g_cols, dtype=np.int64))
    uniq, inv = np.unique(g_rows * (1 << 32) + g_cols, return_inverse=True)  # one number per grid
    vals = np.array([mean_channel_distance(hw.channels, (0, 0), (int(v) >> 32, int(v) & 0xFFFFFFFF)) for v in uniq])
    return vals[inv.reshape(-1)][nests.rows]


__all__ = ["Flow", "Traffic", "traffic"]
