"""Inter-layer schemes: layouts and batch groups, where data flow, the estimate and validity pruning."""

import pytest

from kapla.arch import load_arch
from kapla.dataflow.segment import Region
from kapla.dataflow.tensors import Kind, footprint, layer_dims
from kapla.solve.inter import InterScheme, estimate, inter_schemes, may_fit, placements
from kapla.solve.segments import SegmentPlan, slots_of
from kapla.workload.zoo import get_network

MULTINODE = load_arch("multinode")
SMALL = load_arch("multinode").with_node_region(4, 4)


def plan(net, *layers):
    return SegmentPlan(layers, slots_of(net, layers))


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


def test_validity_pruning_rejects_a_forwarded_piece_no_region_can_hold():
    net = get_network("vgg16", 64)
    seg = next(s for s in inter_schemes(net, SMALL, plan(net, "conv1_1", "conv1_2"), False)
               if s.layout == "temporal" and s.groups == 1)
    # 64 x 64 x 224 x 224 words cannot wait in 16 nodes' buffers, even split in 16 groups
    assert not may_fit(net, SMALL, seg, reserve=0)
    small = get_network("mlp_s", 64)
    seg = inter_schemes(small, SMALL, plan(small, "fc1", "fc2"), False)[0]
    assert may_fit(small, SMALL, seg, reserve=0)
