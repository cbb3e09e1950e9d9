"""Inter-layer schemes: layouts and batch groups, where data flow, the estimate and validity pruning."""

import pickle
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.dataflow.segment import Region
from kapla.dataflow.tensors import Kind, footprint, layer_dims, tensor_roles
from kapla.model.hardware import node_buffer_words
from kapla.scheduling.layers import LayerService
from kapla.search.layer.kapla.solver import KaplaIntraSolver
from kapla.search.network.tangram.segment_solver import SegmentSolver
from kapla.space.network.inter import (
    Estimate,
    InterScheme,
    _estimate,
    _likeness,
    _may_fit,
    alike_scheme,
    estimate,
    estimates,
    feed_of,
    inter_schemes,
    may_fit,
    pareto,
    pin_choices,
    pin_reserve,
    placements,
    segment_kind,
    tangram_pins,
    weight_words,
)
from kapla.space.network.segments import SegmentPlan, schedule_order, segment_plans, slots_of
from kapla.workload.network import NetworkBuilder
from kapla.workload.zoo import get_network
from tests.conftest import random_block, repeated_blocks

MULTINODE = load_arch("multinode")
SMALL = load_arch("multinode").with_node_region(4, 4)


def plan(net, *layers):
    return SegmentPlan(layers, slots_of(net, layers))


def net_layers(net):
    return tuple(layer.name for layer in net)


def test_inter_schemes_cover_layouts_and_batch_groups():
    net = get_network("alexnet", 64)
    schemes = inter_schemes(net, MULTINODE, plan(net, "conv4_a", "conv5_a", "pool3_a"), pinned=False)
    layouts = {(s.layout, s.groups) for s in schemes}
    assert layouts == {(lay, g) for lay in ("spatial", "temporal") for g in (1, 4, 16)}
    spatial = next(s for s in schemes if s.layout == "spatial")
    assert spatial.slots == (("conv4_a",), ("conv5_a", "pool3_a")) and len(spatial.regions) == 2
    # with pipelining off in the hardware only the single-layer segments remain
    off = MULTINODE.with_options(spatial_layer_pipe=False, temporal_layer_pipe=False)
    assert inter_schemes(net, off, plan(net, "conv4_a", "conv5_a"), pinned=False) == []
    # batch 1 cannot be split into groups
    one = get_network("alexnet", 1)
    assert {s.groups for s in inter_schemes(one, MULTINODE, plan(one, "conv4_a", "conv5_a"), False)} == {1}


def test_forwarding_keeps_the_intermediate_fmap_off_dram_in_the_estimate():
    net = get_network("alexnet", 64)
    seg = next(s for s in inter_schemes(net, MULTINODE, plan(net, "conv4_a", "conv5_a"), False)
               if s.layout == "spatial" and s.groups == 1)
    places = placements(net, MULTINODE, seg)
    assert places["conv5_a"].onchip_inputs == ("conv4_a",)
    assert not places["conv4_a"].to_dram and places["conv5_a"].to_dram  # pool3_a is outside
    single = [InterScheme((n,), ((n,),), (Region((0, 0), (16, 16)),)) for n in seg.layers]
    together = estimate(net, MULTINODE, seg)
    apart = [estimate(net, MULTINODE, s) for s in single]
    # exactly conv4's output write and conv5's input read leave DRAM
    conv4_out = 64 * 192 * 13 * 13
    conv5 = net["conv5_a"]
    conv5_in = footprint(Kind.IFM, layer_dims(conv5, 64), conv5)
    assert sum(e.dram_words for e in apart) - together.dram_words == pytest.approx(conv4_out + conv5_in)
    assert together.onchip_words == conv5_in


def test_the_estimate_reads_weights_again_per_batch_group_unless_every_node_holds_them_whole():
    """A layer is solved for one batch group, blind to the others: the estimate counts its weights read
    from DRAM once per group unless each node can hold them whole, whatever the region's nodes hold together."""
    room = node_buffer_words(MULTINODE, "wgt") / 2

    def extra_words(net, layers, groups):
        by_groups = {(s.layout, s.groups): s for s in inter_schemes(net, MULTINODE, plan(net, *layers), False)}
        one, more = (estimate(net, MULTINODE, by_groups[("temporal", g)]) for g in (1, groups))
        return more.dram_words - one.dram_words

    alexnet = get_network("alexnet", 64)
    # 153,600 words: 256 nodes could hold them together, none alone
    assert room < weight_words(alexnet["conv2_a"]) < 256 * room
    assert extra_words(alexnet, ("conv2_a", "pool2_a"), 4) == pytest.approx(3 * weight_words(alexnet["conv2_a"]))
    mobilenet = get_network("mobilenet", 64)
    # a depthwise layer's 288 words and a pointwise layer's 2,048: each node holds each whole
    assert max(weight_words(mobilenet["conv1_dw"]), weight_words(mobilenet["conv1_pw"])) <= room
    assert extra_words(mobilenet, ("conv1_dw", "conv1_pw"), 4) == 0


def test_a_backward_layers_estimate_reads_the_gradient_of_its_forward_output_from_dram():
    """A data-gradient layer reads the gradient of its forward layer's output, an
    output-kind tensor that the cost model does not forward on chip: the estimate
    counts it from DRAM even in a segment with the layer producing it (left out,
    such a layer was estimated at a fraction of its compulsory traffic: MobileNet's
    conv12_dw.bwd in a 4-group segment was solved at 41x its estimate)."""
    net = get_network("mobilenet", 64).to_training()
    bwd, producer = net["conv12_dw.bwd"], net.producers("conv12_dw.bwd")[0]
    grad = footprint(Kind.OFM, layer_dims(bwd, 64), bwd)
    assert [r.kind for r in tensor_roles(bwd) if not r.written and r.kind != Kind.WGT] == [Kind.OFM]
    together = next(s for s in inter_schemes(net, MULTINODE, plan(net, producer, bwd.name), False)
                    if s.layout == "temporal" and s.groups == 1)
    assert placements(net, MULTINODE, together)[bwd.name].onchip_inputs == (producer,)
    whole = (Region((0, 0), (16, 16)),)
    producer_alone = estimate(net, MULTINODE, InterScheme((producer,), ((producer,),), whole))
    alone = estimate(net, MULTINODE, InterScheme((bwd.name,), ((bwd.name,),), whole))
    written = sum(footprint(r.kind, layer_dims(bwd, 64), bwd) for r in tensor_roles(bwd) if r.written)
    compulsory = grad + weight_words(bwd, 64) + written
    assert alone.dram_words == compulsory
    # the producer's output goes to DRAM either way (kept for training): the segment
    # adds the backward layer's own compulsory traffic, its gradient read included
    assert estimate(net, MULTINODE, together).dram_words - producer_alone.dram_words == compulsory


def test_validity_pruning_rejects_a_forwarded_piece_no_region_can_hold():
    net = get_network("vgg16", 64)
    seg = next(s for s in inter_schemes(net, SMALL, plan(net, "conv1_1", "conv1_2"), False)
               if s.layout == "temporal" and s.groups == 1)
    # 64 x 64 x 224 x 224 words cannot wait in 16 nodes' buffers, even split in 16 groups
    assert not may_fit(net, SMALL, seg, reserve=0)
    small = get_network("mlp_s", 64)
    seg = inter_schemes(small, SMALL, plan(small, "fc1", "fc2"), False)[0]
    assert may_fit(small, SMALL, seg, reserve=0)


# ---------------------------------------------------------------- model pinning

def whole(net):
    """The segment that is the whole network, as segment_plans cuts it."""
    return next(p for p in segment_plans(net, 5)[-1] if len(p) == len(net))


def spatial(net, arch, pinned=False, groups=1, folded=False):
    """The spatial schemes of the whole network, on rectangles (``folded``: on folded regions only)."""
    return [s for s in inter_schemes(net, arch, whole(net), pinned, folded)
            if s.layout == "spatial" and s.groups == groups
            and s.folded == folded]


def test_tangram_pins_each_slot_in_its_own_region_where_kaplas_rule_refuses():
    net = get_network("mlp_l", 64)  # 6.1 MB of weights: more than half of the chip's 8 MiB of buffers
    assert pin_reserve(net, MULTINODE) is None
    plain, tangram = spatial(net, MULTINODE)[:2]  # then fewer slots pinned
    assert not plain.pinned and tangram.pinned
    pins = tangram_pins(net, MULTINODE, net_layers(net), tangram.slots, tangram.regions)
    assert tangram.pins == pins
    room = node_buffer_words(MULTINODE, "wgt")
    for slot, region, words in zip(tangram.slots, tangram.regions, pins, strict=True):
        assert words == -(-sum(weight_words(net[n]) for n in slot) // region.nodes) and 0 < words < room
    # the layers of a pinned slot get what their weights leave of each node's buffer
    assert tangram.pin_words("fc2", reserve=0) == pins[1] and plain.pin_words("fc2", reserve=0) == 0
    assert all(p.pinned for p in placements(net, MULTINODE, tangram).values())


def test_tangram_pinning_needs_the_whole_network_and_one_weight_layer_per_region():
    net = get_network("mlp_m", 64)
    layers = net_layers(net)
    regions = (Region((0, 0), (16, 16)),)
    assert tangram_pins(net, MULTINODE, layers, (layers,), regions) is None  # temporal: four FCs take turns
    assert tangram_pins(net, MULTINODE, layers[:2], ((layers[0],), (layers[1],)),
                        (Region((0, 0), (16, 8)), Region((0, 8), (16, 8)))) is None  # not the whole network
    assert not [s for s in inter_schemes(net, MULTINODE, whole(net), False) if s.layout == "temporal" and s.pinned]
    # a slot whose weights fill its nodes' buffers reads them from DRAM; none at all: no pinned scheme
    columns = tuple(Region((0, c), (4, 1)) for c in range(4))
    one = tangram_pins(net, SMALL, layers, tuple((n,) for n in layers), columns)
    assert one == (0, 0, 0, -(-weight_words(net["fc4"]) // 4))  # fc1 alone: 196,000 words a node
    b = NetworkBuilder("big", 64)
    b.fc("fc2", b.fc("fc1", b.input("x", 2048), 2048), 2048)  # 4 M weights each
    big = b.build()
    halves = (Region((0, 0), (4, 2)), Region((0, 2), (4, 2)))
    assert tangram_pins(big, SMALL, ("fc1", "fc2"), (("fc1",), ("fc2",)), halves) is None
    assert not any(s.pinned for s in inter_schemes(big, SMALL, whole(big), False))


def test_kaplas_rule_is_kept_for_schedules_of_several_segments():
    net = get_network("lstm_m", 64)
    reserve = pin_reserve(net, MULTINODE)
    assert reserve is not None
    part = plan(net, "cell_cand", "cell_igate")
    schemes = inter_schemes(net, MULTINODE, part, pinned=True)
    assert schemes and all(s.pinned and not s.pins and s.pin_words("cell_igate", reserve) == reserve for s in schemes)
    assert not any(s.pinned for s in inter_schemes(net, MULTINODE, part, pinned=False))


def test_each_choice_of_pinned_slots_is_a_scheme_and_one_too_full_has_none():
    net = get_network("mlp_l", 64)
    full = spatial(net, MULTINODE)[1].pins
    choices = [s.pins for s in spatial(net, MULTINODE)[1:]]
    assert choices == pin_choices(full) and len(choices) == 15 and choices[0] == full  # most pins first
    assert all(s.pinned for s in spatial(net, MULTINODE)[1:])
    assert pin_choices(None) == [] and pin_choices((0, 7, 0)) == [(0, 7, 0)]
    # fc2's 1.5 M weights over its 96 nodes leave 759 of 16,384 words per node: its input piece (1,000) does not fit
    assert full[1] > node_buffer_words(MULTINODE, "wgt") - 1000
    solver = SegmentSolver(net, MULTINODE, LayerService(KaplaIntraSolver(), MULTINODE), ("energy",))
    with_fc2 = next(s for s in spatial(net, MULTINODE) if s.pins == full)
    assert not may_fit(net, MULTINODE, with_fc2, reserve=0) and solver.solve(with_fc2, "energy") is None
    without = next(s for s in spatial(net, MULTINODE) if s.pins == (full[0], 0, full[2], full[3]))
    assert may_fit(net, MULTINODE, without, reserve=0)
    found = solver.solve(without, "energy")
    assert found is not None and found[1].valid
    segment, cost = found
    assert {n for n, p in segment.placements.items() if p.pinned} == {"fc1", "fc3", "fc4"}
    assert "fc2.w" in cost.layers["fc2"].accesses["DRAM"] and "fc1.w" not in cost.layers["fc1"].accesses["DRAM"]
    plain = solver.solve(spatial(net, MULTINODE)[0], "energy")
    assert plain is not None and cost.total_energy < plain[1].total_energy


# ---------------------------------------------------------------- siblings sharing what they read from DRAM

def test_siblings_reading_the_same_fmaps_from_dram_fetch_them_once():
    """Two gates of an LSTM cell read the same fmaps (the cell's input and its
    initial h), both from DRAM: in one segment the first fetches them and passes
    them on over the NoC, in the estimate, the solved segment and its cost."""
    net = get_network("lstm_m", 64)
    schemes = [s for s in inter_schemes(net, MULTINODE, plan(net, "cell_cand", "cell_igate"), False)
               if s.layout == "spatial" and s.groups == 1]
    # each scheme with the fmaps fetched by each layer, and fetched once: the search chooses
    assert sorted(s.share_inputs for s in schemes) == [False, True]
    assert all(p.forwarders == () for p in placements(net, MULTINODE, schemes[0]).values())
    seg = schemes[1]
    places = placements(net, MULTINODE, seg)
    assert places["cell_cand"].shares_input_of is None and places["cell_cand"].forwarders == ()
    assert places["cell_igate"].shares_input_of == "cell_cand"
    assert places["cell_igate"].forwarders == ("cell_cand",) and not places["cell_igate"].onchip_inputs
    gate = net["cell_igate"]
    gate_in = footprint(Kind.IFM, layer_dims(gate, 64), gate)
    single = [InterScheme((n,), ((n,),), (Region((0, 0), (16, 16)),)) for n in seg.layers]
    together = estimate(net, MULTINODE, seg)
    assert sum(estimate(net, MULTINODE, s).dram_words for s in single) - together.dram_words == gate_in
    assert together.onchip_words == gate_in
    solver = SegmentSolver(net, MULTINODE, LayerService(KaplaIntraSolver(), MULTINODE), ("energy",))
    found = solver.solve(seg, "energy")
    assert found is not None and found[1].valid
    schemes, cost = found[0].schemes, found[1].layers
    assert cost["cell_cand"].accesses["DRAM"][schemes["cell_cand"].ifm_name] == gate_in
    assert schemes["cell_igate"].ifm_name not in cost["cell_igate"].accesses["DRAM"]


def test_a_layer_with_a_producer_outside_the_segment_takes_the_rest_from_dram():
    """cell_cout_f reads fgate's output and the cell's initial C: with C outside the
    segment, it reads both from DRAM (fgate writes its output there), or, in the schemes
    that fetch fmaps only where the segment lacks them, gets fgate's forwarded and reads
    C alone from DRAM (half its input words; fgate writes nothing); layers whose
    producers differ fetch their own."""
    net = get_network("lstm_m", 64)
    schemes = inter_schemes(net, MULTINODE, plan(net, "cell_fgate", "cell_cout_f"), False)
    alone = next(s for s in schemes if not s.share_inputs)
    places = placements(net, MULTINODE, alone)
    assert places["cell_cout_f"].forwarders == () and places["cell_fgate"].to_dram
    mixed = next(s for s in schemes if s.share_inputs and (s.slots, s.regions, s.groups, s.pinned)
                 == (alone.slots, alone.regions, alone.groups, alone.pinned))
    places = placements(net, MULTINODE, mixed)
    assert places["cell_cout_f"].forwarders == ("cell_fgate",) and not places["cell_fgate"].to_dram
    assert places["cell_cout_f"].ifm_share == 0.5
    feed = feed_of(mixed, places["cell_cout_f"], MULTINODE)
    assert feed.ifm_hops is not None and feed.ifm_share == 0.5
    fetched = estimate(net, MULTINODE, mixed, 0)
    assert fetched.dram_words < estimate(net, MULTINODE, alone, 0).dram_words
    seg = inter_schemes(net, MULTINODE, plan(net, "cell_ogate", "cell_cout_f"), False)[0]
    assert all(p.forwarders == () for p in placements(net, MULTINODE, seg).values())
    assert not any(s.share_inputs for s in inter_schemes(net, MULTINODE, plan(net, "cell_ogate", "cell_cout_f"), False))


def _two_fcs(chained: bool):
    """Layers ``a`` and ``b``: ``b`` reads ``a`` (chained) or the network's input beside it."""
    b = NetworkBuilder("chain" if chained else "siblings", 8)
    x = b.input("x", 64)
    a = b.fc("a", x, 64)
    b.fc("b", a if chained else x, 64)
    return b.build()


def test_a_segments_data_flow_is_that_of_the_network_asked_about_whatever_was_asked_before():
    # the data flow is worked out once per segment and kept: two networks with the
    # same layer names, wired differently, must each get their own
    chain, siblings = _two_fcs(True), _two_fcs(False)
    halves = (Region((0, 0), (4, 2)), Region((0, 2), (4, 2)))
    scheme = InterScheme(("a", "b"), (("a",), ("b",)), halves, share_inputs=True)
    for net in (chain, siblings, chain, _two_fcs(False)):
        places = placements(net, SMALL, scheme)
        if net.name == "chain":
            assert places["b"].onchip_inputs == ("a",) and not places["a"].to_dram
        else:
            assert places["b"].onchip_inputs == () and places["b"].shares_input_of == "a"
            assert places["a"].to_dram
        assert places["a"].region == halves[0] and places["b"].region == halves[1]


def test_a_scheme_pickles_without_what_it_worked_out_for_this_process():
    # its hash is kept on it once asked for, and must not travel
    # (strings hash differently in another process)
    net = _two_fcs(True)
    halves = (Region((0, 0), (4, 2)), Region((0, 2), (4, 2)))
    scheme = InterScheme(("a", "b"), (("a",), ("b",)), halves, groups=4)
    assert hash(scheme) == hash(InterScheme(("a", "b"), (("a",), ("b",)), halves, groups=4))
    assert scheme.region_of("b") == halves[1]
    first = estimate(net, SMALL, scheme)  # keeps the scheme's structure key on it
    assert "_like" in scheme.__dict__
    back = pickle.loads(pickle.dumps(scheme))
    assert "_hash" not in back.__dict__ and "_like" not in back.__dict__
    assert back == scheme and hash(back) == hash(scheme) and {scheme: 1}[back] == 1
    assert estimate(net, SMALL, back) == first
    # a key kept for another network's table is not taken for this one's
    other = _two_fcs(False)
    assert _likeness(other, scheme, SMALL)[1] == _likeness(other, back, SMALL)[1]
    assert estimate(other, SMALL, scheme) == _estimate(other, SMALL, scheme, 0, None)
    layer = net["a"]
    hash(layer)
    assert "_hash" not in pickle.loads(pickle.dumps(layer)).__dict__


def _every_scheme(net, arch):
    for ending in segment_plans(net, 3):
        for p in ending:
            for pinned in (False, True):
                yield from inter_schemes(net, arch, p, pinned)


@pytest.mark.parametrize("training", [False, True])
def test_estimates_and_fits_kept_for_alike_segments_are_those_worked_out_for_each(training):
    # a deep network's alike blocks share what their schemes' estimates and fits
    # work out: kept by shape and position, each must still be that scheme's own
    net = get_network("resnet18", batch=4)
    net = net.to_training() if training else net
    reserve = 300
    scale = {layer.name: (1.0 + (i % 3) / 10, 1.0 + (i % 2) / 10) for i, layer in enumerate(net)}
    schemes = list(_every_scheme(net, SMALL))
    assert len({_likeness(net, scheme, SMALL)[1] for scheme in schemes}) < len(schemes)  # some are shared
    for scheme in schemes:
        assert may_fit(net, SMALL, scheme, reserve) == _may_fit(net, SMALL, scheme, reserve)
        assert estimate(net, SMALL, scheme, reserve, scale) == _estimate(net, SMALL, scheme, reserve, scale)
        assert estimate(net, SMALL, scheme, 0) == _estimate(net, SMALL, scheme, 0, None)
    # all at once, as a search asks (a segment's schemes share its layers' scale)
    assert estimates(net, SMALL, schemes, reserve, scale) == [_estimate(net, SMALL, s, reserve, scale) for s in schemes]
    assert estimates(net, SMALL, schemes) == [_estimate(net, SMALL, s, 0, None) for s in schemes]


def test_an_estimate_is_that_of_the_hardware_asked_about_whatever_was_asked_before():
    net = get_network("resnet18", batch=4)
    scheme = next(s for s in _every_scheme(net, SMALL) if len(s.layers) == 3)
    other = SMALL.replace(mac_pj=SMALL.mac_pj * 2)
    first = estimate(net, SMALL, scheme)
    assert estimate(net, other, scheme) == _estimate(net, other, scheme, 0, None) != first
    assert estimate(net, SMALL, scheme) == first


_COUNTS = st.sampled_from([0.0, 1.0, 2.0, 2.5, 7.0])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_COUNTS, _COUNTS, _COUNTS, st.integers(1, 3)), max_size=12))
def test_the_pareto_front_is_the_schemes_no_other_dominates_in_their_order(points):
    schemes = [(f"s{i}", Estimate(1.0, t, dram, onchip, groups)) for i, (dram, onchip, t, groups) in enumerate(points)]
    kept = pareto(schemes)  # type: ignore[arg-type]
    assert kept == [(s, e) for s, e in schemes if not any(o.dominates(e) for _, o in schemes)]


@pytest.mark.parametrize("name,training", [("resnet18", False), ("resnet18", True), ("googlenet", True),
                                           ("efficientnet_b0", True), ("lstm_m", True), ("gpt2", True)])
def test_segments_of_one_kind_have_the_schemes_fits_and_flow_of_the_first_renamed(name, training):
    # a search enumerates and fits a kind of segment once, and renames its schemes
    # for the others of that kind: each must be what that segment's own are
    net = get_network(name, batch=4)
    net = net.to_training() if training else net
    reserve = 300
    first: dict = {}
    alike = 0
    for ending in segment_plans(net, 5):
        for p in ending:
            fresh = [(s, may_fit(net, SMALL, s, reserve)) for s in inter_schemes(net, SMALL, p, False)]
            kind = segment_kind(net, p.layers)
            if kind is None:
                assert len(p.layers) == len(net)
                continue
            known = first.setdefault(kind, (p, fresh))
            if known[0] is p:
                continue
            alike += 1
            rename = dict(zip(known[0].layers, p.layers, strict=True))
            renamed = [(alike_scheme(s, p.layers), fits) for s, fits in known[1]]
            assert renamed == fresh
            for (mine, _), (theirs, _), (template, _) in zip(renamed, fresh, known[1], strict=True):
                assert _likeness(net, mine, SMALL)[1] == _likeness(net, theirs, SMALL)[1]
                assert estimate(net, SMALL, mine, reserve) == _estimate(net, SMALL, theirs, reserve, None)
                # the data flow worked out for the first segment, renamed, is this one's
                was = placements(net, SMALL, template)
                assert {rename[n]: (rename_place(pl, rename)) for n, pl in was.items()} == \
                    placements(net, SMALL, theirs)
    assert alike > 0


def rename_place(place, rename):
    return replace(place, layer=rename[place.layer], onchip_inputs=tuple(rename[n] for n in place.onchip_inputs),
                   shares_input_of=None if place.shares_input_of is None else rename[place.shares_input_of])


def test_a_segment_not_a_run_of_the_order_or_the_whole_network_has_no_kind():
    net = get_network("resnet18", batch=4)
    names = net_layers(net)
    order = schedule_order(net)
    assert segment_kind(net, names) is None
    assert segment_kind(net, (order[1], order[0])) is None
    assert segment_kind(net, (order[0], order[2])) is None
    assert segment_kind(net, order[:2]) is not None


def test_segments_whose_layers_read_one_fmap_or_two_from_dram_are_not_of_one_kind():
    # block 1: two fcs read the same fmap from DRAM (the second can take it from the
    # first); block 2: alike layers read two fmaps of that shape, each its own
    b = NetworkBuilder("readers", 8)
    x = b.fc("x", b.input("in", 64), 64)
    y = b.fc("y", x, 64)
    z = b.fc("z", x, 64)
    b.eltwise("add1", [b.fc("a1", y, 64), b.fc("b1", y, 64)])
    b.eltwise("add2", [b.fc("a2", y, 64), b.fc("b2", z, 64)])
    net = b.build()
    first, second = ("a1", "b1", "add1"), ("a2", "b2", "add2")
    assert None is not segment_kind(net, first) != segment_kind(net, second) is not None
    shared = [s for s in inter_schemes(net, SMALL, plan(net, *first), False) if s.share_inputs]
    assert shared and placements(net, SMALL, shared[0])["b1"].shares_input_of == "a1"
    assert not any(s.share_inputs for s in inter_schemes(net, SMALL, plan(net, *second), False))


@settings(max_examples=30, deadline=None)
@given(random_block, st.lists(st.booleans(), min_size=3, max_size=3), st.booleans())
def test_segments_of_one_kind_in_random_networks_have_the_schemes_and_flow_of_the_first_renamed(block, taps, training):
    # a block of layers wired at random, repeated three times, some blocks' layers also read at
    # the end: segments alike in shape but not in where their data come from or go must not be
    # taken for one kind
    net = repeated_blocks(block, taps, training)
    first: dict = {}
    for ending in segment_plans(net, 5):
        for p in ending:
            fresh = [(s, may_fit(net, SMALL, s, 100)) for s in inter_schemes(net, SMALL, p, False)]
            kind = segment_kind(net, p.layers)
            if kind is None:
                continue
            known = first.setdefault(kind, (p, fresh))
            if known[0] is p:
                continue
            rename = dict(zip(known[0].layers, p.layers, strict=True))
            assert [(alike_scheme(s, p.layers), fits) for s, fits in known[1]] == fresh
            for (theirs, _), (template, _) in zip(fresh, known[1], strict=True):
                was = placements(net, SMALL, template)
                assert {rename[n]: rename_place(pl, rename) for n, pl in was.items()} == \
                    placements(net, SMALL, theirs)
                assert estimate(net, SMALL, alike_scheme(template, p.layers), 100) == \
                    _estimate(net, SMALL, theirs, 100, None)
