"""The network search is consistent with itself (issue 11): the search for an
objective never returns a schedule worse in it than the schedule the search
for another objective returns, on the same network, hardware and batch."""

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kapla.api import schedule
from kapla.arch import load_arch
from kapla.model.evaluate import FROM_DRAM
from kapla.model.objective import OBJECTIVES, objective_of
from kapla.search.base import NoSchemeError, Problem
from kapla.search.layer.kapla.solver import KaplaIntraSolver
from tests.search.layer.test_solvers import small_layers

#: Float noise only: a schedule's energy is summed by component, the search sums it by segment.
TOLERANCE = 1e-9

CHEAP = ("mlp_s", "mlp_m", "mlp_l", "lstm_m", "lstm_l")
PRESETS = ("edge", "eyeriss", "interstellar", "multinode_4x4", "multinode", "simba")
#: (network, preset) pairs whose three searches take a few seconds at a small batch
CASES = ([(net, preset) for net in CHEAP for preset in PRESETS]
         + [("alexnet", preset) for preset in ("edge", "eyeriss", "interstellar", "multinode_4x4")]
         + [(net, preset) for net in ("mobilenet", "vgg16") for preset in ("eyeriss", "interstellar")])


def value(result, objective: str) -> float:
    return objective_of(objective).of(result.energy_j, result.time)


def schedule_each(net: str, arch: str, batch: int, **options) -> dict:
    results = {objective: schedule(net, arch, batch=batch, objective=objective, jobs=1, **options)
               for objective in OBJECTIVES}
    assert all(result.valid for result in results.values())
    return results


def assert_consistent(results: dict) -> None:
    for x in OBJECTIVES:
        for y in OBJECTIVES:
            mine, theirs = value(results[x], x), value(results[y], x)
            assert mine <= theirs * (1 + TOLERANCE), (
                f"the {x} search returned {x} {mine:.6g}, the {y} search a schedule with {x} {theirs:.6g}")


@pytest.mark.parametrize(("net", "arch", "batch"), [
    ("alexnet", "multinode_4x4", 64),  # the case: the energy search's top-k chains missed the latency one's
    ("vgg16", "eyeriss", 1),  # the intra-layer descent for energy finds more energy than the one for latency
    ("mobilenet", "interstellar", 8),  # a layer's least EDP is not the network's
])
def test_each_search_is_best_in_its_objective(net, arch, batch):
    assert_consistent(schedule_each(net, arch, batch))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CASES), st.sampled_from([1, 4]))
def test_each_search_is_best_in_its_objective_over_zoo_networks_and_presets(tmp_path_factory, case, batch):
    net, arch = case
    # one store for the three searches: each solves every layer for every objective, the first for all three
    store = tmp_path_factory.mktemp("store") / "layers.store"
    assert_consistent(schedule_each(net, arch, batch, store=store))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_layers(), st.integers(1, 8), st.sampled_from(["multinode_4x4", "edge", "eyeriss", "simba"]))
def test_a_solve_for_every_objective_is_each_objective_solved_alone(layer, batch, arch_name):
    problem = Problem(layer, batch, load_arch(arch_name), "energy", FROM_DRAM)
    each = KaplaIntraSolver().run_each(problem, OBJECTIVES)
    for objective, found in zip(OBJECTIVES, each, strict=True):
        try:
            alone = KaplaIntraSolver().run(replace(problem, objective=objective))
        except NoSchemeError as exc:
            assert isinstance(found, NoSchemeError) and str(found) == str(exc)
            continue
        assert not isinstance(found, NoSchemeError)
        assert found.scheme == alone.scheme and found.cost == alone.cost
        assert found.cost.valid
