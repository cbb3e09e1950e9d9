import itertools

from kapla.solve.segments import allocate_regions, segment_plans, slots_of
from kapla.workload.zoo import get_network


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
    order = [layer.name for layer in net]
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
