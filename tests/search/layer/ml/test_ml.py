"""ML-guided search (the KAPLA paper's baseline M): every scheme it returns is
valid and no better than the optimum, a seed repeats a run, its options are
checked, and without XGBoost it says what to install."""

import builtins

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kapla
from kapla.arch import load_arch
from kapla.errors import KaplaError
from kapla.model import evaluate
from kapla.search.base import NoSchemeError
from kapla.search.layer.exhaustive.solver import ExhaustiveIntraSolver
from kapla.search.layer.ml.solver import MlIntraSolver
from kapla.workload.layer import Layer, Op
from tests.search.layer.test_solvers import small_layers

CONV = Layer("conv", Op.CONV, c=32, k=32, h=14, w=14, s=3, r=3, pad=(1, 1, 1, 1))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_layers(), st.integers(1, 8), st.sampled_from(["multinode_4x4", "edge"]), st.integers(0, 3))
def test_ml_returns_valid_schemes_no_better_than_the_optimum(layer, batch, arch_name, seed):
    arch = load_arch(arch_name)
    try:
        result = MlIntraSolver(rounds=3, batch=16, seed=seed).solve(layer, batch, arch)
    except NoSchemeError as exc:
        assert "found no valid scheme" in str(exc) or "does not fit" in str(exc)
        return
    assert result.cost.valid and evaluate(result.scheme, arch).valid
    assert result.evaluated <= 3 * 16
    best = ExhaustiveIntraSolver().solve(layer, batch, arch)
    assert result.cost.total_energy >= best.cost.total_energy * (1 - 1e-9)


def test_a_seed_repeats_a_run_and_learning_beats_its_first_batch():
    arch = load_arch("edge")
    first = MlIntraSolver(rounds=1, batch=32, seed=5).solve(CONV, 4, arch)
    tuned = [MlIntraSolver(rounds=6, batch=32, seed=5).solve(CONV, 4, arch) for _ in range(2)]
    assert tuned[0].scheme == tuned[1].scheme and tuned[0].evaluated == tuned[1].evaluated
    # the rounds after the first only add measured schemes: never worse than the first batch alone
    assert tuned[0].cost.total_energy <= first.cost.total_energy
    best = ExhaustiveIntraSolver().solve(CONV, 4, arch)
    assert tuned[0].cost.total_energy <= best.cost.total_energy * 1.25


def test_bad_options_and_a_missing_xgboost_are_one_error(monkeypatch):
    with pytest.raises(KaplaError, match=r"solver 'ml': option 'rounds' must be a whole number of at least 1"):
        kapla.schedule("mlp_s", solver="ml", solver_options={"rounds": 0})
    real_import = builtins.__import__

    def no_xgboost(name, *args, **kwargs):
        if name == "xgboost":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_xgboost)
    with pytest.raises(KaplaError, match=r"the ml solver needs XGBoost: pip install 'kapla\[ml\]'"):
        MlIntraSolver().solve(CONV, 4, load_arch("edge"))


def test_a_network_schedules_with_ml_in_this_process_and_then_in_workers():
    """The second run's workers start after this process ran XGBoost (a forked
    worker used to deadlock in XGBoost's thread pool); both runs agree."""
    options = {"rounds": 2, "batch": 16}
    here = kapla.schedule("mlp_s", "edge", batch=1, solver="ml", solver_options=options, jobs=1)
    assert here.valid and all(evaluate(lr.scheme, load_arch("edge")).valid for lr in here.layers)
    pooled = kapla.schedule("mlp_s", "edge", batch=1, solver="ml", solver_options=options, jobs=2)
    assert pooled.energy_j == here.energy_j
