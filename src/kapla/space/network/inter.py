"""Inter-layer schemes of a candidate segment, their data flow, and KAPLA's quick judgement of them.

An :class:`InterScheme` says how a candidate segment runs: its slots on node
regions (spatial pipelining) or all its layers on the whole array (temporal),
the batch split into ``groups`` (ALLO), and whether the weights are pinned.

Weights are pinned (loaded once, kept in the node buffers over every batch)
by one of two rules. kapla's: all the network's weights fit in
``PIN_FRACTION`` of the chip's buffers, every node keeps an equal share
(:func:`pin_reserve`) and every segment of the schedule runs beside them.
TANGRAM's (nn_dataflow's ``no_time_mux`` resources): the whole network is
one segment whose every slot holds at most one layer with weights, and each
slot keeps its own weights in its own region (:func:`tangram_pins`).

This module works out where each layer's data come from and go to
(:func:`placements`, :func:`feed_of`), enumerates the schemes of a segment
(:func:`inter_schemes`), and judges them without solving any layer: the
conservative validity test :func:`may_fit`, the compulsory-traffic
:func:`estimate` (calibrated per layer by :func:`calibration`) and
:func:`pareto` pruning. :mod:`kapla.search.network.tangram.scheduler` runs the search.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme, LevelScheme, Loop
from kapla.dataflow.segment import AnyRegion, LayerPlacement, Region, layout_of
from kapla.dataflow.tensors import Kind, footprint, layer_dims, tensor_roles
from kapla.memo import IdentityMemo, copied, kept_hash, without_kept_hash
from kapla.model.evaluate import STATIC, Feed
from kapla.model.hardware import node_buffer_words, node_level, word_energy
from kapla.model.segment import (
    SegmentCost,
    forwarded_words,
    input_words,
    output_words,
    pipeline_time,
    placement_feed,
)
from kapla.space.network.segments import SegmentPlan, allocate_regions, fold_regions, schedule_order
from kapla.workload.layer import Layer, shape_key
from kapla.workload.network import Network

GROUPS = (1, 4, 16)  # ALLO batch groups tried per segment
PIN_FRACTION = 0.5  # pinned weights may take at most this share of the chip's node buffers


@dataclass(frozen=True)
class InterScheme:
    """One way to run a candidate segment: its slots on regions, batch groups, pinning."""

    layers: tuple[str, ...]
    slots: tuple[tuple[str, ...], ...]
    regions: tuple[AnyRegion, ...]  # one per slot: rectangles or folded regions
    groups: int = 1
    pinned: bool = False
    #: TANGRAM's pinning: per slot, the words per node its pinned weights take
    #: (0: not pinned). Empty under kapla's rule: every slot keeps the search's reserve.
    pins: tuple[int, ...] = ()
    #: the regions were allocated by node count along a folded path (:func:`fold_regions`), not as rectangles
    folded: bool = False
    #: layers reading the same fmaps from DRAM fetch them once and pass them on (:func:`placements`)
    share_inputs: bool = False

    # a deep network's chains of hundreds of schemes are hashed whole, round after round
    __hash__ = kept_hash

    def __getstate__(self) -> dict:
        # neither the hash kept nor the structure key (:func:`_likeness`): both are of this process
        state = without_kept_hash(self)
        state.pop("_like", None)
        return state

    @property
    def layout(self) -> str:
        return layout_of(self.layers, self.slots)

    def slot_index(self, name: str) -> int:
        return _slot_of(self.slots)[name]

    def region_of(self, name: str) -> AnyRegion:
        return self.regions[_slot_of(self.slots)[name]]

    def pin_words(self, name: str, reserve: int) -> int:
        """Words per node that pinned weights take in ``name``'s region;
        ``reserve``: every node's share under kapla's rule."""
        if not self.pinned:
            return 0
        return self.pins[self.slot_index(name)] if self.pins else reserve

    def pins_weights_of(self, name: str) -> bool:
        """Whether ``name``'s slot keeps its weights on chip."""
        return self.pinned and (not self.pins or self.pins[self.slot_index(name)] > 0)


@lru_cache(maxsize=1 << 14)
def _slot_of(slots: tuple[tuple[str, ...], ...]) -> dict[str, int]:
    """Each layer's slot: asked per layer by every estimate and placement of the
    hundreds of thousands of schemes of a deep network, whose segments share their slots."""
    return {name: i for i, slot in enumerate(slots) for name in slot}


# ---------------------------------------------------------------- data flow of a segment

@lru_cache(maxsize=1 << 14)  # a network search asks for each layer's many times
def _words(layer: Layer, batch: int, kind: Kind, written: bool | None = None) -> int:
    dims = layer_dims(layer, batch)
    return sum(footprint(r.kind, dims, layer) * r.copies for r in tensor_roles(layer)
               if r.kind == kind and (written is None or r.written == written))


def weight_words(layer: Layer, batch: int = 1) -> int:
    return _words(layer, batch, Kind.WGT, written=False)


def onchip_producers(net: Network, name: str, inside: set[str], mixed: bool = False) -> tuple[str, ...]:
    """The producers whose fmaps reach ``name`` on chip: all of them, if all are in the
    segment; with ``mixed``, those in the segment whatever the others (read from DRAM)."""
    producers = net.producers(name)
    if producers and all(p in inside for p in producers):
        return tuple(producers)
    return tuple(p for p in producers if p in inside) if mixed else ()


def writes_dram(net: Network, name: str, inside: set[str], mixed: bool = False) -> bool:
    """The output leaves the segment, is a network output, or is kept for training
    (``mixed``: as :func:`onchip_producers`)."""
    consumers = net.consumers(name)
    if not consumers or name in net.kept:
        return True
    return any(c not in inside or name not in onchip_producers(net, c, inside, mixed) for c in consumers)


def _mixed(net: Network, layers: tuple[str, ...]) -> bool:
    """Some layer of the segment reads fmaps both from inside it and from outside."""
    inside = set(layers)
    return any(0 < len(onchip_producers(net, n, inside, True)) < len(net.producers(n)) for n in layers)


def placements(net: Network, arch: ArchSpec, inter: InterScheme) -> dict[str, LayerPlacement]:
    """Where each layer of the segment runs and where its data come from and go
    to. With ``inter.share_inputs``, fmaps are fetched from DRAM only where the
    segment does not have them: layers that read the same fmaps from DRAM (all
    their producers outside the segment, the same ones) fetch them once, the
    first in the segment's order reading them and passing them on to the
    others over the NoC; and a layer reading fmaps made in the segment and
    others gets the first forwarded, the others from DRAM (else all from DRAM)."""
    return {name: LayerPlacement(name, inter.region_of(name), onchip, to_dram,
                                 has_weights and inter.pins_weights_of(name), sharer, share)
            for name, onchip, to_dram, has_weights, sharer, share in _flow(net, inter.layers, inter.share_inputs)}


#: A layer's data flow in a segment, whatever its region and pinning: (name, on-chip
#: producers, writes DRAM, has weights, the layer it shares its input with, the share forwarded).
_Flow = tuple[str, tuple[str, ...], bool, bool, str | None, float]

_flows = IdentityMemo()


def _flow(net: Network, layers: tuple[str, ...], share_inputs: bool) -> tuple[_Flow, ...]:
    """The segment's data flow, worked out once per network, segment and
    sharing: a search places each segment on many regions, groups and pins
    (hundreds of thousands of schemes on a deep training DAG), and the
    producers and consumers walked for each took a third of its own time.
    Kept per network (:class:`~kapla.memo.IdentityMemo`)."""
    cache = _flows.of(net)
    key = (layers, share_inputs)
    found = cache.get(key)
    if found is None:
        inside = set(layers)
        flow = []
        for name, sharer in _input_sharers(net, layers).items():
            onchip = onchip_producers(net, name, inside, share_inputs)
            share = net.input_share(name, onchip) if onchip else 1.0
            flow.append((name, onchip, writes_dram(net, name, inside, share_inputs), net[name].has_weights,
                         sharer if share_inputs else None, share))
        found = cache[key] = tuple(flow)
    return found


_structures = IdentityMemo()


def _likeness(net: Network, inter: InterScheme, arch: ArchSpec) -> tuple[dict, int]:
    """A table kept for this network and hardware, and the number there of what an
    estimate or fit of ``inter`` depends on, with the segment's layers known by
    shape and position, not by name: a deep network repeats a few blocks, and the
    schemes of their segments are estimated and checked hundreds of thousands of
    times (ResNet-1001: 71,000 estimates, a third of the search's time outside
    the layer solves). The hardware is compared by identity too
    (:class:`~kapla.memo.IdentityMemo`)."""
    per_net = _structures.of(net)
    by_spec = per_net.get("by spec")
    if by_spec is None:
        by_spec = per_net["by spec"] = IdentityMemo()
    table = by_spec.of(arch)
    # each scheme is fitted, estimated and costed: its key is kept on it, with the table it is of
    kept = inter.__dict__.get("_like")
    if kept is not None and kept[0] is table:
        return table, kept[1]
    key = (inter.layers, inter.share_inputs)
    shape = table.get(key)
    if shape is None:
        at = {name: i for i, name in enumerate(inter.layers)}
        flow = tuple((shape_key(net[name]), tuple(at[p] for p in onchip), to_dram, has_weights,
                      None if sharer is None else at[sharer], share)
                     for name, onchip, to_dram, has_weights, sharer, share in _flow(net, inter.layers,
                                                                                     inter.share_inputs))
        # alike segments get one number: keys holding it hash at once
        positions: dict[tuple[tuple[str, ...], ...], tuple[tuple[int, ...], ...]] = {}
        shape = table[key] = (table.setdefault(("like", flow), len(table)), at, positions)
    like, at, positions = shape
    # the segment's slots by position: most of its schemes share a few slottings
    slots = positions.get(inter.slots)
    if slots is None:
        slots = positions[inter.slots] = tuple(tuple(at[name] for name in slot) for slot in inter.slots)
    # alike schemes get one number too: the estimates and fits of hundreds of thousands of
    # schemes are keyed by it, not by their regions hashed field by field each time
    found = table.setdefault(("scheme", like, slots, inter.regions, inter.groups, inter.pinned, inter.pins),
                             len(table))
    object.__setattr__(inter, "_like", (table, found))
    return table, found


def structure(net: Network, inter: InterScheme, arch: ArchSpec) -> tuple[object, int]:
    """What estimating, fitting, placing or costing ``inter`` on ``arch`` depends
    on besides its layers' schemes, with its layers known by shape and position,
    not by name: one number per kind, and the table it is numbered in (one per
    network and hardware, made anew when another is asked about: numbers of
    two tables are not comparable). Schemes of one kind place their layers
    alike, need the same layer solves by position, and cost the same when
    those are solved alike (a deep network repeats a few blocks)."""
    return _likeness(net, inter, arch)


def _input_sharers(net: Network, layers: tuple[str, ...]) -> dict[str, str | None]:
    """Per layer of a segment (in its order), the first layer before it that reads
    the same fmaps from DRAM (every producer outside the segment), if any."""
    inside = set(layers)
    fetched: dict[tuple[str, ...], str] = {}
    out: dict[str, str | None] = {}
    for name in layers:
        producers = tuple(net.producers(name))
        first = None
        if producers and not any(p in inside for p in producers):
            first = fetched.setdefault(producers, name)
        out[name] = None if first == name else first
    return out


def feed_of(inter: InterScheme, place: LayerPlacement, arch: ArchSpec) -> Feed:
    return placement_feed(place, inter.region_of, arch)


def outer_batch(scheme: LayerScheme, layer: Layer, groups: int, ifm_name: str | None) -> LayerScheme:
    """``scheme`` (solved for one batch group) repeated over ``groups`` groups by
    an outermost loop over the batch, under the layer's own name."""
    levels = list(scheme.levels)
    if groups > 1:
        top = levels[-1]
        dim = "G" if layer.folds_batch else "N"  # a matmul of two fmaps runs its samples as groups
        levels[-1] = LevelScheme(top.level, top.stacks, (Loop(dim, groups),) + top.updates, top.shr, top.bypass)
    return LayerScheme(layer, scheme.batch * groups, scheme.unit, tuple(levels), ifm_name=ifm_name)


def scheme_in_segment(net: Network, name: str, scheme: LayerScheme, groups: int = 1) -> LayerScheme:
    """A layer solve's scheme (made for its shape, one batch group) as layer
    ``name``'s in a segment: under its own name, its input named after its
    producers, repeated over ``groups`` batch groups (:func:`outer_batch`)."""
    return outer_batch(scheme, net[name], groups, input_name(net, name))


def input_name(net: Network, name: str) -> str | None:
    """What layer ``name``'s input fmap is called in a schedule: after its producers (None: the network's input)."""
    fmaps = dict.fromkeys(e.src for e in net.in_edges(name) if e.port != "b")  # a matmul's operand is its ".b"
    return "+".join(fmaps) or None


def pin_reserve(net: Network, arch: ArchSpec) -> int | None:
    """kapla's rule: words each node keeps for pinned weights, or None if the weights cannot be pinned."""
    nodes = arch.node_array[0] * arch.node_array[1]
    total = sum(weight_words(layer) for layer in net)
    if total == 0 or total > PIN_FRACTION * nodes * node_buffer_words(arch, "wgt"):
        return None
    return -(-total // nodes)


def tangram_pins(net: Network, arch: ArchSpec, layers: tuple[str, ...], slots: tuple[tuple[str, ...], ...],
                 regions: tuple[AnyRegion, ...]) -> tuple[int, ...] | None:
    """TANGRAM's rule: per slot, the words per node of its weights pinned in its region; None if it does not apply.

    nn_dataflow pins a layer's weights only when the segment is the whole
    network and no region runs two layers with weights one after another
    (its ``no_time_mux``): then nothing else ever needs that region's
    buffers. A slot pins when its weights, spread over its region's nodes,
    leave room in each node's buffer; whether the layers' own blocks then
    fit beside them is for their solves, which get the rest
    (:func:`kapla.model.hardware.with_node_reserve`). A slot whose weights
    fill its buffers does not pin (0).
    """
    if len(layers) != len(net) or any(sum(net[n].has_weights for n in slot) > 1 for slot in slots):
        return None
    room = node_buffer_words(arch, "wgt")
    pins = []
    for slot, region in zip(slots, regions, strict=True):
        words = -(-sum(weight_words(net[n]) for n in slot) // region.nodes)
        pins.append(words if words < room else 0)
    return tuple(pins) if any(pins) else None


# ---------------------------------------------------------------- candidate schemes

def inter_schemes(net: Network, arch: ArchSpec, plan: SegmentPlan, pinned: bool,
                  folded: bool = True, share_inputs: bool = True) -> list[InterScheme]:
    """Every inter-layer scheme of a candidate segment on ``arch``; ``pinned``:
    under kapla's rule (the search's pinned run), else unpinned and, for a
    segment that is the whole network, pinned by TANGRAM's rule as well.
    A spatial pipeline runs on rectangles (:func:`allocate_regions`) and,
    with ``folded``, on folded regions sized by node count as well
    (:func:`fold_regions`) where they differ; with ``share_inputs``, where layers
    read the same fmaps from DRAM, each scheme also with them fetched once."""
    whole = Region((0, 0), arch.node_array)
    layouts: list[tuple[tuple[tuple[str, ...], ...], tuple[AnyRegion, ...]]]
    folds_at = -1  # the layout on folded regions
    if len(plan) == 1:
        layouts = [(plan.slots, (whole,))]
        groups: tuple[int, ...] = (1,)
    else:
        layouts = []
        if arch.options.spatial_layer_pipe and len(plan.slots) > 1:
            rects = allocate_regions(net, plan.slots, arch.node_array)
            if rects is not None:
                layouts.append((plan.slots, rects))
            folds = fold_regions(net, plan.slots, arch.node_array) if folded else None
            if folds is not None and folds != rects:
                folds_at = len(layouts)
                layouts.append((plan.slots, folds))
        if arch.options.temporal_layer_pipe:
            layouts.append(((plan.layers,), (whole,)))
        groups = tuple(g for g in GROUPS if net.batch % g == 0 and g <= net.batch)
    # where layers read the same fmaps from DRAM, each scheme also with them fetched once
    # and passed on: the search chooses (waiting in the receivers' buffers, a piece of
    # them can cost more than it saves)
    sharing = (False, True) if share_inputs and (any(_input_sharers(net, plan.layers).values())
                                                 or _mixed(net, plan.layers)) else (False,)
    out = []
    for n, (slots, regions) in enumerate(layouts):
        tangram = None if pinned else tangram_pins(net, arch, plan.layers, slots, regions)
        fold = n == folds_at
        for g in groups:
            for share in sharing:
                out.append(InterScheme(plan.layers, slots, regions, g, pinned, folded=fold, share_inputs=share))
                out.extend(InterScheme(plan.layers, slots, regions, g, True, pins, fold, share)
                           for pins in pin_choices(tangram))
    return out


_contexts = IdentityMemo()


def segment_kind(net: Network, layers: tuple[str, ...]) -> Hashable | None:
    """A key such that segments with equal keys have the same inter-layer
    schemes, fits, estimates and costs but for their layers' names (None: not a
    run of :func:`schedule_order`, or the whole network, whose schemes TANGRAM
    pins). Per layer: its shape, whether it has weights or is kept, its input
    edges (port, slices, the producer's output shape), where in the segment
    its producers are (those outside numbered in order of first use: only
    which layers share one matters) and its consumers (those outside only
    whether there are any): everything the data flow, the slots and the
    regions of a segment are worked out from.

    A deep network's segments repeat a few kinds (ResNet-1001's training DAG:
    172,000 schemes of 16,000 segments), which are enumerated and fitted once
    each (:func:`alike_scheme`)."""
    if len(layers) >= len(net):
        return None
    memo = _contexts.of(net)
    if not memo:
        order = schedule_order(net)
        at = {name: i for i, name in enumerate(order)}
        numbers: dict[Hashable, int] = {}
        memo["at"], memo["order"] = at, order
        memo["layers"] = [
            (numbers.setdefault((shape_key(net[name]), net[name].has_weights, name in net.kept,
                                 tuple((e.port, e.channels, e.rows, net.output_shape(e.src))
                                       for e in net.in_edges(name))), len(numbers)),
             tuple(at.get(e.src, e.src) for e in net.in_edges(name)),  # a network input by its name
             tuple(at[c] for c in net.consumers(name)))
            for name in order]
    at, context = memo["at"], memo["layers"]
    first = at[layers[0]]
    last = first + len(layers) - 1
    if memo["order"][first:last + 1] != layers:
        return None
    outside: dict[int | str, int] = {}
    key = []
    for sign, sources, consumers in context[first:last + 1]:
        # producers precede their consumers in the order: those not before ``first`` are inside
        key.append((sign,
                    tuple(q - first if isinstance(q, int) and q >= first else -1 - outside.setdefault(q, len(outside))
                          for q in sources),
                    tuple(c - first for c in consumers if c <= last),
                    any(c > last for c in consumers)))
    return tuple(key)


def alike_scheme(inter: InterScheme, layers: tuple[str, ...]) -> InterScheme:
    """``inter`` (a scheme of a segment of the same kind, :func:`segment_kind`)
    as the scheme of the segment of ``layers``: its layers named by position.
    Made as a copy: its structure key (:func:`structure`) is the same and is
    kept; its hash is not."""
    rename = dict(zip(inter.layers, layers, strict=True))
    made: InterScheme = copied(inter, layers=layers,
                               slots=tuple(tuple(rename[name] for name in slot) for slot in inter.slots))
    return made


def pin_choices(pins: tuple[int, ...] | None) -> list[tuple[int, ...]]:
    """Every non-empty choice of the slots that pin among those that may, most first.

    nn_dataflow pins layer by layer, wherever a layer's weights fit beside
    its blocks and that is cheapest; here each choice is a scheme of its own,
    so every scheme says exactly what is pinned and an exhaustive search
    finds the best choice.
    """
    if pins is None:
        return []
    may = [i for i, words in enumerate(pins) if words]
    choices = []
    for size in range(len(may), 0, -1):
        for chosen in itertools.combinations(may, size):
            choices.append(tuple(words if i in chosen else 0 for i, words in enumerate(pins)))
    return choices


def may_fit(net: Network, arch: ArchSpec, inter: InterScheme, reserve: int) -> bool:
    """False only if no intra-layer scheme can make ``inter`` valid: a forwarded
    fmap piece must fit the buffers of the region that receives it."""
    table, like = _likeness(net, inter, arch)
    key = ("fits", like, reserve)
    fit = table.get(key)
    if fit is None:
        fit = table[key] = _may_fit(net, arch, inter, reserve)
    return fit


def _may_fit(net: Network, arch: ArchSpec, inter: InterScheme, reserve: int) -> bool:
    for name, place in placements(net, arch, inter).items():
        if not place.forwarders:
            continue
        per_node = node_buffer_words(arch, "ifm") - inter.pin_words(name, reserve)
        piece = forwarded_words(place, net.__getitem__, net.batch) / inter.groups
        if per_node <= 0 or piece > inter.region_of(name).nodes * per_node:
            return False
    return True


@dataclass(frozen=True)
class Estimate:
    """A quick cost estimate of an inter-layer scheme from its compulsory traffic."""

    energy: float
    time: float
    dram_words: float
    onchip_words: float
    groups: int = 1

    def objective(self, name: str) -> float:
        return {"energy": self.energy, "latency": self.time, "edp": self.energy * self.time}[name]

    def dominates(self, other: Estimate) -> bool:
        # More batch groups shorten the pipeline but shrink every block (more
        # buffer and bus traffic), which the estimate does not see: a scheme
        # only dominates one with at most as many groups.
        return _dominates(self.compared, other.compared)

    @property
    def compared(self) -> tuple[float, float, float, int]:
        """What :meth:`dominates` compares."""
        return (self.dram_words, self.onchip_words, self.time, self.groups)


def _dominates(mine: tuple[float, float, float, int], theirs: tuple[float, float, float, int]) -> bool:
    """:meth:`Estimate.dominates` on what it compares."""
    return (mine[0] <= theirs[0] and mine[1] <= theirs[1] and mine[2] <= theirs[2] and mine[3] <= theirs[3]
            and mine != theirs)


@lru_cache(maxsize=1 << 14)
def _sizes(layer: Layer, batch: int) -> tuple[int, int, int, int, int]:
    """A layer's input fmap, gradient read, weight and output words and its MACs over
    ``batch``. A backward layer reads the gradient of its forward layer's output (an
    output-kind tensor) besides or instead of an input-kind fmap."""
    return (input_words(layer, batch), _words(layer, batch, Kind.OFM, written=False), weight_words(layer, batch),
            output_words(layer, batch), layer.loop_ops * batch)


_spec_constants = IdentityMemo()


def _constants(arch: ArchSpec) -> tuple[float, float, float, float, float, int, int]:
    """What :func:`estimate` reads of ``arch`` for every layer of every scheme (its
    properties compute each time; kept per spec)."""
    known = _spec_constants.of(arch)
    if not known:
        known["estimate"] = (word_energy(arch, -1), arch.read_energy(node_level(arch) or 0, "ifm"),
                             arch.hop_energy, arch.mac_energy, arch.dram_bandwidth_words,
                             node_buffer_words(arch, "wgt"), arch.pe_array[0] * arch.pe_array[1])
    return known["estimate"]


def estimate(net: Network, arch: ArchSpec, inter: InterScheme, reserve: int = 0,
             scale: Mapping[str, tuple[float, float]] | None = None) -> Estimate:
    """Every word that must cross DRAM or the NoC once, every MAC at full PE
    utilisation, weights refetched per batch group unless every node can hold
    them whole, the pipeline's fill and drain, and static energy.

    ``scale`` calibrates each layer's energy (static aside) and time by the
    ratio of its solved single-layer cost to this estimate of it: what the
    compulsory traffic misses (register, bus and buffer accesses, refetches,
    idle PEs) is much the same wherever the layer runs.
    """
    return _estimate_scaled(net, arch, inter, reserve, scale,
                            None if scale is None else tuple(scale.get(n) for n in inter.layers))


def estimates(net: Network, arch: ArchSpec, inters: Iterable[InterScheme], reserve: int = 0,
              scale: Mapping[str, tuple[float, float]] | None = None) -> list[Estimate]:
    """:func:`estimate` of each of ``inters``: a search estimates every scheme of
    every segment at once, and the schemes of one segment share its layers'
    calibration (ResNet-1001's training DAG: 152,000 schemes of 16,000 segments)."""
    scaled: dict[tuple[str, ...], tuple | None] = {}
    out = []
    for inter in inters:
        factors = scaled.get(inter.layers)
        if factors is None and scale is not None:
            factors = scaled[inter.layers] = tuple(scale.get(n) for n in inter.layers)
        out.append(_estimate_scaled(net, arch, inter, reserve, scale, factors))
    return out


def _estimate_scaled(net: Network, arch: ArchSpec, inter: InterScheme, reserve: int,
                     scale: Mapping[str, tuple[float, float]] | None, factors: tuple | None) -> Estimate:
    """:func:`estimate`, ``factors`` the scale of each of its layers (None: no scale)."""
    table, like = _likeness(net, inter, arch)
    key = ("estimate", like, reserve, factors)
    found = table.get(key)
    if found is None:
        found = table[key] = _estimate(net, arch, inter, reserve, scale)
    return found


def _estimate(net: Network, arch: ArchSpec, inter: InterScheme, reserve: int,
              scale: Mapping[str, tuple[float, float]] | None) -> Estimate:
    batch = net.batch
    dram_e, fwd_e, hop_e, mac_e, bandwidth, wgt_room, pes = _constants(arch)
    places = placements(net, arch, inter)
    total = 0.0
    dram_total = onchip_total = 0.0
    layer_time: dict[str, float] = {}
    for name in inter.layers:
        energy = 0.0
        layer, place = net[name], places[name]
        feed = feed_of(inter, place, arch)
        ifm, grad, wgt, out, macs = _sizes(layer, batch)
        # A backward layer's gradient input: only an input-kind read is forwarded
        # on chip (the cost model's feed), the gradient comes from DRAM wherever
        # its producer runs. Left out, the estimate of a backward layer whose
        # output stayed on chip kept a fraction of its compulsory traffic
        # (MobileNet training, a depthwise layer's data gradient in a 4-group
        # segment: solved at 41x its estimate), and the calibration of the
        # layer alone hid it wherever the output went to DRAM.
        dram = float(grad)
        if feed.ifm_hops is None:
            dram += ifm
        else:
            forwarded = ifm * feed.ifm_share
            dram += ifm - forwarded
            onchip_total += forwarded
            energy += forwarded * (fwd_e + feed.ifm_hops * hop_e)
        if not feed.pinned:
            # A layer is solved for one batch group, blind to the groups after it: its
            # schemes spread the weights over the region's nodes or loop over them
            # at the top, and read them again for every group, unless each node
            # holds them whole (AlexNet's conv2, 153,600 words, in a 4-group segment
            # on 256 nodes of 16,384 words each: read 4 times). Counting the
            # region's buffers together, the estimate saw them stay, and ranked
            # grouped segments too well (solved over estimated: median 1.23).
            room = (wgt_room - inter.pin_words(name, reserve)) / 2
            dram += wgt * (inter.groups if wgt > room else 1)
        if feed.to_dram:
            dram += out
        dram_total += dram
        energy += dram * (dram_e + (feed.dram_hops or 0.0) * hop_e)
        energy += macs * mac_e
        compute = macs / (place.region.nodes * pes)
        layer_time[name] = max(compute, dram / bandwidth)
        if scale is not None and name in scale:
            energy *= scale[name][0]
            layer_time[name] *= scale[name][1]
        total += energy
    seg_time = max(pipeline_time(inter.slots, layer_time, {n: places[n].forwarders for n in inter.layers},
                                 inter.groups), dram_total / bandwidth)
    return Estimate(total + seg_time * arch.static_energy, seg_time, dram_total, onchip_total, inter.groups)


def calibration(net: Network, arch: ArchSpec, single: InterScheme, cost: SegmentCost,
                reserve: int = 0) -> tuple[float, float]:
    """(energy, time) factors from a layer's estimate alone to its solved cost."""
    raw = estimate(net, arch, single, reserve)
    raw_dynamic = raw.energy - raw.time * arch.static_energy
    dynamic = cost.total_energy - cost.energy.get(STATIC, 0.0)
    return (dynamic / raw_dynamic if raw_dynamic > 0 else 1.0, cost.time / raw.time if raw.time > 0 else 1.0)


_T = TypeVar("_T")  # what the schemes ranked by their estimates are (the schemes, or their places)


def pareto(schemes: list[tuple[_T, Estimate]]) -> list[tuple[_T, Estimate]]:
    """The schemes no other scheme of the same segment beats in every traffic count and time
    (:meth:`Estimate.dominates`), in their order.

    A scheme that dominates another comes before it in lexicographic order of
    what is compared, and one dominating a dominated scheme dominates what that
    one does: so each scheme, in that order, is checked against the ones kept
    before it only (a deep network's segments: 27,000 schemes kept of 70,000)."""
    points = [e.compared for _, e in schemes]
    front: list[tuple[float, float, float, int]] = []
    kept = set()
    for i in sorted(range(len(points)), key=points.__getitem__):
        p = points[i]
        if not any(_dominates(f, p) for f in front):
            front.append(p)
            kept.add(i)
    return [scheme for i, scheme in enumerate(schemes) if i in kept]
