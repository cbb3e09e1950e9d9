"""Whole-network scheduling: inter-layer schemes, pruning, DP, and TANGRAM's qualitative results."""

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kapla.api import schedule
from kapla.arch import load_arch
from kapla.errors import KaplaError
from kapla.model import evaluate
from kapla.model.objective import LexicographicRank, Objective
from kapla.scheduling.layers import LayerService
from kapla.scheduling.run import run_parts
from kapla.search.layer.kapla.solver import KaplaIntraSolver
from kapla.search.network.tangram.scheduler import (
    MAX_SEGMENT,
    KaplaStrategy,
    PlannedStrategy,
    PruneStats,
    TangramScheduler,
    _prepare,
    _ranks,
    _top_chains,
    drive,
    kapla_dp,
)
from kapla.search.network.tangram.segment_solver import SegmentSolver
from kapla.space.network.inter import inter_schemes, may_fit, pin_reserve, weight_words
from kapla.space.network.segments import schedule_order, segment_plans
from kapla.workload.network import NetworkBuilder
from kapla.workload.zoo import get_network


def schedule_network(net, arch, solver, objective="energy", scheduler=None, jobs=None):
    """TANGRAM's segment DP (KAPLA's policy unless given) with ``solver`` for the layers."""
    return run_parts(net, arch, scheduler or kapla_dp(), solver, objective, jobs=jobs)


MULTINODE = load_arch("multinode")
SMALL = load_arch("multinode").with_node_region(4, 4)


@pytest.fixture(scope="module")
def alexnet_small():
    net = get_network("alexnet", 16)
    return net, schedule_network(net, SMALL, KaplaIntraSolver())


def test_network_schedule_is_valid_and_never_worse_than_layer_by_layer(alexnet_small):
    net, result = alexnet_small
    assert result.valid
    assert [lr.name for lr in result.layers] == [layer.name for layer in net]
    assert sorted(n for seg in result.segments for n in seg) == sorted(layer.name for layer in net)
    assert result.energy_j == pytest.approx(sum(result.energy.values()))
    # every layer's scheme passes the evaluator's check on its own region
    for lr in result.layers:
        (r0, c0), (rows, cols) = lr.region
        assert evaluate(lr.scheme, SMALL.with_node_region(rows, cols, origin=(r0, c0))).valid
    off = SMALL.with_options(spatial_layer_pipe=False, temporal_layer_pipe=False)
    layerwise = schedule_network(net, off, KaplaIntraSolver())
    assert all(len(seg) == 1 for seg in layerwise.segments)
    assert result.energy_j <= layerwise.energy_j * (1 + 1e-9)
    counts = result.extra["inter_layer_schemes"]
    assert counts["considered"] >= counts["valid"] >= counts["pareto"] >= 1 and counts["solved"] >= 1


def test_scheduling_is_deterministic(alexnet_small):
    net, result = alexnet_small
    again = schedule_network(net, SMALL, KaplaIntraSolver())
    assert again.segments == result.segments and again.energy_j == result.energy_j
    assert [lr.scheme for lr in again.layers] == [lr.scheme for lr in result.layers]


def test_worker_processes_do_not_change_the_result():
    net = get_network("mlp_m", 16)
    one = schedule_network(net, SMALL, KaplaIntraSolver(), jobs=1)
    two = schedule_network(net, SMALL, KaplaIntraSolver(), jobs=2)
    assert one.segments == two.segments and one.energy_j == two.energy_j
    assert [lr.scheme for lr in one.layers] == [lr.scheme for lr in two.layers]


def test_exhaustive_network_search_is_at_least_as_good_as_kapla():
    net = get_network("mlp_s", 8)
    arch = load_arch("multinode").with_node_region(2, 2)
    kapla = schedule(net, arch, solver="kapla")
    exhaustive = schedule(net, arch, solver="exhaustive")
    assert exhaustive.valid and kapla.valid
    assert exhaustive.energy_j <= kapla.energy_j * 1.01
    assert exhaustive.extra["inter_layer_schemes"]["solved"] >= kapla.extra["inter_layer_schemes"]["solved"]


def test_training_keeps_forward_outputs_in_dram():
    net = get_network("mlp_s", 16).to_training()
    result = schedule(net, SMALL)
    assert result.valid and result.training
    kept = [layer.name for layer in net if layer.name in net.kept]
    assert kept
    for name in kept:
        # the output tensor is named after its layer
        assert result.layer(name).cost.accesses["DRAM"].get(name, 0) > 0, f"{name} kept but not written"


def test_lstm_weights_are_pinned_on_multinode():
    net = get_network("lstm_m", 64)
    assert pin_reserve(net, MULTINODE) is not None
    result = schedule(net, MULTINODE)
    assert result.valid and result.pinned
    for layer in net:
        if layer.has_weights:
            accesses = result.layer(layer.name).cost.accesses["DRAM"]
            assert f"{layer.name}.w" not in accesses


def test_a_network_whose_layer_has_no_scheme_under_kaplas_pinning_is_scheduled_without_it():
    # 11 -> 8 channels over 9x9 at batch 2 on 16x16 nodes: the network's weights fit kapla's
    # pin reserve, but with its weights held on chip the layer alone has no scheme; that
    # run's failure failed the whole schedule ("no valid scheme"; found by hypothesis in
    # tests/scheduling/test_recost.py), where the run without kapla's pinning has one
    b = NetworkBuilder("small", batch=2)
    conv = b.conv("c0", b.input("in", 11, height=9, width=9), 8, 3, pad=1)
    b.fc("fc", conv, 10)
    net = b.build()
    assert pin_reserve(net, MULTINODE) is not None
    result = schedule(net, MULTINODE, jobs=1)
    assert result.valid
    for layer in net:
        assert evaluate(result.layer(layer.name).scheme, MULTINODE).validity.ok


class _OneRunAtATime:
    """KAPLA's strategy without its plan: the scheduler then runs with and without pinning one after the other."""

    def __init__(self) -> None:
        self._kapla = KaplaStrategy()
        self.name = self._kapla.name

    def variants(self, objective):
        return self._kapla.variants(objective)

    def chains(self, search):
        return self._kapla.chains(search)


@pytest.mark.parametrize("name", ["mlp_m", "lstm_m"])
def test_the_runs_with_and_without_pinning_side_by_side_find_what_each_finds_alone(name):
    # both runs' layer solves of a step go to the workers together; neither run's search may change
    net = get_network(name, 16)
    assert pin_reserve(net, MULTINODE) is not None
    assert isinstance(KaplaStrategy(), PlannedStrategy) and not isinstance(_OneRunAtATime(), PlannedStrategy)
    together = schedule_network(net, MULTINODE, KaplaIntraSolver(), jobs=1)
    alone = schedule_network(net, MULTINODE, KaplaIntraSolver(), jobs=1,
                             scheduler=TangramScheduler(_OneRunAtATime()))
    assert together.valid and together.energy_j == alone.energy_j and together.segments == alone.segments
    assert [r.scheme for r in together.layers] == [r.scheme for r in alone.layers]


@pytest.mark.parametrize(("name", "from_dram"), [("lstm_m", set()), ("mlp_m", set()), ("mlp_l", {"fc2"})])
def test_an_lstm_cell_and_the_mlps_run_as_one_segment_with_pinned_weights(name, from_dram):
    """TANGRAM's space: the whole network one pipelined segment of at most five
    stages, each region keeping its own weights. On rectangles of whole
    columns mlp_l's fc2 alone fills its nodes' buffers (``from_dram``); on
    folded regions sized by node count every layer pins, and KAPLA's search
    picks that one pinned segment."""
    net = get_network(name, 64)
    plan = next(p for p in segment_plans(net, MAX_SEGMENT)[-1] if len(p) == len(net))
    choices = [s for s in inter_schemes(net, MULTINODE, plan, pinned=False, folded=False)
               if s.pins and s.groups == 1]
    assert {s.layout for s in choices} == {"spatial"}
    assert len(choices[0].slots) == sum(layer.has_weights for layer in net)
    # the scheme with the most slots pinned that has a valid schedule
    solver = SegmentSolver(net, MULTINODE, LayerService(KaplaIntraSolver(), MULTINODE), ("energy",))
    candidate, cost = next(found for s in choices if (found := solver.solve(s, "energy")) is not None)
    assert cost.valid
    assert {n for n, p in candidate.placements.items() if p.pinned} == {
        layer.name for layer in net if layer.has_weights and layer.name not in from_dram}
    # 6.1 MB of weights are more than kapla's rule pins (half the chip's buffers); TANGRAM's pins them region by region
    assert (pin_reserve(net, MULTINODE) is None) == (name == "mlp_l")

    result = schedule(net, MULTINODE)
    assert result.valid and result.segments == (plan.layers,)
    (segment,) = result.segment_details
    assert result.pinned and segment.pinned
    assert result.energy_j <= cost.total_energy * (1 + 1e-9)
    reads = {layer.name for layer in net if layer.has_weights
             and f"{layer.name}.w" in result.layer(layer.name).cost.accesses["DRAM"]}
    assert reads == set()
    held = sum(weight_words(layer) for layer in net if layer.has_weights)
    assert result.pinned_load_j == pytest.approx(held * MULTINODE.levels[-1].access_energy)


@pytest.mark.parametrize("name", ["alexnet", "googlenet", "lstm_m"])
def test_pipelining_and_buffer_sharing_lower_energy(name):
    """TANGRAM's headline: the same search with pipelining (ALLO) and buffer sharing beats it without."""
    full = schedule(name, "multinode")
    bare = schedule(name, "multinode", pipelining=False, buffer_sharing=False)
    assert full.valid and bare.valid
    assert any(len(seg) > 1 for seg in full.segments)
    assert full.energy_j < bare.energy_j


def test_segment_costs_add_up_to_the_network():
    net = get_network("mlp_m", 16)
    result = schedule(net, SMALL)
    details = result.segment_details
    assert sum(d.energy_j for d in details) == pytest.approx(result.energy_j)
    assert sum(d.time_cycles for d in details) == pytest.approx(result.time)
    assert [d.layers for d in details] == list(result.segments)
    assert result.to_dict()["segment_details"] == [d.to_dict() for d in details]


def test_fewer_dp_rounds_solve_no_more_segments_and_still_give_a_valid_schedule(alexnet_small):
    net, full = alexnet_small
    one = schedule_network(net, SMALL, KaplaIntraSolver(), scheduler=kapla_dp(dp_rounds=1))
    assert one.valid and sorted(n for seg in one.segments for n in seg) == sorted(layer.name for layer in net)
    solved = one.extra["inter_layer_schemes"]["solved"]
    assert solved < full.extra["inter_layer_schemes"]["solved"]  # AlexNet's search takes more than one round
    # never worse than layer by layer, whatever the rounds: that chain is always solved
    off = SMALL.with_options(spatial_layer_pipe=False, temporal_layer_pipe=False)
    assert one.energy_j <= schedule_network(net, off, KaplaIntraSolver()).energy_j * (1 + 1e-9)


def test_dp_rounds_below_one_is_one_error_naming_the_option():
    with pytest.raises(KaplaError, match="option 'dp_rounds' must be a whole number of at least 1"):
        schedule("mlp_s", "multinode_4x4", batch=4, jobs=1, solver_options={"dp_rounds": 0})


_VALUES = st.sampled_from([0.0, 0.1, 0.2, 0.30000000000000004, 1.0, 1e-17, 3.0, 1e16, 7.5])


def _random_options(layers, data):
    """A DP's layers and, per layer, segments ending there with costs that round alike and tie."""
    options = {}
    for j in range(layers):
        for n in range(data.draw(st.integers(0 if j else 1, 6))):
            start = data.draw(st.integers(0, j))
            options.setdefault(j, []).append((start, (f"s{j}.{n}", None), (data.draw(_VALUES), data.draw(_VALUES))))
    return [f"l{i}" for i in range(layers)], options


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 7), st.integers(1, 5), st.data())
def test_the_dp_that_skips_segments_behind_the_kth_best_keeps_the_same_chains(layers, k, data):
    # sums of costs that round alike and ties: the chains kept, and their order, must not change
    order, options = _random_options(layers, data)
    for rank, slack in _ranks(None) + _ranks((2.0, 5.0)) + _ranks((0.1, 0.30000000000000004)):
        assert slack is not None
        assert _top_chains(order, options, k, rank, slack) == _top_chains(order, options, k, rank)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 7), st.integers(1, 5), st.data())
def test_a_rank_by_the_cost_terms_themselves_keeps_the_chains_its_key_keeps(layers, k, data):
    # energy, latency and EDP without a reference rank by terms of the cost pair: the DP
    # sorts its sums by those terms directly, and must keep what ranking by the key keeps
    order, options = _random_options(layers, data)
    lexicographic = [(rank, slack) for rank, slack in _ranks(None) if isinstance(rank, LexicographicRank)]
    assert len(lexicographic) == 3
    for rank, slack in lexicographic:
        as_key = lambda cost, rank=rank: rank(cost)  # noqa: E731 - the same order, as a plain key
        want = _top_chains(order, options, k, as_key)
        assert _top_chains(order, options, k, rank, slack) == want
        assert _top_chains(order, options, k, rank) == want


def test_the_segments_schemes_are_worked_out_while_the_workers_solve_the_single_layers():
    # the parent enumerates every segment's schemes while the single layers are solved, not
    # before the first solve is handed out; the schemes are those of every candidate segment
    net = get_network("alexnet", 16)
    layers = LayerService(KaplaIntraSolver(), SMALL)
    search = _prepare(net, SMALL, layers, Objective("energy"), KaplaStrategy(), time.perf_counter(), None, False,
                      0, PruneStats())
    events: list = []
    enumerate_schemes = search.enumerate_schemes
    search.enumerate_schemes = lambda: events.append("schemes") or enumerate_schemes()
    solve = layers.solve

    def recorded(jobs, progress=None, check=None, done=None, meanwhile=None):
        events.append("solving")
        solve(jobs, progress, check, done, meanwhile)
        events.append("solved")

    layers.solve = recorded
    chains = drive(KaplaStrategy().plan(search), search)
    # during the single layers' solves, then the DP's rounds
    assert chains and events[:3] == ["solving", "schemes", "solved"] and len(events) > 5
    assert events.count("schemes") == 1
    order = list(schedule_order(net))
    expected = [(order.index(plan.layers[0]), j, inter) for j, ending in enumerate(segment_plans(net, MAX_SEGMENT))
                for plan in ending for inter in inter_schemes(net, SMALL, plan, False)
                if may_fit(net, SMALL, inter, 0)]
    assert search.schemes == expected and any(len(inter.layers) > 1 for _, _, inter in expected)
