"""Atomic Dataflow's evaluation (Zheng et al., HPCA 2022, Sec. V), as far as kapla has it.

Run: python benchmarks/atomic.py [--nets vgg19,resnet50,...] [--arch atomic|atomic_yx] [--batch 1]
                                 [--jobs 2]

Each network on the `atomic` preset (8x8 engines of 16x16 PEs, KC-Partition;
`--arch atomic_yx` for YX-Partition) under the atomic scheduler and its
layer-sequential, CNN-Partition and IL-Pipe baselines on the same round model,
beside kapla's own layer-by-layer and TANGRAM (KAPLA) schedules on the
evaluator: latency (the
paper's Fig. 8 at batch 1; Fig. 9 is throughput at batch 20), PE utilisation
without memory delay, the share of time transfers block compute, the on-chip
reuse ratio (Table II), energy and search seconds. Printed beside the paper's
claims, with the ablations of Fig. 10 (atomic without its DP, its annealing
or its on-chip reuse); every schedule is checked valid (exit 1 otherwise).
The engine-count sweep (Fig. 12) is not built yet (docs/atomic.md).
"""

from __future__ import annotations

import argparse
import sys
import time

from rich.console import Console
from rich.table import Table

import kapla

#: The paper's networks the zoo has (NASNet-A and PNASNet-5 are not built), and AlexNet and MobileNet.
NETS = "vgg19,resnet50,resnet152,inception_v3,efficientnet_b0,googlenet,mobilenet,alexnet"
SOLVERS = ("atomic", "layer-sequential", "cnn-partition", "il-pipe", "layerwise", "kapla")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nets", default=NETS)
    parser.add_argument("--arch", default="atomic")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    console = Console(width=200, markup=False)
    console.print(f"# python benchmarks/atomic.py --nets {args.nets} --arch {args.arch} --batch {args.batch}")
    table = Table(title=f"latency on {args.arch} at batch {args.batch} (cycles; x: over layer-sequential on the "
                        "round model)")
    table.add_column("network")
    for s in SOLVERS:
        table.add_column(f"{s}", justify="right")
        table.add_column("x", justify="right")
    stats = Table(title="the atomic schedule (Table II): PE utilisation without memory delay, transfers' share "
                        "of the time, on-chip reuse, energy, search seconds")
    for col in ("network", "atoms", "rounds", "utilisation", "transfer share", "reuse", "energy mJ",
                "layer-sequential mJ", "search s"):
        stats.add_column(col, justify="left" if col == "network" else "right")
    paper = ("the paper's Fig. 8 at batch 1: 1.45-2.30x over CNN-Partition, 1.42-3.78x over IL-Pipe"
             if args.batch == 1 else f"throughput at batch {args.batch}; the paper's Fig. 9 at batch 20: 1.12-1.42x "
                                     "over CNN-Partition")
    speedups = Table(title=f"atomic's speed-up on the round model ({paper})")
    for col in ("network", "over layer-sequential", "over CNN-Partition", "over IL-Pipe", "IL-Pipe segment depth",
                "atomic samples/s"):
        speedups.add_column(col, justify="left" if col == "network" else "right")
    ablation = Table(title="per-stage improvements (the paper's Fig. 10: the DP 1.17-1.42x, the annealing 1.06-1.21x, "
                           "on-chip reuse 1.07-1.17x): atomic's latency without each over atomic's")
    for col in ("network", "without the DP (rounds in order)", "without the annealing (even atoms)",
                "without on-chip reuse"):
        ablation.add_column(col, justify="left" if col == "network" else "right")
    invalid = 0
    for net in args.nets.split(","):
        results = {}
        seconds = {}
        for solver in SOLVERS:
            start = time.perf_counter()
            results[solver] = kapla.schedule(net, args.arch, batch=args.batch, solver=solver, objective="latency",
                                             jobs=args.jobs)
            seconds[solver] = time.perf_counter() - start
            invalid += not results[solver].valid
        ref = results["layer-sequential"].time
        cells = []
        for solver in SOLVERS:
            t = results[solver].time
            cells += [f"{t:,.0f}", f"{ref / t:.2f}"]
        table.add_row(net, *cells)
        atomic = results["atomic"].time
        speedups.add_row(net, *(f"{results[b].time / atomic:.2f}" for b in ("layer-sequential", "cnn-partition",
                                                                              "il-pipe")),
                         str(results["il-pipe"].to_dict()["atomic"]["depth"]),
                         f"{results['atomic'].to_dict()['atomic']['throughput']:,.0f}")
        cells = []
        for off in ("dp", "anneal", "reuse"):
            ablated = kapla.schedule(net, args.arch, batch=args.batch, solver="atomic", objective="latency",
                                     jobs=args.jobs, solver_options={off: False})
            invalid += not ablated.valid
            cells.append(f"{ablated.time / results['atomic'].time:.2f}")
        ablation.add_row(net, *cells)
        info = results["atomic"].to_dict()["atomic"]
        stats.add_row(net, str(info["atoms"]), str(info["rounds"]), f"{info['utilization']:.0%}",
                      f"{info['noc_overhead']:.0%}", f"{info['reuse_ratio']:.0%}",
                      f"{results['atomic'].energy_j * 1e3:.2f}", f"{results['layer-sequential'].energy_j * 1e3:.2f}",
                      f"{seconds['atomic']:.1f}")
    console.print(table)
    console.print(stats)
    console.print(speedups)
    console.print(ablation)
    console.print("the paper: atomic dataflow 1.45-2.30x faster than CNN-Partition (= layer-sequential at batch 1) "
                  "and 1.42-3.78x than IL-Pipe at batch 1; 79-95 % PE utilisation where layer-sequential reaches "
                  "49-69 %; search 66.5 s for ResNet-50, 406.9 s for Inception-v3")
    console.print(f"every schedule valid: {'yes' if not invalid else f'NO ({invalid})'}")
    return 1 if invalid else 0


if __name__ == "__main__":
    sys.exit(main())
