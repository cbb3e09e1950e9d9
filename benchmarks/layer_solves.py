"""Time per KAPLA layer solve on a network's own layer problems, optionally side by side with another revision.

Run: python benchmarks/layer_solves.py [--net googlenet] [--arch multinode] [--batch 64] [--training]
                                       [--limit 300] [--rounds 2] [--baseline REV]

Schedules the network once in this process with one job (so every layer
problem of its search is solved here) and records those problems in the
order they were solved. Then a process of its own solves the first
``--limit`` of them again, ``--rounds`` times, and prints the milliseconds
per solve of each pass and a digest of the schemes found. With
``--baseline REV`` a checkout of REV does the same in another process, the
two taking turns pass by pass (a busy machine slows both alike); equal
digests say both found the same schemes. The problems are handed over
pickled, so REV must read this tree's problems (its Problem, Layer and
ArchSpec classes): revisions since issue 27's tenth pass do.

What it measures is the solver alone, without the network search around it
(``benchmarks/network.py`` times whole schedules).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

# a process that solves the recorded problems once per line it reads, and prints the pass's time and digest
_SOLVER = r"""
import hashlib, json, pickle, sys, time
from kapla.dataflow.directives import dataflow_key
from kapla.scheduling.layers import solve_layer
with open(sys.argv[1], "rb") as f:
    recorded = pickle.load(f)
print("ready", flush=True)
for _ in sys.stdin:
    digest = hashlib.md5()
    start = time.perf_counter()
    for solver, problem, objectives in recorded:
        found = solve_layer(solver, problem, objectives)
        digest.update(repr([(None if s is None else dataflow_key(s), done) for s, done, _ in found]).encode())
    print(json.dumps({"seconds": time.perf_counter() - start, "digest": digest.hexdigest()}), flush=True)
"""


def record(net: str, arch: str, batch: int, training: bool, limit: int) -> list:
    """The layer problems a one-job schedule of ``net`` solves, in order (at most ``limit``)."""
    import kapla
    import kapla.scheduling.layers as layers

    solve = layers.solve_layer
    seen: list = []

    def recording(solver, problem, objectives):
        if problem is not None and len(seen) < limit:
            seen.append((solver, problem, objectives))
        return solve(solver, problem, objectives)

    layers.solve_layer = recording
    try:
        kapla.schedule(net, arch, batch=batch, training=training, jobs=1)
    finally:
        layers.solve_layer = solve
    return seen


def _process(root: str, problems: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.path.join(root, "src")}
    proc = subprocess.Popen([sys.executable, "-c", _SOLVER, problems], cwd=root, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _pass(proc: subprocess.Popen) -> dict:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--net", default="googlenet")
    parser.add_argument("--arch", default="multinode")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--training", action="store_true")
    parser.add_argument("--limit", type=int, default=300, help="layer problems solved per pass")
    parser.add_argument("--rounds", type=int, default=2, help="passes over them, per revision")
    parser.add_argument("--baseline", metavar="REV", help="a git revision to time beside this tree")
    args = parser.parse_args()
    if args.limit < 1 or args.rounds < 1:
        sys.exit("error: --limit and --rounds must be at least 1")

    import kapla

    here = str(Path(__file__).resolve().parents[1])
    if args.baseline and subprocess.run(["git", "-C", here, "rev-parse", "--verify", "--quiet",
                                         f"{args.baseline}^{{commit}}"], capture_output=True).returncode:
        sys.exit(f"error: --baseline {args.baseline}: no such revision in {here}")
    try:
        problems = record(args.net, args.arch, args.batch, args.training, args.limit)
    except kapla.KaplaError as exc:
        sys.exit(f"error: {exc}")
    mode = "training" if args.training else "inference"
    print(f"{args.net} {mode} on {args.arch} at batch {args.batch}: {len(problems)} layer problems")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "problems.pkl")
        with open(path, "wb") as f:
            pickle.dump(problems, f)
        roots = {"here": here}
        if args.baseline:
            base = os.path.join(tmp, "baseline")
            subprocess.run(["git", "-C", here, "worktree", "add", "--detach", base, args.baseline], check=True,
                           capture_output=True)
            roots = {args.baseline: base, "here": here}
        procs: dict[str, subprocess.Popen] = {}
        try:
            for name, root in roots.items():  # in the try: a checkout that cannot start still goes
                procs[name] = _process(root, path)
            times: dict[str, list[float]] = {name: [] for name in procs}
            digests: dict[str, str] = {}
            for _ in range(args.rounds):
                for name, proc in procs.items():
                    out = _pass(proc)
                    times[name].append(out["seconds"] / len(problems) * 1e3)
                    digests[name] = out["digest"]
        finally:
            for proc in procs.values():
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait()
            if args.baseline:
                subprocess.run(["git", "-C", here, "worktree", "remove", "--force", base], capture_output=True)
    for name in procs:
        passes = " ".join(f"{t:.1f}" for t in times[name])
        print(f"{name:>12}: {passes} ms per solve (passes in turn); schemes digest {digests[name][:12]}")
    if args.baseline:
        same = digests[args.baseline] == digests["here"]
        print(f"here / {args.baseline}: {min(times['here']) / min(times[args.baseline]):.3f} (best passes); "
              f"{'the same schemes' if same else 'DIFFERENT schemes'}")


if __name__ == "__main__":
    main()
