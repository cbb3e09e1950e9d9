"""Segments solved and costed: the layer costs their segments share are the
ones each segment's own evaluation gives."""

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.model.objective import OBJECTIVES
from kapla.model.segment import evaluate_segment
from kapla.scheduling.layers import LayerService
from kapla.search.layer.kapla.solver import KaplaIntraSolver
from kapla.search.network.tangram import segment_solver
from kapla.search.network.tangram.scheduler import MAX_SEGMENT
from kapla.search.network.tangram.segment_solver import SegmentSolver
from kapla.space.network.inter import estimate, inter_schemes, may_fit, placements
from kapla.space.network.segments import segment_plans
from kapla.workload.network import NetworkBuilder
from kapla.workload.zoo import get_network
from tests.conftest import random_block, repeated_blocks


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
    keys = set(solver._kind(inter)[2])
    assert all("_hash" in key.__dict__ for key in keys)
    back = [pickle.loads(pickle.dumps(key)) for key in keys]
    assert all("_hash" not in key.__dict__ for key in back)
    assert set(back) == keys


def _sibling_blocks(training):
    """Four blocks of two siblings reading one fmap, joined."""
    b = NetworkBuilder("blocks", batch=4)
    x = b.input("x", 16, 8)
    for i in range(4):
        y = b.conv(f"c{i}", x, 16, 3, pad=1)
        x = b.eltwise(f"add{i}", [b.conv(f"e{i}", x, 16, 1), b.conv(f"d{i}", y, 16, 1)])
    return b.build(training=training)


def _schemes(net, arch):
    return [inter for ending in segment_plans(net, MAX_SEGMENT) for plan in ending
            for inter in inter_schemes(net, arch, plan, pinned=False) if may_fit(net, arch, inter, 0)]


def test_a_layer_solves_key_is_one_object_whichever_segment_asks():
    # the caches find a key by identity then, not by comparing its layer field by field
    arch = load_arch("multinode_4x4")
    net = get_network("mlp_m", 16)
    solver = SegmentSolver(net, arch, LayerService(KaplaIntraSolver(), arch), OBJECTIVES)
    keys = [key for inter in _schemes(net, arch) for key in solver._kind(inter)[2]]
    distinct = {id(key) for key in keys}
    assert len(distinct) == len(set(keys)) < len(keys)


def test_schemes_are_costed_the_moment_their_last_layer_solve_arrives():
    arch = load_arch("multinode_4x4")
    net = get_network("mlp_m", 16)
    service = LayerService(KaplaIntraSolver(), arch)
    solver = SegmentSolver(net, arch, service, OBJECTIVES)
    schemes = _schemes(net, arch)
    service.solve(solver.jobs(schemes[:3]))  # some layers solved before: their schemes wait for nothing
    ready = [inter for inter in schemes if not solver.jobs([inter])]
    assert ready and len(ready) < len(schemes)
    arrived = []
    costed_at = {}
    costing = solver.costing(schemes)

    def note(step):
        for inter in schemes:
            if inter not in costed_at and solver.is_solved(inter):
                costed_at[inter] = step

    def done(key):
        arrived.append(key)
        costing.done(key)
        note(len(arrived))

    def meanwhile():
        costing.ready()
        note(0)

    service.solve(solver.jobs(schemes), done=done, meanwhile=meanwhile)
    assert set(costed_at) == set(schemes)  # every one costed, none left to the plan
    for inter in schemes:
        needs = set(solver._kind(inter)[2]) & set(arrived)
        # at once, not before: those waiting for no solve as the workers start
        assert costed_at[inter] == (max(arrived.index(key) for key in needs) + 1 if needs else 0)
    # the same costs as a solver that costs each when asked, after all its solves
    later = SegmentSolver(net, arch, service, OBJECTIVES)
    for inter in schemes:
        assert [(o, f[1]) for o, f in later.variants(inter)] == [(o, f[1]) for o, f in solver.variants(inter)]
    # nothing is costed twice: what is costed has nothing left to cost
    calls = []
    solver.variants = lambda inter: calls.append(inter)  # type: ignore[method-assign]
    again = solver.costing(schemes)
    again.ready()
    for key in arrived:
        again.done(key)
    assert calls == []


def test_segments_alike_but_for_their_names_are_evaluated_once_and_cost_what_each_alone_costs(monkeypatch):
    # a deep network repeats a few blocks: a segment of one is costed like the same segment of another
    arch = load_arch("multinode_4x4")
    b = NetworkBuilder("blocks", batch=4)
    x = b.input("x", 16, 8)
    for i in range(6):
        x = b.conv(f"c{i}", x, 16, 3, pad=1)
    net = b.build(training=True)
    evaluated = []

    def counted(segment, arch_, memo=None):
        evaluated.append(segment)
        return evaluate_segment(segment, arch_, memo)

    monkeypatch.setattr(segment_solver, "evaluate_segment", counted)
    solver = SegmentSolver(net, arch, LayerService(KaplaIntraSolver(), arch), OBJECTIVES)
    found = [one for inter in _schemes(net, arch) for _, one in solver.variants(inter)]
    assert len(found) > 20 and len(evaluated) < len(found) / 2
    for segment, cost in found:
        alone = evaluate_segment(segment, arch)
        assert cost == alone  # the layers' costs too, under their own names
        assert [c.layer for c in cost.layers.values()] == list(segment.layers)
        assert pickle.loads(pickle.dumps(cost)) == alone


def test_schemes_of_one_kind_share_placements_and_solve_keys_by_position_named_each_its_own():
    # worked out for the first scheme of a kind, renamed for the others: each must be its own
    arch = load_arch("multinode_4x4")
    net = _sibling_blocks(training=True)
    schemes = _schemes(net, arch)
    assert any(p.shares_input_of for inter in schemes for p in placements(net, arch, inter).values())
    solver = SegmentSolver(net, arch, LayerService(KaplaIntraSolver(), arch), OBJECTIVES)
    fresh = SegmentSolver(net, arch, LayerService(KaplaIntraSolver(), arch), OBJECTIVES)
    for inter in schemes:
        places = placements(net, arch, inter)
        assert solver.placements(inter) == places
        assert list(solver.placements(inter)) == list(places)
        assert solver._kind(inter)[2] == tuple(fresh._make_key(inter, place) for place in places.values())
    assert len(solver._kinds) < len(schemes) / 2
    # the kinds are numbered per network and hardware: asking about others meanwhile renumbers them
    other = load_arch("multinode")
    assert estimate(net, other, schemes[-1]) is not None
    for inter in schemes[::-1]:  # numbered anew in another order
        solver._places.clear()
        assert solver.placements(inter) == placements(net, arch, inter)
        assert solver._kind(inter)[2] == tuple(fresh._make_key(inter, place)
                                               for place in placements(net, arch, inter).values())


def _totals(variants):
    return [(objective, cost.total_energy, cost.time, cost.valid) for objective, cost in variants]


def _costs_match_own_variants(net, arch):
    # one solver asked for costs only (alike segments take their kind's first), one asked for
    # each segment's own variants: every segment's objectives and totals agree, in either order
    schemes = _schemes(net, arch)
    service = LayerService(KaplaIntraSolver(), arch)
    cheap = SegmentSolver(net, arch, service, OBJECTIVES)
    own = SegmentSolver(net, arch, service, OBJECTIVES)
    for inter in schemes:
        assert _totals(cheap.costs(inter)) == _totals((o, f[1]) for o, f in own.variants(inter))
        assert cheap.is_solved(inter)
    for inter in schemes[::-1]:
        assert _totals(cheap.costs(inter)) == _totals((o, f[1]) for o, f in cheap.variants(inter))
    return len(schemes), len(cheap._kinds)


def test_a_segment_of_a_kind_seen_before_costs_what_its_own_variants_cost():
    # its schemes are made only when asked for: its costs are its kind's first's
    arch = load_arch("multinode_4x4")
    for training in (False, True):
        schemes, kinds = _costs_match_own_variants(_sibling_blocks(training), arch)
        assert kinds < schemes / 2


@settings(max_examples=4, deadline=None)
@given(random_block.filter(lambda block: len(block) <= 4), st.lists(st.booleans(), min_size=3, max_size=3))
def test_segments_of_random_repeated_blocks_cost_what_their_own_variants_cost(block, taps):
    # a randomly wired block repeated three times, some blocks tapped at the end
    _costs_match_own_variants(repeated_blocks(block, taps), load_arch("multinode_4x4"))
