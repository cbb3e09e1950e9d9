"""Segments solved and costed: the layer costs their segments share are the
ones each segment's own evaluation gives."""

import pickle

from kapla.arch import load_arch
from kapla.model.objective import OBJECTIVES
from kapla.model.segment import evaluate_segment
from kapla.scheduling.layers import LayerService
from kapla.search.layer.kapla.solver import KaplaIntraSolver
from kapla.search.network.tangram.scheduler import MAX_SEGMENT
from kapla.search.network.tangram.segment_solver import SegmentSolver
from kapla.space.network.inter import inter_schemes, may_fit
from kapla.space.network.segments import segment_plans
from kapla.workload.zoo import get_network


def test_segments_costed_with_shared_layer_costs_cost_what_each_alone_costs():
    arch = load_arch("multinode_4x4")
    net = get_network("mlp_m", 16)
    solver = SegmentSolver(net, arch, LayerService(KaplaIntraSolver(), arch), OBJECTIVES)
    schemes = [inter for ending in segment_plans(net, MAX_SEGMENT) for plan in ending
               for inter in inter_schemes(net, arch, plan, pinned=False) if may_fit(net, arch, inter, 0)]
    layers = 0
    found = []
    for inter in schemes[::3]:  # every third scheme: segments of every length, a few seconds
        for _, (segment, cost) in solver.variants(inter):
            found.append((segment, cost))
            layers += len(segment.layers)
    assert len(found) > 10 and any(len(segment.layers) > 2 for segment, _ in found)
    assert len(solver.memo.costs) < layers  # layers placed and fed alike were costed once
    for segment, cost in found:
        assert evaluate_segment(segment, arch) == cost


def test_a_layer_solves_key_pickles_without_the_hash_it_keeps():
    # keys travel to the on-disk store: a hash kept from this process must not
    # (strings hash differently in another)
    arch = load_arch("multinode_4x4")
    net = get_network("mlp_m", 16)
    solver = SegmentSolver(net, arch, LayerService(KaplaIntraSolver(), arch), OBJECTIVES)
    inter = next(inter for ending in segment_plans(net, MAX_SEGMENT) for plan in ending
                 for inter in inter_schemes(net, arch, plan, pinned=False) if len(inter.layers) > 1)
    keys = {solver._key(inter, place) for place in solver.placements(inter).values()}
    assert all("_hash" in key.__dict__ for key in keys)
    back = [pickle.loads(pickle.dumps(key)) for key in keys]
    assert all("_hash" not in key.__dict__ for key in back)
    assert set(back) == keys
