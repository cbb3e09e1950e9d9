"""`kapla compare` on every zoo network, on the multi-node, 4x4-node and edge presets, inference and training.

Run: python benchmarks/compare_sweep.py [--archs NAME,...] [--nets NAME,...] [--modes inference,training]
                                        [--solvers exhaustive,random,ml,kapla] [--budget S] [--batch N]
                                        [--jobs N]

Each case runs every solver on the same network and hardware through
``kapla.explore.compare``; the budgeted solvers (exhaustive, random, ml) get
``--budget`` seconds each, so on large networks they end ``budget``, which
is printed as such. One line per case: each solver's status, its energy over
the best finished run, and whether every finished schedule is valid (the
evaluator's check of every layer, and a scheme for every layer). The last
lines count cases, finished runs and invalid ones (which must be none).
"""

from __future__ import annotations

import argparse

from kapla.errors import KaplaError
from kapla.explore.compare import OK, compare
from kapla.workload.zoo import ZOO


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", default="multinode,multinode_4x4,edge")
    parser.add_argument("--nets", default=",".join(ZOO))
    parser.add_argument("--modes", default="inference,training")
    parser.add_argument("--solvers", default="exhaustive,random,ml,kapla")
    parser.add_argument("--budget", type=float, default=3.0)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    solvers = args.solvers.split(",")
    cases = runs = finished = invalid = errors = 0
    print(f"{'arch':<14} {'mode':<9} {'network':<10} " + " ".join(f"{s:>18}" for s in solvers) + "  all valid",
          flush=True)
    for arch in args.archs.split(","):
        for mode in args.modes.split(","):
            for net in args.nets.split(","):
                cases += 1
                try:
                    result = compare(net, arch, solvers, batch=args.batch, training=mode == "training",
                                     budget=args.budget, jobs=args.jobs)
                except KaplaError as exc:  # a case compare cannot run at all is a failure of this sweep
                    errors += 1
                    print(f"{arch:<14} {mode:<9} {net:<10} error: {exc}", flush=True)
                    continue
                ref = result.reference
                cells, valid = [], True
                for run in result.runs:
                    runs += 1
                    if run.status == OK and run.result is not None and ref is not None and ref.result is not None:
                        finished += 1
                        valid = valid and run.result.valid
                        invalid += not run.result.valid
                        cells.append(f"ok x{run.result.energy_j / ref.result.energy_j:.3f} {run.seconds:5.1f}s")
                    else:
                        cells.append(f"{run.status} {run.seconds:5.1f}s")
                print(f"{arch:<14} {mode:<9} {net:<10} " + " ".join(f"{c:>18}" for c in cells)
                      + f"  {'yes' if valid else 'NO'}", flush=True)
    print(f"\n{cases} cases, {runs} solver runs: {finished} finished, {invalid} invalid; {errors} cases failed")


if __name__ == "__main__":
    main()
