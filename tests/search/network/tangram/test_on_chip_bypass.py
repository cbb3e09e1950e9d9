"""A segment's layers stream the data their segment keeps on chip (a forwarded input, pinned
weights) past their own node buffers when their scheme reads each word once: LSTM-M's gates
(issue 22). The data are still read from the buffers that hold them (tests/model/test_traffic.py)."""

import pytest

import kapla
from kapla.arch import load_arch
from kapla.dataflow.tensors import Kind
from kapla.model.evaluate import evaluate
from kapla.model.feed import Feed
from kapla.search.layer.kapla.solver import KaplaIntraSolver
from kapla.search.result import ScheduleResult
from kapla.space.layer.bypass import bypass_variants, cheapest_bypass, on_chip_kinds, with_bypass
from kapla.space.problem import Problem
from kapla.workload.zoo import get_network

NNDATAFLOW = load_arch("multinode_nndataflow")
GATES = ("cell_cand", "cell_igate", "cell_fgate", "cell_ogate")
NN_DATAFLOW_OPTIMUM_J = 0.4022e-3  # nn_dataflow's own figure for LSTM-M (lstm_showtell) at batch 64


@pytest.fixture(scope="module")
def lstm_m() -> ScheduleResult:
    return kapla.schedule("lstm_m", NNDATAFLOW, batch=64, jobs=1)


def test_lstm_m_uses_no_more_energy_than_nn_dataflows_optimum(lstm_m):
    """Issue 22, line 1: the gates' weights (pinned) and input (fetched once for all four) go from
    the node buffers holding them straight into the PEs; each node no longer re-reads a copy of
    its own. Before: 0.4047 mJ, each gate ~2.4 M node-buffer accesses."""
    assert lstm_m.valid
    assert lstm_m.energy_j <= NN_DATAFLOW_OPTIMUM_J
    for gate in GATES:
        cost = lstm_m.layer(gate).cost
        assert sum(cost.accesses["GBUF"].values()) < 2.0e6
        # the pinned weights are read from the node buffers all the same: at least once each
        assert cost.accesses["GBUF"][f"{gate}.w"] >= 1024 * 512


def test_the_gates_bypass_only_what_their_segment_keeps_on_chip(lstm_m):
    """cell_cand reads its input from DRAM: only its pinned weights bypass its node buffers; the
    other gates get the input on chip (cell_cand fetched it for all four) and bypass both."""
    gbuf = {d["name"]: d["directives"].split("GBUF:")[1].splitlines() for d in lstm_m.to_dict()["layers"]}

    def bypassed(layer, tensor):
        return any(line.strip().startswith(f"tensor{{{tensor}}}") and "bypass" in line for line in gbuf[layer])

    assert bypassed("cell_cand", "cell_cand.w") and not bypassed("cell_cand", "cell_hinit+data")
    for gate in GATES[1:]:
        assert bypassed(gate, f"{gate}.w") and bypassed(gate, "cell_hinit+data")


def _gate_problem(feed: Feed) -> Problem:
    layer = get_network("lstm_m", 64)["cell_igate"]
    return Problem(layer, 64, NNDATAFLOW, "energy", feed)


def test_variants_drop_the_sharing_of_what_they_bypass_and_are_chosen_only_when_cheaper():
    feed = Feed(ifm_hops=0.0, to_dram=False, pinned=True)
    problem = _gate_problem(feed)
    scheme = KaplaIntraSolver().run(problem).scheme
    assert on_chip_kinds(scheme, feed) == (Kind.IFM, Kind.WGT)
    assert on_chip_kinds(scheme, Feed()) == ()
    assert on_chip_kinds(scheme, Feed(ifm_hops=1.0, ifm_share=0.5)) == ()  # the rest comes from DRAM
    variants = bypass_variants(scheme, NNDATAFLOW, feed)
    assert [set(k) for k, _ in variants] == [{Kind.IFM}, {Kind.WGT}, {Kind.IFM, Kind.WGT}]
    for kinds, variant in variants:
        assert not set(dict(variant.levels[1].shr)) & kinds
        assert evaluate(variant, NNDATAFLOW, feed).valid
    chosen = cheapest_bypass(scheme, NNDATAFLOW, feed, "energy")
    assert chosen
    best = evaluate(with_bypass(scheme, NNDATAFLOW, chosen), NNDATAFLOW, feed)
    assert best.total_energy < evaluate(scheme, NNDATAFLOW, feed).total_energy
    # nothing on chip: nothing to bypass
    assert cheapest_bypass(scheme, NNDATAFLOW, Feed(), "energy") == frozenset()
