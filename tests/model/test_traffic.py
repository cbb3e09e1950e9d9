"""Data a segment keeps on chip (a forwarded input, pinned weights) in schemes
whose node level bypasses them: they still sit in the node buffers, so they
are read there and delivered over the array bus like any data."""

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.dataflow.directives import LayerScheme, LevelScheme, Loop, Stack
from kapla.dataflow.tensors import Kind
from kapla.model import evaluate
from kapla.model.evaluate import ITCN, STATIC, Feed
from kapla.model.nests import from_schemes
from kapla.model.rules import used_units
from kapla.search.layer.kapla.solver import KaplaIntraSolver
from kapla.space.layer.batch import enumerate_and_cost
from kapla.space.layer.classic_view import skeletons
from kapla.space.layer.skeletons import build_scheme
from kapla.space.problem import Problem
from kapla.workload.zoo import get_network
from tests.conftest import small_hierarchy, small_layers

ARCH = load_arch("multinode").with_options(buffer_sharing=False)
FC2 = get_network("mlp_s", 64)["fc2"]


def scheme_pair():
    """A scheme of MLP-S's fc2 and the same scheme with the node level bypassing input and weights."""
    skel = next(iter(skeletons(FC2, 64, ARCH)))
    held = build_scheme(skel, enumerate_and_cost(skel, ARCH).blocking)
    levels = list(held.levels)
    levels[1] = replace(levels[1], bypass=frozenset({Kind.IFM, Kind.WGT}))
    return held, replace(held, levels=tuple(levels))


@pytest.mark.parametrize("feed", [Feed(ifm_hops=1.0, pinned=True), Feed(ifm_hops=2.0, pinned=True, to_dram=False)])
def test_on_chip_data_the_node_bypasses_reach_the_pes_over_the_bus(feed):
    held, bypassed = scheme_pair()
    # costed as another tool's scheme would be: the blocking was found for data from DRAM
    a, b = (evaluate(s, ARCH, feed, check=False, feed_rule=False) for s in (held, bypassed))
    ifm, wgt = "fc2.in", "fc2.w"
    for tensor in (ifm, wgt):
        assert b.accesses[ITCN][tensor] > 0  # delivered into the PEs all the same
        assert b.accesses["REGF"][tensor] == a.accesses["REGF"][tensor]  # the datapath's reads, nothing more
        assert b.accesses["DRAM"].get(tensor, 0) == 0  # on chip: never from DRAM
    # the forwarded input and the pinned weights are read from the node buffers that hold
    # them, once per word their units use together (no free data)
    for tensor in (ifm, wgt):
        assert b.accesses["GBUF"][tensor] > 0


def test_pinned_weights_the_node_bypasses_are_read_from_the_node_buffers_once_per_use():
    """Pinned weights streamed past a scheme's node level still live in the node
    buffers: each word the PEs fetch from above is one read there, as many as the
    same scheme would read from DRAM were the weights not pinned (before, they cost
    nothing anywhere). Held at the node level, its own reads serve them."""
    held, bypassed = scheme_pair()
    wgt = "fc2.w"
    pinned = evaluate(bypassed, ARCH, Feed(pinned=True), check=False, feed_rule=False)
    from_dram = evaluate(bypassed, ARCH, Feed(), check=False, feed_rule=False)
    assert from_dram.accesses["DRAM"][wgt] >= FC2.c * FC2.k  # every weight at least once
    assert pinned.accesses["GBUF"][wgt] == pytest.approx(from_dram.accesses["DRAM"][wgt])
    assert pinned.accesses["DRAM"].get(wgt, 0) == 0
    held_cost = evaluate(held, ARCH, Feed(pinned=True), check=False, feed_rule=False)
    assert held_cost.accesses["GBUF"][wgt] > 0
    # nn_dataflow's counting (its imported schedules alone): no read anywhere
    free = evaluate(bypassed, ARCH, Feed(pinned=True, free_bypassed_pins=True), check=False, feed_rule=False)
    assert free.accesses["GBUF"].get(wgt, 0) == 0 and free.accesses["DRAM"].get(wgt, 0) == 0
    assert free.energy["GBUF"] < pinned.energy["GBUF"]


def test_a_stack_unit_wholly_beyond_the_layer_moves_nothing():
    """13 output rows over a stack of 14 PEs (nn_dataflow's Eyeriss folding):
    the 14th PE is idle, so the buses carry what 13 PEs need, the words 13
    PEs would get (kapla's check still rejects the idle PE)."""
    layer = get_network("alexnet", 64)["conv3_a"]  # 13 x 13 output
    arch = load_arch("multinode").with_level("REGF", array=[8, 16])

    def scheme(pes):
        unit = (("N", 1), ("C", 1), ("K", 1), ("Y", 1), ("X", 13), ("S", 1), ("R", 3))
        rest = (("N", 64), ("C", 256), ("K", 192))
        levels = (LevelScheme("REGF", (Stack("S", 3, 1), Stack("Y", 1, pes))),
                  LevelScheme("GBUF", (), tuple(Loop(d, n) for d, n in rest)))
        return LayerScheme(layer, 64, unit, levels)

    idle, exact = scheme(14), scheme(13)
    assert [int(u[0]) for u in used_units(from_schemes([idle]))] == [3 * 13, 1, 1]
    assert evaluate(exact, arch).valid
    assert "idle iterations" in str(evaluate(idle, arch).validity)
    a, b = evaluate(idle, arch, check=False), evaluate(exact, arch, check=False)
    for level in (ITCN, "GBUF", "DRAM", "REGF"):
        assert a.accesses[level] == b.accesses[level], level


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_layers(), st.integers(1, 3), st.sampled_from(["multinode", "multinode_nndataflow", "edge", "eyeriss"]),
       st.floats(0.05, 0.95), st.floats(0.0, 4.0), st.booleans())
def test_an_input_forwarded_in_part_costs_its_share_of_each_way(layer, batch, name, share, hops, to_dram):
    """A layer reading fmaps its segment makes and others (``ifm_share``): every component
    but the time-bound static energy, and every level's accesses, are the share's blend of
    the input all forwarded and all from DRAM."""
    arch = small_hierarchy(name)
    # the first skeleton with a blocking that fits (a skeleton may have none: a 12x12 filter
    # whose rows no register file of the PE mapping holds)
    blocked = ((skel, enumerate_and_cost(skel, arch).blocking) for skel in skeletons(layer, batch, arch))
    found = next(((skel, blocking) for skel, blocking in blocked if blocking is not None), None)
    assume(found is not None)
    scheme = build_scheme(*found)
    costs = [evaluate(scheme, arch, Feed(ifm_hops=h, to_dram=to_dram, ifm_share=s), check=False, feed_rule=False)
             for h, s in ((hops, 1.0), (None, 1.0), (hops, share))]
    forwarded, fetched, mixed = costs
    for part in set(forwarded.energy) | set(fetched.energy):
        if part == STATIC:
            continue
        blend = share * forwarded.energy.get(part, 0.0) + (1 - share) * fetched.energy.get(part, 0.0)
        assert mixed.energy.get(part, 0.0) == pytest.approx(blend, rel=1e-9, abs=1e-18), part
    for level in set(forwarded.accesses) | set(fetched.accesses):
        tensors = set(forwarded.accesses.get(level, {})) | set(fetched.accesses.get(level, {}))
        for tensor in tensors:
            blend = (share * forwarded.accesses.get(level, {}).get(tensor, 0.0)
                     + (1 - share) * fetched.accesses.get(level, {}).get(tensor, 0.0))
            assert mixed.accesses.get(level, {}).get(tensor, 0.0) == pytest.approx(blend, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("name", ["conv1_dw.bwd", "conv3_dw.bwd", "conv2_dw.bwd"])
def test_a_data_gradient_written_with_its_halo_is_never_read_back_below_zero(name):
    # a backward-data layer writes the input's gradient, windows that overlap as
    # they slide: the words written for the first time shrink with the overlap as
    # the writes do (they were counted whole: the solver's best schemes of
    # MobileNet's depthwise gradients had negative DRAM, buffer and bus
    # accesses, -8 mJ in its training DAG)
    layer = get_network("mobilenet", 64).to_training()[name]
    problem = Problem(layer, 64, load_arch("multinode"))
    for outcome in KaplaIntraSolver().run_each(problem, ("energy", "latency")):
        cost = outcome.cost
        assert all(words >= 0 for per in cost.accesses.values() for words in per.values())
        assert all(joules >= 0 for joules in cost.energy.values())
