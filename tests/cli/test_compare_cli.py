"""``kapla compare``: solvers side by side, each run ending ok, budget or
no-scheme (never a budget run reported as a result), JSON and a plot."""

import json

import kapla
from kapla.explore.compare import compare
from tests.cli.test_schedule_cli import run


def test_compare_reports_each_solver_with_its_status(tmp_path):
    out, png = tmp_path / "c.json", tmp_path / "c.png"
    result = run("compare", "mlp_s", "--arch", "multinode_4x4", "--batch", "8", "--solvers",
                 "exhaustive,random,kapla", "--budget", "0.5", "--json", str(out), "--plot", str(png))
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())["results"]
    assert list(data) == ["exhaustive", "random", "kapla"]
    assert data["exhaustive"]["status"] == "budget" and data["exhaustive"]["energy_j"] is None
    assert data["random"]["status"] in ("ok", "no-scheme", "budget")
    kapla_run = data["kapla"]
    assert kapla_run["status"] == "ok" and kapla_run["valid"]
    assert kapla_run["energy_j"] == sum(kapla_run["breakdown"].values())
    alone = kapla.schedule("mlp_s", "multinode_4x4", batch=8, jobs=1)
    assert kapla_run["energy_j"] == alone.energy_j and kapla_run["time_cycles"] == alone.time
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_ratios_are_to_the_exhaustive_optimum_when_it_finishes():
    result = compare("mlp_s", "multinode_4x4", ["kapla", "exhaustive", "random"], batch=2, seed=3,
                     jobs=1)
    assert result.reference is not None and result.reference.solver == "exhaustive"
    best = result.reference.result.energy_j
    for r in result.runs:
        if r.status == "ok":
            assert r.result.valid and r.result.energy_j >= best * (1 - 1e-9)
    again = compare("mlp_s", "multinode_4x4", ["random"], batch=2, seed=3, jobs=2)
    assert again.runs[0].to_dict()["energy_j"] == result.runs[2].to_dict()["energy_j"]


def test_compare_prints_a_table_and_takes_each_solver_its_options(tmp_path):
    result = run("compare", "mlp_s", "--arch", "multinode_4x4", "--batch", "4", "--solvers", "kapla")
    assert result.exit_code == 0, result.output
    assert "kapla" in result.output and "energy by component" in result.output
    out = tmp_path / "r.json"
    result = run("compare", "mlp_s", "--arch", "edge", "--batch", "1", "--solvers", "random,kapla", "-O",
                 "random.p=0.85", "--json", str(out))
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())["results"]
    assert data["random"]["status"] == "ok" and data["random"]["energy_j"] >= data["kapla"]["energy_j"] * 0.999


def test_bad_compare_inputs_are_one_error_line_before_any_solving(tmp_path):
    for args, message in (
        (["--solvers", "kapla,nope"], "error: --solvers: unknown solver 'nope'"),
        (["--solvers", "kapla,kapla"], "error: --solvers: a solver is named twice"),
        (["--plot", str(tmp_path / "c.pdf")], "error: --plot"),
        (["--json", str(tmp_path / "no" / "c.json")], "error: --json"),
        (["-O", "p=0.5"], "error: --option p: expected SOLVER.KEY=VALUE"),
        (["--solvers", "kapla", "-O", "random.p=0.5"],
         "error: options given for solver 'random', which is not compared"),
        (["--solvers", "random", "-O", "random.q=1"], "error: solver 'random' has no option 'q'"),
    ):
        result = run("compare", "mlp_s", "--arch", "multinode_4x4", *args)
        assert result.exit_code == 2, result.output
        assert result.output.startswith(message) and len(result.output.strip().splitlines()) == 1
