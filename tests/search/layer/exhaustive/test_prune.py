"""The exhaustive search's pruning loses nothing: on small layers, over every
kind of hierarchy, objective and feed, branch and bound returns the optimum
that costing every candidate of the space finds (the same objective and
energy), and its scheme is valid."""

from __future__ import annotations

import pytest

from kapla.model import evaluate
from kapla.model.feed import FROM_DRAM, Feed
from kapla.search.layer.exhaustive.solver import _solve
from kapla.space.problem import Problem
from kapla.workload.layer import Layer, Op
from tests.conftest import small_hierarchy

LAYERS = {
    "conv": (Layer("c", Op.CONV, c=4, k=6, h=6, w=6, s=3, r=3), 2),
    "fc": (Layer("f", Op.FC, c=12, k=8, h=1, w=1), 4),
    "dw": (Layer("d", Op.CONV, c=4, k=4, h=6, w=6, s=3, r=3, groups=4), 2),
    "strided": (Layer("s", Op.CONV, c=3, k=4, h=9, w=9, s=3, r=3, stride=(2, 2)), 1),
}
CASES = [
    ("multinode", "conv", "energy", FROM_DRAM), ("multinode", "fc", "latency", FROM_DRAM),
    ("multinode", "dw", "edp", Feed(ifm_hops=1.0)), ("edge", "strided", "energy", FROM_DRAM),
    ("eyeriss", "conv", "energy", Feed(to_dram=False, dram_hops=2.0)),
    ("simba", "fc", "edp", FROM_DRAM), ("simba", "dw", "energy", Feed(ifm_hops=1.0)),
    ("four_level.yaml", "conv", "energy", FROM_DRAM),
    ("four_level.yaml", "strided", "latency", Feed(pinned=True)), ("four_level_l2.yaml", "fc", "energy", FROM_DRAM),
    ("four_level_pe_buffer.yaml", "conv", "energy", FROM_DRAM), ("eyeriss_lbuf.yaml", "dw", "energy", FROM_DRAM),
]


@pytest.mark.parametrize(("name", "key", "objective", "feed"), CASES)
def test_branch_and_bound_finds_what_costing_everything_finds(name, key, objective, feed):
    layer, batch = LAYERS[key]
    problem = Problem(layer, batch, small_hierarchy(name), objective, feed)
    pruned, everything = _solve(problem, None), _solve(problem, None, prune=False)
    assert pruned.complete and everything.complete
    assert (pruned.scheme is None) == (everything.scheme is None)
    if pruned.scheme is None:
        return
    keys = []
    for solved in (pruned, everything):
        cost = evaluate(solved.scheme, problem.arch, feed)
        assert cost.valid, cost.validity
        keys.append((cost.objective(objective), cost.total_energy))
    assert keys[0] == pytest.approx(keys[1], rel=1e-9), (name, key, objective)
    if name in ("multinode", "four_level.yaml") and key == "conv":
        assert pruned.evaluated < everything.evaluated / 2  # the bounds and the per-level orders cut much
