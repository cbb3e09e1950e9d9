"""The Timeloop-Hybrid-like mapper: valid, seeded, stopped by its patience and its budget."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.search.layer.cosa_random import CosaRandomSolver
from kapla.search.layer.hybrid import HybridSolver
from kapla.space.problem import NoSchemeError
from kapla.workload.layer import Layer, Op
from tests.conftest import small_layers

LAYER = Layer("c", Op.CONV, c=16, k=32, h=14, w=14, s=3, r=3, pad=(1, 1, 1, 1))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_layers(c=16, h=(1, 8), k=16, s=3), st.integers(1, 4), st.sampled_from(["simba", "edge", "multinode_4x4"]))
def test_every_scheme_it_returns_is_valid(layer, batch, arch_name):
    try:
        result = HybridSolver(patience=30, threads=2, samples=3000).solve(layer, batch, load_arch(arch_name))
    except NoSchemeError as exc:
        assert "raise samples" in str(exc)
        return
    assert result.cost.valid, result.cost.validity


def test_the_same_seed_gives_the_same_schedule():
    arch = load_arch("simba")
    a, b = (HybridSolver(patience=50, threads=2, seed=1).solve(LAYER, 2, arch) for _ in range(2))
    assert a.scheme == b.scheme and a.details == b.details


def test_more_patience_and_threads_never_do_worse_and_beat_random():
    arch = load_arch("simba")
    short = HybridSolver(patience=20, threads=1).solve(LAYER, 2, arch)
    long = HybridSolver(patience=200, threads=3).solve(LAYER, 2, arch)
    assert long.cost.total_energy <= short.cost.total_energy
    assert long.details["samples"] > short.details["samples"]
    assert long.cost.total_energy < CosaRandomSolver().solve(LAYER, 2, arch).cost.total_energy


def test_a_time_budget_stops_it_with_the_best_found():
    result = HybridSolver(time_budget=0.3).solve(LAYER, 2, load_arch("simba"))
    assert result.cost.valid and not result.complete


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="patience"):
        HybridSolver(patience=0)
    with pytest.raises(ValueError, match="threads"):
        HybridSolver(threads=0)
