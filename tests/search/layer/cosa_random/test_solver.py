"""CoSA's Random baseline: valid, seeded, bounded by its samples."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.search.layer.cosa_random import CosaRandomSolver
from kapla.space.problem import NoSchemeError
from kapla.workload.layer import Layer, Op
from tests.conftest import small_layers


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_layers(c=16, h=(1, 8), k=16, s=3), st.integers(1, 4), st.sampled_from(["simba", "edge", "multinode_4x4"]))
def test_every_scheme_it_returns_is_valid_and_the_best_of_what_it_found(layer, batch, arch_name):
    try:
        result = CosaRandomSolver(samples=2000).solve(layer, batch, load_arch(arch_name))
    except NoSchemeError as exc:  # a random draw may find none; it must say so, not return junk
        assert "raise samples" in str(exc)
        return
    assert result.cost.valid, result.cost.validity
    assert 1 <= result.details["valid"] <= 5 and result.details["samples"] <= 2000


def test_the_same_seed_gives_the_same_schedule_and_another_seed_may_not():
    layer = Layer("c", Op.CONV, c=16, k=32, h=14, w=14, s=3, r=3, pad=(1, 1, 1, 1))
    arch = load_arch("simba")
    a, b = (CosaRandomSolver(seed=3).solve(layer, 2, arch) for _ in range(2))
    assert a.scheme == b.scheme
    others = {CosaRandomSolver(seed=s).solve(layer, 2, arch).scheme for s in range(4)}
    assert len(others) > 1


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="valid"):
        CosaRandomSolver(valid=0)
    with pytest.raises(ValueError, match="seed"):
        CosaRandomSolver(seed=-1)
