"""``kapla explore``: the table, the JSON, the plot, errors, and a sweep killed midway then resumed."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.cli.test_schedule_cli import run

SWEEP = ["explore", "mlp_m", "--arch", "edge", "--batch", "4", "--vary", "GBUF.capacity=16KiB..256KiB*2",
         "--vary", "REGF.capacity=32B,128B"]


def test_explore_prints_every_point_the_best_and_the_front():
    result = run("explore", "mlp_s", "--arch", "interstellar", "--batch", "2", "--vary", "REGF.capacity=16B,64B",
                 "--vary", "GBUF.capacity=32KiB,64KiB", "--jobs", "1")
    assert result.exit_code == 0, result.output
    assert "REGF.capacity" in result.output and "GBUF.capacity" in result.output
    assert result.output.count("ok") >= 4 and "best (energy): REGF.capacity=" in result.output
    assert "Pareto front (energy against on-chip capacity): " in result.output


def test_explore_json_and_plot(tmp_path):
    target, plot = tmp_path / "x.json", tmp_path / "x.png"
    result = run("explore", "mlp_s", "--arch", "edge", "--batch", "2", "--vary", "GBUF.capacity=16KiB,32KiB",
                 "--jobs", "1", "--json", str(target), "--plot", str(plot))
    assert result.exit_code == 0, result.output
    data = json.loads(target.read_text())
    assert [p["vary"] for p in data["points"]] == [{"GBUF.capacity": 16384}, {"GBUF.capacity": 32768}]
    assert all(p["status"] == "ok" and p["valid"] and p["energy_j"] > 0 and p["time_cycles"] > 0
               for p in data["points"])
    assert data["best"] == min(data["points"], key=lambda p: p["energy_j"])
    assert data["labels"] == {"GBUF.capacity": ["16 KiB", "32 KiB"]}
    assert plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("args, message", [
    (["--vary", "GBUF.capacity=64KiB..32KiB*2"], "error: --vary GBUF.capacity: the range 64KiB..32KiB is empty"),
    (["--vary", "GBUF.colour=red"], "GBUF.colour: unknown field"),
    (["--vary", "GBUF.capacity=1MiB"], "no energy for 1 MiB"),
    (["--vary", "REGF.capacity"], "expected PATH=VALUES"),
    ([], "give at least one field to vary"),
    (["--vary", "REGF.capacity=64B", "--solver", "nope"], "unknown solver 'nope'"),
    (["--vary", "REGF.capacity=64B", "--plot", "x.txt"], "--plot x.txt: the file must end in .png or .svg"),
    (["--vary", "REGF.capacity=64B", "--ray-address", "auto"], "--ray-address: only with --executor ray"),
])
def test_bad_explore_input_is_one_error_line(args, message):
    result = run("explore", "mlp_s", "--arch", "interstellar", *args)
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output


def _kapla(*args, **kwargs):
    return subprocess.Popen([sys.executable, "-m", "kapla.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def _rows(data):
    return [{k: v for k, v in p.items() if k != "seconds"} for p in data["points"]]


def test_a_sweep_killed_midway_resumes_with_exactly_the_points_of_an_uninterrupted_run(tmp_path):
    whole = tmp_path / "whole.json"
    assert run(*SWEEP, "--jobs", "1", "--json", str(whole)).exit_code == 0
    store = tmp_path / "store"
    first = _kapla(*SWEEP, "--jobs", "1", "--store", str(store))
    deadline = time.monotonic() + 120
    while len(list(store.glob("*.json"))) < 2 and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.01)
    first.send_signal(signal.SIGKILL)  # no chance to clean up: what is on disk is all there is
    first.wait()
    kept = {p.name for p in store.glob("*.json")}
    assert 2 <= len(kept) < 10, "the sweep was not stopped midway"
    resumed = tmp_path / "resumed.json"
    second = run(*SWEEP, "--jobs", "2", "--store", str(store), "--json", str(resumed))
    assert second.exit_code == 0, second.output
    assert _rows(json.loads(resumed.read_text())) == _rows(json.loads(whole.read_text()))
    # the points kept before the kill were not run again: their records are untouched
    assert {p.name for p in store.glob("*.json")} >= kept and len(list(store.glob("*.json"))) == 10
    again = run(*SWEEP, "--store", str(store))
    assert "10 of 10 points taken from the store" in again.output


def test_two_sweeps_sharing_a_store_do_not_corrupt_it(tmp_path):
    store = tmp_path / "store"
    a = _kapla(*SWEEP, "--jobs", "1", "--store", str(store))
    b = _kapla("explore", "mlp_m", "--arch", "edge", "--batch", "4", "--vary", "GBUF.capacity=64KiB..512KiB*2",
               "--vary", "REGF.capacity=32B,128B", "--jobs", "1", "--store", str(store))
    for proc in (a, b):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    records = list(store.glob("*.json"))
    assert len(records) == 12  # 10 + 8 points, 6 of them shared
    assert all(json.loads(p.read_text())["row"]["status"] == "ok" for p in records)
    assert not list(store.glob(".tmp-*"))
    result = run(*SWEEP, "--store", str(store))
    assert "10 of 10 points taken from the store" in result.output


def test_ray_without_ray_installed_says_what_to_install():
    pytest.importorskip("kapla")
    try:
        import ray  # noqa: F401
    except ImportError:
        result = run("explore", "mlp_s", "--arch", "edge", "--vary", "GBUF.capacity=16KiB", "--executor", "ray")
        assert result.exit_code != 0 and "pip install 'kapla[ray]'" in result.output
    else:
        pytest.skip("Ray is installed")


def test_sigterm_stops_a_sweep_cleanly(tmp_path):
    store = tmp_path / "store"
    proc = _kapla(*SWEEP, "--jobs", "2", "--store", str(store), env={**os.environ})
    deadline = time.monotonic() + 120
    while not list(store.glob("*.json")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "Traceback" not in err
    assert not list(store.glob(".tmp-*"))


def test_the_same_sweep_on_ray_gives_the_same_table(tmp_path):
    pytest.importorskip("ray")
    local, on_ray = tmp_path / "local.json", tmp_path / "ray.json"
    sweep = ["explore", "mlp_s", "--arch", "edge", "--batch", "2", "--vary", "GBUF.capacity=16KiB,32KiB",
             "--vary", "REGF.capacity=32B,128B"]
    assert run(*sweep, "--jobs", "1", "--json", str(local)).exit_code == 0
    store = tmp_path / "store"
    result = run(*sweep, "--executor", "ray", "--jobs", "2", "--store", str(store), "--json", str(on_ray))
    assert result.exit_code == 0, result.output
    assert _rows(json.loads(on_ray.read_text())) == _rows(json.loads(local.read_text()))
    assert len(list(store.glob("*.json"))) == 4  # Ray's points are stored like local ones
