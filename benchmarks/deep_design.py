"""A user's own deep design and its variants: the wall time of one `kapla schedule` each.

Run: python benchmarks/deep_design.py [--net examples/small_cnn.yaml] [--arch examples/deep_design.yaml]
                                      [--variants all|NAME,...] [--training] [--jobs N|default]

Issue 27 asks that a small CNN on a hand-written deep design schedule in
under 10 s, and checks it on designs we do not have. This benchmark takes the
design (`examples/deep_design.yaml`: per-tensor register files in 4x4 PEs,
2x2 clusters of 8 KiB on buses of their own, a 128 KiB global buffer per node,
2x2 nodes, `C|K`) and changes one thing at a time, as an architect sweeping
it would: a shared register file, row stationary or `K|C` PE mapping, 8x8
PEs, 4x4 nodes, buffers twice as large, no buffer sharing, one more level
of cluster buffers (five levels in all). Each variant is
written to a file and scheduled by `kapla schedule NET --arch FILE --json`
in a process of its own (interpreter start and imports included, as a user
runs it); the table gives the wall seconds, the solver's own seconds, the
energy and whether the schedule is valid.
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from kapla.arch.spec import size_in_bytes

ROOT = Path(__file__).resolve().parents[1]


def _bytes(value) -> int:
    """A capacity as the design file may write it (``"8 KiB"``, bytes, or one per tensor kind), in bytes."""
    if isinstance(value, dict):
        return sum(_bytes(v) for v in value.values())
    size = size_in_bytes(value) if isinstance(value, str) else value
    if size is None:
        raise SystemExit(f"error: capacity {value!r} is not a size")
    return int(size)


def _doubled(value):
    return {k: _doubled(v) for k, v in value.items()} if isinstance(value, dict) else 2 * _bytes(value)


def _regf_shared(spec: dict) -> None:
    spec["levels"][0]["capacity"] = _bytes(spec["levels"][0]["capacity"])


def _mapping(name: str) -> Callable[[dict], None]:
    def change(spec: dict) -> None:
        spec["pe_mapping"] = name
    return change


def _array(level: int, shape: list[int]) -> Callable[[dict], None]:
    def change(spec: dict) -> None:
        spec["levels"][level]["array"] = shape
    return change


def _bigger_buffers(spec: dict) -> None:
    for level in spec["levels"][1:-1]:
        level["capacity"] = _doubled(level["capacity"])


def _cluster_level(spec: dict) -> None:
    # a 32 KiB buffer over each 2x2 of the clusters, on a bus of its own, under a global buffer twice as large
    node = len(spec["levels"]) - 2
    spec["levels"].insert(node, {"name": "SBUF", "capacity": "32 KiB", "access_pj": 3.0, "array": [2, 2],
                                 "bus": {"width_bits": 128, "access_pj": 0.8}})
    spec["levels"][node + 1]["capacity"] = _doubled(spec["levels"][node + 1]["capacity"])


def _no_sharing(spec: dict) -> None:
    spec["options"]["buffer_sharing"] = False
    spec["levels"][-2]["same_level_transfer"] = False


#: Each variant: one change to the design.
VARIANTS: dict[str, Callable[[dict], None]] = {
    "as written": lambda spec: None,
    "shared register file": _regf_shared,
    "row stationary": _mapping("row_stationary"),
    "K|C": _mapping("K|C"),
    "8x8 PEs": _array(0, [8, 8]),
    "4x4 nodes": _array(2, [4, 4]),
    "buffers x2": _bigger_buffers,
    "no buffer sharing": _no_sharing,
    "one more cluster level": _cluster_level,
}


def run(net: str, arch_file: Path, training: bool, jobs: str) -> dict:
    command = [sys.executable, "-m", "kapla.cli.main", "schedule", net, "--arch", str(arch_file), "--json"]
    if training:
        command.append("--training")
    if jobs != "default":
        command += ["--jobs", jobs]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        return {"wall": wall, "error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    doc = json.loads(done.stdout)
    return {"wall": wall, "solver": doc["solver_seconds"], "energy": doc["energy_j"], "valid": doc["valid"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--net", default="examples/small_cnn.yaml")
    parser.add_argument("--arch", default="examples/deep_design.yaml")
    parser.add_argument("--variants", default="all",
                        help="all, or variant names separated by commas; 'A+B' applies changes A and B together")
    parser.add_argument("--training", action="store_true")
    parser.add_argument("--jobs", default="default")
    args = parser.parse_args()
    names = list(VARIANTS) if args.variants == "all" else args.variants.split(",")
    unknown = [part for n in names for part in n.split("+") if part not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)} (known: {', '.join(VARIANTS)})")
    with open(ROOT / args.arch) as f:
        design = yaml.safe_load(f)
    print(f"{args.net} on variants of {args.arch} ({'training' if args.training else 'inference'}, "
          f"{args.jobs} workers): wall s (one process each), solver s, energy mJ, valid")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            spec = copy.deepcopy(design)
            for part in name.split("+"):  # several changes at once: "4x4 nodes+8x8 PEs"
                VARIANTS[part](spec)
            spec["name"] = f"{design['name']}_{name.replace(' ', '_').replace('|', '').replace('+', '_')}"
            path = Path(tmp) / f"{spec['name']}.yaml"
            with open(path, "w") as f:
                yaml.safe_dump(spec, f, sort_keys=False)
            out = run(args.net, path, args.training, args.jobs)
            worst = max(worst, out["wall"])
            if "error" in out:
                print(f"{name:36s} {out['wall']:7.2f}  error: {out['error']}", flush=True)
            else:
                print(f"{name:36s} {out['wall']:7.2f} {out['solver']:7.2f} {out['energy'] * 1e3:10.4f}  "
                      f"{'yes' if out['valid'] else 'NO'}", flush=True)
    print(f"slowest: {worst:.2f} s")


if __name__ == "__main__":
    main()
