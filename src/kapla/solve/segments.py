"""Inter-layer structure: candidate segments and their node regions (TANGRAM Sec. 3.2-3.3).

Layers are taken in topological order. A *segment* is a run of consecutive
layers that execute together; its layers are grouped into *slots* (a CONV/FC
layer starts a slot, and a pooling or element-wise layer joins the slot of
the producer it follows), each slot on its own block of nodes.

A layer may join a segment only if it shares a data dependency with it: it
consumes the output of a layer already in the segment, or it reads the same
off-chip input as one (GoogLeNet's inception branches). A layer whose output
is consumed both inside and outside the segment must also write it to DRAM;
TANGRAM allows at most one such outside consumer (LSTM cells, training).

Regions are sized by each slot's share of the operations, in multiples of a
common stripe height, and laid out as zig-zag stripes over the node array.
"""

from __future__ import annotations

from dataclasses import dataclass

from kapla.dataflow.segment import Region
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
    """Group a segment's layers into slots: weight layers start one, others follow their producer."""
    slots: list[list[str]] = []
    slot_of: dict[str, int] = {}
    inside = set(layers)
    for name in layers:
        layer = net[name]
        producers = [p for p in net.producers(name) if p in inside]
        joins = None
        if not layer.has_weights and len(producers) == 1:
            p = producers[0]
            i = slot_of[p]
            # only at the end of the producer's slot, and only if nothing else reads the producer here
            others = [c for c in net.consumers(p) if c in inside and c != name]
            if slots[i][-1] == p and not others:
                joins = i
        if joins is None:
            slots.append([name])
            slot_of[name] = len(slots) - 1
        else:
            slots[joins].append(name)
            slot_of[name] = joins
    return tuple(tuple(s) for s in slots)


def segment_plans(net: Network, max_layers: int = 5) -> list[list[SegmentPlan]]:
    """For each layer index ``j`` (topological order), the candidate segments ending at it."""
    order = [layer.name for layer in net]
    ends: list[list[SegmentPlan]] = [[] for _ in order]
    for i in range(len(order)):
        ends[i].append(SegmentPlan((order[i],), ((order[i],),)))
        for j in range(i + 1, min(i + max_layers, len(order))):
            members = order[i: j + 1]
            if not _joins(net, order[j], set(order[i:j])):
                break
            if _outputs_ok(net, members):
                plan = tuple(members)
                ends[j].append(SegmentPlan(plan, slots_of(net, plan)))
    return ends


def _joins(net: Network, name: str, segment: set[str]) -> bool:
    producers = set(net.producers(name))
    if producers & segment:
        return True
    outside = producers - segment
    return any(outside & set(net.producers(other)) for other in segment)


def _outputs_ok(net: Network, members: list[str]) -> bool:
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
    height, width = array
    if len(slots) == 1:
        return (Region((0, 0), array),)
    ops = [max(slot_ops(net, s), 1) for s in slots]
    for rows in sorted((d for d in range(1, height + 1) if height % d == 0), reverse=True):
        stripes = height // rows
        columns = stripes * width  # stripe-columns available, each of `rows` nodes
        if len(slots) > columns:
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


def layer_region_share(net: Network, layer: Layer, slots: tuple[tuple[str, ...], ...]) -> float:
    """The fraction of the segment's operations in ``layer``'s slot (for reports)."""
    total = sum(slot_ops(net, s) for s in slots)
    for s in slots:
        if layer.name in s:
            return slot_ops(net, s) / total if total else 0.0
    return 0.0


__all__ = ["SegmentPlan", "allocate_regions", "segment_plans", "slots_of"]
