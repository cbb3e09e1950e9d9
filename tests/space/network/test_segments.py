import itertools

import pytest

from kapla.space.network.segments import allocate_regions, schedule_order, segment_plans, slots_of
from kapla.workload.network import NetworkBuilder
from kapla.workload.zoo import get_network

#: nn_dataflow 2.1's scheduling-DAG vertices of its Show-and-Tell LSTM (InterLayerPipeline.dag_vertex_list),
#: in kapla's names: the gates, with the element-wise layers each one's output flows into.
LSTM_STAGES = (("cell_cand",), ("cell_igate", "cell_cout_i"), ("cell_fgate", "cell_cout_f", "cell_cout"),
               ("cell_ogate", "cell_hout", "wd"))


def names(plans):
    return [p.layers for p in plans]


def test_linear_chain_segments_and_slots():
    net = get_network("alexnet", 64)
    ends = segment_plans(net, max_stages=4)
    order = [layer.name for layer in net]
    i = order.index("pool1_a")
    assert ("conv1_a", "pool1_a") in names(ends[i])
    plan = next(p for p in ends[order.index("conv2_a")] if p.layers == ("conv1_a", "pool1_a", "conv2_a"))
    # pooling joins the slot of the CONV it follows; the next CONV starts a new slot
    assert plan.slots == (("conv1_a", "pool1_a"), ("conv2_a",))


def test_inception_branches_share_their_input():
    net = get_network("googlenet", 64)
    order = [layer.name for layer in net]
    j = order.index("inception_3a_3x3_reduce")
    # the 1x1 and 3x3-reduce branches read the same off-chip input, so they may run together
    assert ("inception_3a_1x1", "inception_3a_3x3_reduce") in names(segment_plans(net, 5)[j])


def test_outputs_leave_for_at_most_one_outside_consumer():
    net = get_network("resnet50", 64)
    order = list(schedule_order(net))
    for plans in segment_plans(net, 5):
        for plan in plans:
            inside = set(plan.layers)
            for name in plan.layers:
                consumers = set(net.consumers(name))
                if consumers & inside:
                    assert len(consumers - inside) <= 1
            for a, b in itertools.pairwise(plan.layers):
                assert order.index(b) == order.index(a) + 1


def test_regions_are_sized_by_operations_and_fit_the_array():
    net = get_network("alexnet", 64)
    slots = slots_of(net, ("conv3_a", "conv4_a", "conv5_a", "pool3_a"))
    regions = allocate_regions(net, slots, (16, 16))
    assert regions is not None and len(regions) == 3
    assert sum(r.nodes for r in regions) == 256
    cells = set()
    for r in regions:
        for dr in range(r.shape[0]):
            for dc in range(r.shape[1]):
                cell = (r.origin[0] + dr, r.origin[1] + dc)
                assert 0 <= cell[0] < 16 and 0 <= cell[1] < 16 and cell not in cells
                cells.add(cell)
    # conv3 (256 -> 192 channels) does more work than conv5 (192 -> 128): a larger region
    assert regions[0].nodes > regions[2].nodes


def test_an_lstm_cell_is_one_segment_of_its_four_gate_stages():
    net = get_network("lstm_m", 64)
    whole = tuple(layer.name for layer in net)
    assert len(whole) == 9
    assert slots_of(net, whole) == LSTM_STAGES
    # each stage's layers are kept together, so a segment never has to split one
    assert schedule_order(net) == tuple(name for stage in LSTM_STAGES for name in stage)
    last = segment_plans(net, 5)[-1]
    assert [p.slots for p in last if len(p) == len(net)] == [LSTM_STAGES]


@pytest.mark.parametrize("max_stages", [1, 2, 3, 4, 5])
def test_the_limit_counts_stages_not_layers(max_stages):
    net = get_network("lstm_l", 64)  # four stacked cells
    plans = [p for ends in segment_plans(net, max_stages) for p in ends]
    assert all(len(p.slots) <= max_stages for p in plans)
    # the limit is reached, by segments with more layers than stages
    assert max(len(p.slots) for p in plans) == max_stages
    assert any(len(p) > len(p.slots) for p in plans if len(p.slots) == max_stages)
    # a whole cell (8 layers) needs 4 stages
    cell = {n for n in (layer.name for layer in net) if n.startswith("cell1_")}
    assert any(set(p.layers) == cell for p in plans) == (max_stages >= 4)


def test_the_limit_honours_every_network():
    for name in ("googlenet", "resnet50", "mlp_l"):
        net = get_network(name, 64)
        for max_stages in (2, 5):
            ends = segment_plans(net, max_stages)
            assert all(len(p.slots) <= max_stages for plans in ends for p in plans)
    mlp = get_network("mlp_m", 64)
    assert any(len(p) == 4 for p in segment_plans(mlp, 4)[-1])
    assert not any(len(p) == 4 for p in segment_plans(mlp, 3)[-1])


def test_a_weightless_layer_joins_the_latest_slot_that_ends_with_its_producer():
    net = get_network("resnet50", 64)
    # the addition has two producers in the segment; it runs after the shortcut, on its region
    block = ("conv2_0_a", "conv2_0_b", "conv2_0_c", "conv2_br", "conv2_0_res")
    assert slots_of(net, block) == (("conv2_0_a",), ("conv2_0_b",), ("conv2_0_c",), ("conv2_br", "conv2_0_res"))


def test_a_producer_read_by_another_layer_of_the_segment_keeps_its_slot_to_itself():
    b = NetworkBuilder("fork", 8)
    x = b.input("x", 64)
    b.fc("fc", x, 64)
    b.eltwise("act", ["fc"], mode="unary")
    b.fc("side", "fc", 64)
    net = b.build()
    assert slots_of(net, ("fc", "act")) == (("fc", "act"),)
    # "side" reads fc's output too: "act" would run on data the region must keep for it
    assert slots_of(net, ("fc", "act", "side")) == (("fc",), ("act",), ("side",))
    whole = ("fc", "act", "side")
    assert whole in names(segment_plans(net, 3)[2]) and whole not in names(segment_plans(net, 2)[2])


def test_a_layer_may_join_through_a_later_layer_of_the_segment():
    net = get_network("resnet50", 64)
    order = list(schedule_order(net))
    j = order.index("conv5_0_res")
    plans = [p.layers for p in segment_plans(net, 5)[j]]
    # the shortcut conv shares no input with conv5_0_c; the addition reading both links them, as in nn_dataflow
    assert ("conv5_0_c", "conv5_br", "conv5_0_res") in plans
    assert ("conv5_0_c", "conv5_br") not in [p.layers for p in segment_plans(net, 5)[order.index("conv5_br")]]
