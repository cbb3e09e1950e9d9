"""A long exhaustive network search resumes from its layer store: killed
mid-run (SIGKILL, no cleanup) and started again, it takes every recorded
layer solve, solves only the rest, and returns what an uninterrupted run
returns."""

import io
import json
import os
import pickle
import signal
import subprocess
import sys
import time

from kapla.scheduling.store import LayerStore
from tests.scheduling.test_workers import interruptible

RUN = [sys.executable, "-m", "kapla.cli.main", "schedule", "examples/tiny_cnn.yaml", "--arch", "edge",
       "--solver", "exhaustive", "--jobs", "1"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _records(path) -> int:
    """Complete records in a store another process is writing (the header included)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    stream, n = io.BytesIO(data), 0
    while True:
        try:
            pickle.load(stream)
        except Exception:
            return n
        n += 1


def _run(store, out) -> dict:
    subprocess.run(RUN + ["--store", str(store), "--json", str(out)], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    return json.loads(out.read_text())


def test_a_killed_exhaustive_run_resumes_without_redoing_work(tmp_path):
    whole = _run(tmp_path / "whole.store", tmp_path / "whole.json")
    total = whole["layer_store"]["solved"]
    assert total > 20

    store = tmp_path / "killed.store"
    run = subprocess.Popen(RUN + ["--store", str(store)], cwd=ROOT, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _records(store) < 1 + total // 3 and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.01)
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=30)
    with LayerStore(store) as kept:
        finished = len(kept)
    assert 0 < finished < total, "the kill must land mid-run"

    resumed = _run(store, tmp_path / "resumed.json")
    info = resumed["layer_store"]
    assert info["reused"] == finished  # nothing recorded was lost or solved again
    assert info["reused"] + info["solved"] == total  # and nothing else was solved twice
    assert resumed["energy_j"] == whole["energy_j"] and resumed["time_cycles"] == whole["time_cycles"]
    assert resumed["segments"] == whole["segments"]


def test_ctrl_c_returns_the_best_schedule_of_what_was_solved(tmp_path):
    store, out = tmp_path / "run.store", tmp_path / "run.json"
    layers = 7  # tiny_cnn's layers
    run = subprocess.Popen([sys.executable, "-m", "kapla.cli.main", "schedule", "examples/tiny_cnn.yaml", "--arch",
                            "multinode_4x4", "--solver", "exhaustive", "--jobs", "1", "--no-directives",
                            "--store", str(store), "--json", str(out)],
                           cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True, preexec_fn=interruptible)
    deadline = time.monotonic() + 120
    while _records(store) < 1 + layers and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.01)  # each layer alone is solved first (one job: in order)
    os.killpg(run.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole group
    stdout, _ = run.communicate(timeout=60)
    assert run.returncode == 130
    assert "INCOMPLETE: interrupted; the best schedule of the" in stdout
    data = json.loads(out.read_text())
    assert data["complete"] is False and data["stopped"]["by"] == "interrupt" and data["valid"]
    assert sorted(name for seg in data["segments"] for name in seg) == sorted(lr["name"] for lr in data["layers"])


def test_a_budget_returns_the_best_schedule_of_what_was_solved(tmp_path):
    import kapla

    net = os.path.join(ROOT, "examples", "tiny_cnn.yaml")
    whole = kapla.schedule(net, "edge", solver="exhaustive", jobs=1, store=tmp_path / "whole.store")
    layers = len(whole.layers)
    # a store holding the solves of each layer alone (one job: they are the first recorded), not the rest
    data = (tmp_path / "whole.store").read_bytes()
    stream = io.BytesIO(data)
    for _ in range(1 + layers):
        pickle.load(stream)
    (tmp_path / "part.store").write_bytes(data[: stream.tell()])

    part = kapla.schedule(net, "edge", solver="exhaustive", jobs=1, time_budget=0.6, store=tmp_path / "part.store")
    assert not part.complete and part.stopped is not None and part.stopped.by == "budget"
    assert "ran out of its 0.6 s budget" in part.stopped.reason
    assert part.valid and sorted(lr.name for lr in part.layers) == sorted(lr.name for lr in whole.layers)
    assert part.energy_j >= whole.energy_j  # the best of a part of the space
    assert part.to_dict()["complete"] is False
