"""Worker processes stop with the run: SIGTERM or Ctrl-C to ``kapla schedule``
leaves no worker (or forkserver) running."""

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table from /proc")


def interruptible() -> None:
    """In the child before it starts: Ctrl-C as on a terminal. A test run started in the background
    (nohup, ``&``) ignores SIGINT, and Python then never turns it into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _group(leader: int) -> list[int]:
    """Processes of ``leader``'s process group other than itself."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == leader:
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == leader:  # the process group
            out.append(int(entry))
    return out


@pytest.mark.parametrize("stop", ["SIGTERM", "Ctrl-C"])
def test_stopping_a_run_stops_its_workers(stop):
    run = subprocess.Popen([sys.executable, "-m", "kapla.cli.main", "schedule", "alexnet", "--arch",
                            "multinode_4x4", "--solver", "exhaustive", "--jobs", "2"],
                           start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           preexec_fn=interruptible)
    deadline = time.monotonic() + 60
    while len(_group(run.pid)) < 3 and time.monotonic() < deadline:  # the forkserver and two workers
        time.sleep(0.2)
    assert len(_group(run.pid)) >= 3, "the workers never started"
    if stop == "SIGTERM":
        run.send_signal(signal.SIGTERM)
    else:
        os.killpg(run.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole group
    code = run.wait(timeout=30)
    assert code == (143 if stop == "SIGTERM" else 130)
    deadline = time.monotonic() + 10
    while _group(run.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _group(run.pid)
    for pid in left:  # do not leave them running even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert left == []
