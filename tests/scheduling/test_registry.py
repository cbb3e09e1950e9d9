"""Solvers are found by name; their options reach the part that takes them."""

import pytest
from click.testing import CliRunner

from kapla.cli.main import app
from kapla.errors import KaplaError
from kapla.scheduling.registry import make_solver, registry
from kapla.search.layer.exhaustive.solver import ExhaustiveIntraSolver
from kapla.search.layer.kapla.solver import KaplaIntraSolver
from kapla.search.network.layerwise import LayerwiseScheduler
from kapla.search.network.tangram.scheduler import ExhaustiveStrategy, KaplaStrategy, TangramScheduler


def test_named_solvers_pair_a_network_scheduler_and_a_layer_solver():
    scheduler, intra = make_solver("kapla", {"top_k": 2, "refine": 10})
    assert isinstance(scheduler, TangramScheduler) and isinstance(scheduler.policy, KaplaStrategy)
    assert scheduler.policy.top_k == 2
    assert isinstance(intra, KaplaIntraSolver) and intra.refine == 10
    scheduler, intra = make_solver("exhaustive", {"time_budget": 5.0})
    assert isinstance(scheduler, TangramScheduler) and isinstance(scheduler.policy, ExhaustiveStrategy)
    assert scheduler.time_budget == 5.0 and scheduler.policy.time_budget == 5.0
    assert isinstance(intra, ExhaustiveIntraSolver)
    scheduler, intra = make_solver("layerwise", {"refine": 3})
    assert isinstance(scheduler, LayerwiseScheduler) and scheduler.time_budget is None
    assert isinstance(intra, KaplaIntraSolver) and intra.refine == 3


def test_every_built_in_is_an_installed_plugin():
    """kapla's own solvers come through its entry points, as a third party's would."""
    reg = registry()
    assert {"kapla", "exhaustive", "random", "ml", "layerwise"} <= set(reg.solvers)
    assert {"kapla", "exhaustive", "random", "layerwise"} <= set(reg.network_schedulers)
    assert {"kapla", "exhaustive", "random", "ml"} <= set(reg.layer_solvers)
    assert all(path.startswith("kapla.") and path.endswith(":register") for path in reg.plugins)


def test_unknown_names_and_options_are_named():
    with pytest.raises(KaplaError, match="unknown solver 'nope'; choose one of atomic, layer-sequential, "
                                         "cnn-partition, il-pipe, cosa, cosa_random, exhaustive, hybrid, kapla"):
        make_solver("nope")
    with pytest.raises(KaplaError, match=r"solver 'kapla' has no option 'depth' \(options: .*top_k"):
        make_solver("kapla", {"depth": 3})
    with pytest.raises(KaplaError, match="option 'top_k' must be a whole number of at least 1"):
        make_solver("kapla", {"top_k": 0})
    with pytest.raises(KaplaError, match="top-k must be at least 1"):
        KaplaStrategy(top_k=0)


def test_kapla_solvers_lists_one_line_each():
    out = CliRunner().invoke(app, ["solvers"]).output.splitlines()
    for name in registry().solvers:
        assert sum(line.startswith(name + " ") for line in out) == 1
    assert any(line.startswith("layer kapla") and "refine" in line for line in out)
    assert any(line.startswith("network layerwise") for line in out)


def test_schedule_takes_solver_options(tmp_path):
    runner = CliRunner()
    ok = runner.invoke(app, ["schedule", "mlp_s", "--arch", "multinode_4x4", "--batch", "4", "--no-directives",
                             "-O", "top_k=1", "-O", "refine=5"])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(app, ["schedule", "mlp_s", "--arch", "multinode_4x4", "-O", "depth=1"])
    assert bad.exit_code == 2 and "error: solver 'kapla' has no option 'depth'" in bad.output


@pytest.mark.parametrize("options, message", [
    ({"refine": "abc"}, "option 'refine' must be a whole number of at least 0"),
    ({"top": 0}, "option 'top' must be a whole number of at least 1"),
    ({"top_k": 2.5}, "option 'top_k' must be a whole number of at least 1"),
    ({"units": True}, "option 'units' must be a whole number"),
])
def test_option_values_are_checked(options, message):
    with pytest.raises(KaplaError, match=message):
        make_solver("kapla", options)


def test_budget_options_are_positive_seconds():
    with pytest.raises(KaplaError, match="option 'time_budget' must be a positive number of seconds"):
        make_solver("exhaustive", {"time_budget": -1})
    assert make_solver("exhaustive", {"time_budget": 2})[0].time_budget == 2


def test_a_bad_option_value_is_one_error_line():
    bad = CliRunner().invoke(app, ["schedule", "mlp_s", "--arch", "multinode_4x4", "-O", "refine=abc"])
    assert bad.exit_code == 2
    assert bad.output.strip() == ("error: solver 'kapla': option 'refine' must be a whole number of at least 0 "
                                  "(got 'abc')")
