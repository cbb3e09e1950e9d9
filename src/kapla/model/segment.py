"""Cost of a whole segment: its layers on their regions, pipelined.

Each layer is evaluated on its own block of nodes (:func:`region_arch`: a
rectangle cut from the array, a folded region as its stripe height x its
columns) with a :class:`~kapla.model.evaluate.Feed` derived from its
placement, its distances taken from the region's real nodes: the mean hops
to the nearest DRAM channel, and inputs forwarded from a producer region (or
passed on by a layer of the segment that read the same fmaps from DRAM) cost
NoC hops between the regions instead of DRAM traffic; outputs that stay on
chip skip DRAM, pinned weights are free.

Time: slots run concurrently and pass fmaps in ``groups`` pieces; a slot
works piece by piece (piece ``k`` of each of its layers in turn, then piece
``k + 1``), and a layer's piece waits for the same piece of every layer that
sends it data over the NoC (:func:`pipeline_time`). For a chain of slots
with times ``T_s`` that gives ``max T_s + (sum T_s - max T_s) / groups`` (the
fill and drain of the pipeline); slots that pass each other nothing (an LSTM
cell's gates, an inception module's branches) run side by side. Never less
than the DRAM time all layers need together (they share the DRAM
bandwidth). Static energy is the chip's, over that time.

A forwarded fmap waits in the buffers of the region that consumes it: one
piece of it (the whole fmap over ``groups``) must fit beside the consumer's
own blocks there.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme, dataflow_key
from kapla.dataflow.segment import AnyRegion, LayerPlacement, Region, SegmentScheme
from kapla.dataflow.tensors import Kind, footprint, layer_dims, tensor_roles
from kapla.memo import IdentityMemo
from kapla.model.evaluate import STATIC, CostTotals, Feed, LayerCost, evaluate, mean_channel_distance
from kapla.model.hardware import hardware, mean_cells_distance, node_buffer_words, node_level
from kapla.model.nests import from_schemes
from kapla.model.rules import buffer_words
from kapla.model.validity import Validity
from kapla.workload.layer import Layer


@dataclass(frozen=True)
class SegmentCost(CostTotals):
    layers: Mapping[str, LayerCost]
    validity: Validity
    energy: Mapping[str, float] = field(default_factory=dict)
    time: float = 0.0


_distances = IdentityMemo()


def dram_distance(arch: ArchSpec, region: AnyRegion) -> float:
    """Mean Manhattan hops from the nodes of ``region`` (a rectangle or folded) to their nearest DRAM
    channel; kept per spec (:class:`~kapla.memo.IdentityMemo`)."""
    known = _distances.of(arch)
    hops = known.get(region)
    if hops is None:
        if isinstance(region, Region):
            hops = mean_channel_distance(arch.dram_channel_nodes, region.origin, region.shape)
        else:
            hops = mean_cells_distance(arch.dram_channel_nodes, region.cells())
        known[region] = hops
    return hops


def region_arch(arch: ArchSpec, region: AnyRegion) -> ArchSpec:
    """The hardware block a layer on ``region`` runs on: a rectangle cut from the
    array where it lies, a folded region as its stripe height x its columns
    (:meth:`ArchSpec.with_node_block`); its distances come from the region itself
    (:func:`dram_distance`, :meth:`Region.distance`) through the layer's feed."""
    if isinstance(region, Region):
        return arch.with_node_region(*region.shape, origin=region.origin)
    return block_arch(arch, region.shape)


def block_arch(arch: ArchSpec, shape: tuple[int, int]) -> ArchSpec:
    """A block of ``shape`` nodes for a layer solve: cut at the array's corner
    where it fits there (as a rectangle is), else a block of that many nodes (folded)."""
    rows, cols = arch.node_array
    if shape[0] <= rows and shape[1] <= cols:
        return arch.with_node_region(*shape)
    return arch.with_node_block(*shape)


@lru_cache(maxsize=1 << 14)  # a network search asks for each layer's or region's many times
def output_words(layer: Layer, batch: int) -> int:
    """Words of the fmap ``layer`` writes, over the whole ``batch``."""
    dims = layer_dims(layer, batch)
    return sum(footprint(r.kind, dims, layer) * r.copies for r in tensor_roles(layer) if r.written)


def pipeline_time(slots: Sequence[Sequence[str]], times: Mapping[str, float],
                  sources: Mapping[str, Sequence[str]], groups: int) -> float:
    """When the last layer of a segment finishes: its ``slots`` run side by side,
    each working through ``groups`` pieces, piece ``k`` of each of its layers in
    turn (``times``: a layer's whole time), and a layer's piece starts once the
    same piece of each of its ``sources`` (the layers that send it data over the
    NoC) is done. A chain of slots takes ``max T + (sum T - max T) / groups``."""
    # slots and their layers in the segment's order: a layer's sources come before it
    order = [(i, name) for i, slot in enumerate(slots) for name in slot]
    at = {name: k for k, (_, name) in enumerate(order)}
    steps = [(i, times[name] / groups, [at[p] for p in sources.get(name, ()) if p in at]) for i, name in order]
    if not any(src for _, _, src in steps):  # nothing passed between slots: each runs on its own
        return max((sum(times[n] for n in slot) for slot in slots), default=0.0)
    free = [0.0] * len(slots)  # when each slot is done with what it has started
    done = [0.0] * len(order)  # when each layer finished its latest piece
    for _ in range(groups):
        for k, (i, piece, src) in enumerate(steps):
            start = free[i]
            for j in src:
                if done[j] > start:
                    start = done[j]
            free[i] = done[k] = start + piece
    return max(free, default=0.0)


@lru_cache(maxsize=1 << 14)  # a network search asks for each layer's or region's many times
def input_words(layer: Layer, batch: int) -> int:
    """Words of the fmaps ``layer`` reads, over the whole ``batch``."""
    dims = layer_dims(layer, batch)
    return sum(footprint(r.kind, dims, layer) * r.copies for r in tensor_roles(layer)
               if r.kind == Kind.IFM and not r.written)


def forwarded_words(place: LayerPlacement, layer_of: Callable[[str], Layer], batch: int) -> int:
    """Words of the fmaps that reach ``place``'s layer over the NoC, over the whole
    ``batch``: its producers' outputs, or its own input passed on by a sibling."""
    if place.onchip_inputs:
        return sum(output_words(layer_of(p), batch) for p in place.onchip_inputs)
    if place.shares_input_of is not None:
        return input_words(layer_of(place.layer), batch)
    return 0


def _free_words(scheme: LayerScheme, arch: ArchSpec, node: int) -> int:
    """Input-fmap words a node's buffer has left beside the layer's own blocks."""
    hw = hardware(arch)
    held = buffer_words(from_schemes([scheme]), hw, node)
    capacity = node_buffer_words(arch, "ifm")
    if hw.levels[node].split_bits:
        return capacity - int(held[Kind.IFM][0] if Kind.IFM in held else 0)
    used_bits = sum(int(w[0]) * hw.bits[k] for k, w in held.items())
    return capacity - -(-used_bits // hw.bits[Kind.IFM])


@dataclass
class SegmentMemo:
    """What costing many segments of one network on one chip works out again and
    again, each worked out once (one per search): a layer's cost by its scheme
    without the layer's identity, its region and its feed (identical layers of a
    deep network, in their segments or in several variants of one, cost the
    same), the words its blocks leave in a node buffer, and each region's
    hardware block."""

    #: a layer's cost and the names of its tensors, by its scheme without its identity, its region and feed
    costs: dict[tuple[Hashable, AnyRegion, Feed], tuple[LayerCost, tuple[str, ...]]] = field(default_factory=dict)
    free: dict[tuple[Hashable, AnyRegion], int] = field(default_factory=dict)
    archs: dict[AnyRegion, ArchSpec] = field(default_factory=dict)

    def region_arch(self, arch: ArchSpec, region: AnyRegion) -> ArchSpec:
        local = self.archs.get(region)
        if local is None:
            local = self.archs[region] = region_arch(arch, region)
        return local

    def cost(self, scheme: LayerScheme, arch: ArchSpec, region: AnyRegion, feed: Feed) -> LayerCost:
        key = (dataflow_key(scheme), region, feed)
        names = tuple(r.name for r in tensor_roles(scheme.layer, scheme.ifm_name))
        known = self.costs.get(key)
        if known is not None:
            cost, was = known
            if was == names:
                return cost if cost.layer == scheme.layer.name else replace(cost, layer=scheme.layer.name)
            if len(set(was)) == len(set(names)) == len(names):
                # tensors are named after the layer and its producers: the same accesses under this layer's names
                rename = dict(zip(was, names, strict=True))
                return replace(cost, layer=scheme.layer.name,
                               accesses={level: {rename[t]: words for t, words in per.items()}
                                         for level, per in cost.accesses.items()})
        cost = evaluate(scheme, self.region_arch(arch, region), feed)
        if cost.valid:  # an invalid cost's reasons name its layer: not shared
            self.costs[key] = (cost, names)
        return cost

    def free_words(self, scheme: LayerScheme, arch: ArchSpec, region: AnyRegion, node: int) -> int:
        key = (dataflow_key(scheme), region)
        free = self.free.get(key)
        if free is None:
            free = self.free[key] = _free_words(scheme, self.region_arch(arch, region), node)
        return free


def placement_feed(place: LayerPlacement, region_of: Callable[[str], AnyRegion], arch: ArchSpec) -> Feed:
    """Where ``place``'s layer gets its data and sends them (``region_of``: the region of a
    layer of the segment): a forwarded input crosses the mean distance from its senders'
    regions, the rest of its data the distance to the DRAM channels."""
    hops = None
    if place.forwarders:
        sources = [region_of(p) for p in place.forwarders]
        hops = sum(place.region.distance(src) for src in sources) / len(sources)
    return Feed(ifm_hops=hops, to_dram=place.to_dram, pinned=place.pinned,
                dram_hops=dram_distance(arch, place.region), ifm_share=place.ifm_share)


def evaluate_segment(segment: SegmentScheme, arch: ArchSpec, memo: SegmentMemo | None = None) -> SegmentCost:
    """Cost of ``segment`` on the whole chip ``arch``. A search costing many
    segments of one network on ``arch`` passes one ``memo`` to them all: a
    layer placed and fed alike in several (another segment, a variant of this
    one with other schemes for its other layers, or a layer of the same shape
    elsewhere in the network) is evaluated once."""
    memo = SegmentMemo() if memo is None else memo
    costs = _layer_costs(segment, arch, memo)
    reasons: list[str] = []
    node = node_level(arch)
    for name in segment.layers:
        place = segment.placements[name]
        scheme = segment.schemes[name]
        cost = costs[name]
        reasons.extend(cost.validity.reasons)
        if place.forwarders and cost.valid and node is not None:
            piece = forwarded_words(place, lambda n: segment.schemes[n].layer, scheme.batch) / segment.groups
            free = memo.free_words(scheme, arch, place.region, node) * place.region.nodes
            if piece > free:
                reasons.append(f"{name}: a forwarded piece of {piece:,.0f} words does not fit the "
                               f"{free:,} words of {arch.levels[node].name} left in its region")
    if reasons:
        return SegmentCost(costs, Validity(tuple(reasons)))
    time = pipeline_time(segment.slots, {n: c.time for n, c in costs.items()},
                         {n: segment.placements[n].forwarders for n in segment.layers}, segment.groups)
    time = max(time, sum(c.time_parts["dram"] for c in costs.values()))
    energy: dict[str, float] = {}
    for cost in costs.values():
        for component, joules in cost.energy.items():
            if component != STATIC:
                energy[component] = energy.get(component, 0.0) + joules
    energy[STATIC] = time * arch.static_energy
    return SegmentCost(costs, Validity(), energy, time)


def _layer_costs(segment: SegmentScheme, arch: ArchSpec, memo: SegmentMemo) -> dict[str, LayerCost]:
    """Each layer's cost on its region, fed as it is placed."""
    return {name: memo.cost(segment.schemes[name], arch, segment.placements[name].region,
                            placement_feed(segment.placements[name], lambda p: segment.placements[p].region, arch))
            for name in segment.layers}


def costed_like(segment: SegmentScheme, arch: ArchSpec, memo: SegmentMemo, like: SegmentCost) -> SegmentCost:
    """What :func:`evaluate_segment` gives ``segment``, known to cost what the
    valid segment costed ``like`` costs: one alike in all but its layers' names
    (layers of the same shapes, solved alike, placed and fed alike). Its totals
    are ``like``'s; its layers' costs, under their own names, are worked out
    when first read. A deep network's search costs thousands of segments that
    repeat a few (ResNet-1001: 3,300 costed, 100 of them distinct), and reads
    the layers of one chain's."""
    return SegmentCost(_LayerCosts(segment, arch, memo), like.validity, like.energy, like.time)


class _LayerCosts(Mapping[str, LayerCost]):
    """A segment's layer costs by name (:func:`_layer_costs`), worked out when first read."""

    __slots__ = ("_args", "_costs")

    def __init__(self, segment: SegmentScheme, arch: ArchSpec, memo: SegmentMemo) -> None:
        self._args: tuple[SegmentScheme, ArchSpec, SegmentMemo] | None = (segment, arch, memo)
        self._costs: dict[str, LayerCost] = {}

    def _known(self) -> dict[str, LayerCost]:
        if self._args is not None:
            self._costs = _layer_costs(*self._args)
            self._args = None  # the memo is the search's: not kept past its use
        return self._costs

    def __getitem__(self, name: str) -> LayerCost:
        return self._known()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._known())

    def __len__(self) -> int:
        return len(self._known())

    def __repr__(self) -> str:
        return repr(self._known())

    def __reduce__(self) -> tuple:
        return dict, (self._known(),)
