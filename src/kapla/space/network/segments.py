"""Inter-layer structure: candidate segments and their node regions (TANGRAM Sec. 3.2-3.3).

A *segment* is a run of layers, consecutive in a topological order, that
execute together; its layers are grouped into *slots*, the pipeline
stages, each on its own block of nodes (:func:`slots_of`). A
segment may hold at most ``max_stages`` slots: the limit counts stages, as
nn_dataflow's ``layer_pipeline_max_degree`` counts the vertices of its
scheduling DAG, so an LSTM cell (four gates and the element-wise layers that
join them) is one segment of four stages.

Segments are runs of :func:`schedule_order`, which keeps the layers of each
stage of the whole network together, as nn_dataflow orders the vertices of
its scheduling DAG. A segment's layers must share data dependencies: linked
by producer-consumer edges inside it or by an off-chip input they read in
common (GoogLeNet's inception branches), whichever layer of the run makes the
link (a shortcut convolution joins a ResNet block through the addition after
it). A layer whose output is consumed both inside and outside the segment
must also write it to DRAM; TANGRAM allows at most one such outside consumer
(LSTM cells, training).

Regions are sized by each slot's share of the operations in one of two ways,
and the network search tries both: rectangles of whole columns of a common
stripe height, laid out stripe after stripe in zig-zag order
(:func:`allocate_regions`), or any multiple of a unit node count, each
region a run of columns along a zig-zag path folded across the array's
width, as nn_dataflow allocates (:func:`fold_regions`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from kapla.dataflow.segment import AnyRegion, FoldedRegion, Region
from kapla.workload.layer import Layer
from kapla.workload.network import Network


@dataclass(frozen=True)
class SegmentPlan:
    """Which layers run together and how they are grouped into slots."""

    layers: tuple[str, ...]
    slots: tuple[tuple[str, ...], ...]

    def __len__(self) -> int:
        return len(self.layers)


def slots_of(net: Network, layers: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """Group a segment's layers into slots, as nn_dataflow merges layers into
    the vertices of its scheduling DAG.

    A layer with weights starts a slot. A weightless layer (pooling,
    element-wise) joins the latest slot that ends with one of its producers,
    provided no other producer of it is earlier in that slot (that fmap would
    be gone from the region by then) and the producer feeds no other layer of
    the segment (the slot runs the layer right after it, on its data); else
    it starts a slot. nn_dataflow asks the producer to feed no other layer of
    the whole network: kapla writes an output that leaves the segment to DRAM
    anyway (:func:`kapla.space.network.inter.writes_dram`), so it need not give up the
    merge for a consumer outside the segment.
    """
    slots: list[list[str]] = []
    inside = set(layers)
    for name in layers:
        joins = None
        if not net[name].has_weights:
            producers = set(net.producers(name))
            for i in reversed(range(len(slots))):
                *head, tail = slots[i]
                others = [c for c in net.consumers(tail) if c in inside and c != name]
                if tail in producers and not producers.intersection(head) and not others:
                    joins = i
                    break
        if joins is None:
            slots.append([name])
        else:
            slots[joins].append(name)
    return tuple(tuple(s) for s in slots)


def schedule_order(net: Network) -> tuple[str, ...]:
    """The network's layers in the order segments are cut from: the slots of
    the whole network (nn_dataflow's vertices) each kept together, in
    topological order, ties broken by the network's own order.

    A segment is a run of this order, so a stage is never split by a layer
    of another that the network happens to list between its layers (an LSTM
    lists its four gates before the element-wise layers that join them).
    """
    names = tuple(layer.name for layer in net)
    stages = slots_of(net, names)
    stage_of = {name: v for v, members in enumerate(stages) for name in members}
    feeds: list[set[int]] = [set() for _ in stages]
    waits = [0] * len(stages)
    for v, members in enumerate(stages):
        before = {stage_of[p] for name in members for p in net.producers(name) if p in stage_of} - {v}
        waits[v] = len(before)
        for u in before:
            feeds[u].add(v)
    # stages are numbered by their first layer, so the smallest ready number keeps the network's order where it can
    ready = [v for v, w in enumerate(waits) if not w]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        v = heapq.heappop(ready)
        order.extend(stages[v])
        for u in feeds[v]:
            waits[u] -= 1
            if not waits[u]:
                heapq.heappush(ready, u)
    assert len(order) == len(names), "the stages of a DAG form a DAG"
    return tuple(order)


def segment_plans(net: Network, max_stages: int = 5) -> list[list[SegmentPlan]]:
    """For each position ``j`` of :func:`schedule_order`, the candidate segments
    ending at it, each of at most ``max_stages`` slots."""
    order = schedule_order(net)
    ends: list[list[SegmentPlan]] = [[] for _ in order]
    for i in range(len(order)):
        ends[i].append(SegmentPlan((order[i],), ((order[i],),)))
        for j in range(i + 1, len(order)):
            plan = order[i: j + 1]
            slots = slots_of(net, plan)
            # a layer added to a run never lowers its slot count: longer runs have too many as well
            if len(slots) > max_stages:
                break
            if _linked(net, plan) and _outputs_ok(net, plan):
                ends[j].append(SegmentPlan(plan, slots))
    return ends


def _linked(net: Network, members: tuple[str, ...]) -> bool:
    """The layers form one group by producer-consumer edges between them and
    off-chip inputs they read in common: co-locating unrelated layers gains nothing."""
    inside = set(members)
    group = {name: name for name in members}

    def root(name: str) -> str:
        while group[name] != name:
            name = group[name]
        return name

    readers: dict[str, str] = {}
    for name in members:
        for p in net.producers(name):
            other = p if p in inside else readers.setdefault(p, name)
            group[root(name)] = root(other)
    return len({root(name) for name in members}) == 1


def _outputs_ok(net: Network, members: tuple[str, ...]) -> bool:
    """An output used inside the segment may also leave it for at most one outside consumer."""
    inside = set(members)
    for name in members:
        consumers = set(net.consumers(name))
        if consumers & inside and len(consumers - inside) > 1:
            return False
    return True


MIN_REGION_UTILISATION = 0.5  # a stripe height leaving the regions less busy than this gives way to a thinner one


def slot_ops(net: Network, slot: tuple[str, ...]) -> int:
    return sum(net[name].loop_ops for name in slot)


def allocate_regions(net: Network, slots: tuple[tuple[str, ...], ...],
                     array: tuple[int, int]) -> tuple[Region, ...] | None:
    """Blocks of nodes for the slots, sized by their operations; None if they cannot all fit.

    Each slot gets a whole number of stripes' worth of columns: ``rows`` is the
    largest divisor of the array height that leaves every slot at least one
    column and keeps the rounding loss small; regions then fill the stripes
    left to right, then right to left (TANGRAM's zig-zag), each a rectangle.
    """
    if len(slots) == 1:
        return (Region((0, 0), array),)
    return _allocation(tuple(max(slot_ops(net, s), 1) for s in slots), array)


@lru_cache(maxsize=1 << 14)  # a deep network's segments repeat a few op counts (ResNet-1001: 7,000 allocations)
def _allocation(ops: tuple[int, ...], array: tuple[int, int]) -> tuple[Region, ...] | None:
    height, width = array
    for rows in sorted((d for d in range(1, height + 1) if height % d == 0), reverse=True):
        stripes = height // rows
        columns = stripes * width  # stripe-columns available, each of `rows` nodes
        if len(ops) > columns:
            continue
        share = [max(1, round(o / sum(ops) * columns)) for o in ops]
        while sum(share) > columns:
            share[share.index(max(share))] -= 1
        while sum(share) < columns:
            worst = max(range(len(ops)), key=lambda i: ops[i] / share[i])
            share[worst] += 1
        if min(share) < 1:
            continue
        utilisation = sum(ops) / (max(o / s for o, s in zip(ops, share, strict=True)) * sum(share))
        if utilisation < MIN_REGION_UTILISATION and rows > 1:
            continue
        placed = _place(share, rows, height, width)
        if placed is not None:
            return placed
    return None


def _place(share: list[int], rows: int, height: int, width: int) -> tuple[Region, ...] | None:
    """Lay the slots' column counts along zig-zag stripes; a slot must stay in one stripe."""
    regions = []
    stripe, col = 0, 0
    for cols in share:
        if cols > width:
            return None
        if col + cols > width:
            stripe, col = stripe + 1, 0
        if (stripe + 1) * rows > height:
            return None
        start = col if stripe % 2 == 0 else width - col - cols
        regions.append(Region((stripe * rows, start), (rows, cols)))
        col += cols
    return tuple(regions)


FOLD_UTILISATION = 0.95  # the tallest stripe whose counts keep the regions this busy is chosen


def fold_regions(net: Network, slots: tuple[tuple[str, ...], ...],
                 array: tuple[int, int]) -> tuple[AnyRegion, ...] | None:
    """The slots on folded regions sized by their operations (:func:`fold_allocation`)."""
    return fold_allocation([slot_ops(net, s) for s in slots], array)


def fold_allocation(ops: Sequence[int], array: tuple[int, int]) -> tuple[AnyRegion, ...] | None:
    """:func:`_fold_allocation` (kept: a deep network's segments repeat a few op counts)."""
    return _fold_allocation(tuple(ops), array)


@lru_cache(maxsize=1 << 14)
def _fold_allocation(ops: tuple[int, ...], array: tuple[int, int]) -> tuple[AnyRegion, ...] | None:
    """Node counts in proportion to ``ops`` (one per slot), laid out as folded
    regions one after another along one zig-zag path over the whole array
    (:class:`~kapla.dataflow.segment.FoldedRegion`); None for one slot, or more
    slots than nodes.

    Counts are multiples of a unit ``h``, a divisor of the array height:
    the tallest whose counts leave the slots at least ``FOLD_UTILISATION`` as
    busy as the busiest (else the best-balanced unit). Within a unit, columns
    go one at a time to the slot with the most operations per node, which
    minimises the slowest slot's time. The path's stripes are as tall as the
    largest divisor of the array height that divides every count (so
    regions are as compact as the counts allow); a region that does not turn
    is a plain :class:`Region`.
    """
    height, width = array
    if len(ops) < 2 or len(ops) > height * width:
        return None
    work = [max(o, 1) for o in ops]
    best: tuple[float, list[int]] | None = None
    for unit in sorted((d for d in range(1, height + 1) if height % d == 0), reverse=True):
        columns = height // unit * width
        if len(work) > columns:
            continue
        counts = [n * unit for n in _balanced(work, columns)]
        utilisation = sum(work) / (max(o / n for o, n in zip(work, counts, strict=True)) * sum(counts))
        if best is None or utilisation > best[0] + 1e-12 or utilisation >= FOLD_UTILISATION:
            best = (utilisation, counts)
        if utilisation >= FOLD_UTILISATION:
            break
    assert best is not None  # unit 1 always has a column per slot
    counts = best[1]
    stripe = math.gcd(height, *counts)
    regions: list[AnyRegion] = []
    start = 0
    for n in counts:
        region = FoldedRegion(0, stripe, width, start, n // stripe)
        regions.append(region.rectangle() or region)
        start += n // stripe
    return tuple(regions)


def _balanced(ops: Sequence[int], columns: int) -> list[int]:
    """``columns`` split among the slots, at least one each, every next one to the slot
    with the most operations per column so far (the split with the least largest ratio)."""
    share = [1] * len(ops)
    heap: list[tuple[float, int]] = [(-float(o), i) for i, o in enumerate(ops)]
    heapq.heapify(heap)
    for _ in range(columns - len(ops)):
        _, i = heapq.heappop(heap)
        share[i] += 1
        heapq.heappush(heap, (-ops[i] / share[i], i))
    return share


def layer_region_share(net: Network, layer: Layer, slots: tuple[tuple[str, ...], ...]) -> float:
    """The fraction of the segment's operations in ``layer``'s slot (for reports)."""
    total = sum(slot_ops(net, s) for s in slots)
    for s in slots:
        if layer.name in s:
            return slot_ops(net, s) / total if total else 0.0
    return 0.0


__all__ = ["SegmentPlan", "allocate_regions", "fold_allocation", "fold_regions", "schedule_order", "segment_plans",
           "slots_of"]
