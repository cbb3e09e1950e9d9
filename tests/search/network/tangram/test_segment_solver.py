"""Segments solved and costed: the layer costs their segments share are the
ones each segment's own evaluation gives."""

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
