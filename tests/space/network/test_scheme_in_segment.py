"""A layer solve's scheme as a layer's own in a segment: its names and the outer batch-group loop."""

import pytest

from kapla.arch import load_arch
from kapla.model import evaluate
from kapla.search.layer.kapla.solver import KaplaIntraSolver
from kapla.space.network.inter import outer_batch, scheme_in_segment
from kapla.workload.zoo import get_network

SMALL = load_arch("multinode").with_node_region(4, 4)


def test_batch_groups_wrap_the_layer_scheme_in_an_outer_batch_loop():
    net = get_network("alexnet", 64)
    layer = net["conv3_a"]
    sub = KaplaIntraSolver().solve(layer, 16, SMALL).scheme
    whole = outer_batch(sub, layer, 4, None)
    assert whole.batch == 64 and whole.levels[-1].updates[0].dim == "N"
    part, full = evaluate(sub, SMALL), evaluate(whole, SMALL)
    assert full.valid
    # four groups do four times the work of one
    assert full.ops == 4 * part.ops and full.time == pytest.approx(4 * part.time)


def test_a_solved_scheme_takes_the_layers_name_and_its_producers():
    net = get_network("alexnet", 16)
    generic = KaplaIntraSolver().solve(net["conv3_a"], 16, SMALL).scheme  # solved under the layer's shape
    mine = scheme_in_segment(net, "conv3_b", generic)
    assert mine.layer == net["conv3_b"] and mine.ifm_name == "+".join(net.producers("conv3_b"))
    assert mine.levels == generic.levels and mine.batch == 16
    assert scheme_in_segment(net, "conv1_a", generic).ifm_name == ("+".join(net.producers("conv1_a")) or None)
