"""Folded node regions against rectangles of whole columns (issue 22, item 1).

    python benchmarks/folded.py [--nets mlp_l,lstm_m] [--solvers kapla,exhaustive] [--arch multinode_nndataflow]

Schedules each network at batch 64 with full TANGRAM (pipelining, buffer
sharing, batch groups) twice with each solver: spatial pipelines on
rectangles only (``-O folded=false``, what kapla did before folded regions)
and with folded regions as well (the default), and prints both energies,
times and solver seconds, their ratios, and where each layer ran and whether
its weights stayed on chip.
"""

from __future__ import annotations

import argparse
import time

import kapla


def _layers(result) -> str:
    parts = []
    for lr in result.layers:
        pinned = f"{lr.name}.w" not in lr.cost.accesses.get("DRAM", {}) and lr.scheme.layer.has_weights
        parts.append(f"{lr.name} {lr.region_text} ({lr.region[1][0] * lr.region[1][1]} nodes"
                     f"{', pinned' if pinned else ''})")
    return "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nets", default="mlp_l,lstm_m")
    parser.add_argument("--solvers", default="kapla,exhaustive")
    parser.add_argument("--arch", default="multinode_nndataflow")
    args = parser.parse_args()
    print("| network | solver | rectangles mJ | folded too mJ | ratio | rectangles cycles | folded too cycles "
          "| rectangles s | folded too s |\n|---|---|---|---|---|---|---|---|---|")
    details = []
    for net in args.nets.split(","):
        for solver in args.solvers.split(","):
            runs = []
            for folded in (False, True):
                start = time.perf_counter()
                result = kapla.schedule(net, args.arch, batch=64, solver=solver, jobs=1,
                                        solver_options={"folded": folded})
                assert result.valid
                runs.append((result, time.perf_counter() - start))
            (rect, rect_s), (fold, fold_s) = runs
            print(f"| {net} | {solver} | {rect.energy_j * 1e3:.4f} | {fold.energy_j * 1e3:.4f} | "
                  f"{fold.energy_j / rect.energy_j:.3f} | {rect.time:,.0f} | {fold.time:,.0f} | {rect_s:.1f} | "
                  f"{fold_s:.1f} |", flush=True)
            details.append(f"{net}, {solver}, rectangles: {_layers(rect)}")
            details.append(f"{net}, {solver}, folded too: {_layers(fold)}")
    print()
    for line in details:
        print(f"* {line}")


if __name__ == "__main__":
    main()
