"""CoSA's one-shot MIP against kapla's own solvers, layer by layer.

Run: python benchmarks/cosa.py [--nets alexnet,resnet50] [--arch simba] [--batch 1]
                               [--time-limit 60] [--exhaustive SECONDS]

For every distinct layer with weights of the networks (AlexNet's 8 and
ResNet-50's unique layers by default), schedules it on the hardware with
CoSA (one MIP per layer, HiGHS) and with KAPLA (and, with ``--exhaustive``,
kapla's exhaustive search under that budget), each scheme costed by kapla's
evaluator, and prints per layer: CoSA's energy and time over KAPLA's, the
MIP's status, gap and solve seconds, and KAPLA's seconds; then the geomean
ratios. Every scheme is checked valid (the run exits 1 otherwise). This is
the comparison the CoSA paper does not make: what its proxy objective costs
against a search on the real cost model. The paper's own baselines (Random,
Timeloop-Hybrid) are not here yet.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from rich.console import Console
from rich.table import Table

from kapla.arch import load_arch
from kapla.search.layer.cosa import CosaSolver
from kapla.search.layer.exhaustive.solver import ExhaustiveIntraSolver
from kapla.search.layer.kapla import KaplaIntraSolver
from kapla.workload.zoo import get_network


def distinct_layers(nets: list[str]):
    seen, out = set(), []
    for name in nets:
        for layer in get_network(name, 1):
            if not layer.has_weights:
                continue
            key = (layer.op, layer.c, layer.k, layer.h, layer.w, layer.s, layer.r, layer.stride, layer.groups)
            if key not in seen:
                seen.add(key)
                out.append((f"{name}/{layer.name}", layer))
    return out


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nets", default="alexnet,resnet50")
    parser.add_argument("--arch", default="simba")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=60.0, help="CoSA's seconds per layer")
    parser.add_argument("--exhaustive", type=float, default=None, metavar="SECONDS",
                        help="also kapla's exhaustive search, this budget per layer")
    args = parser.parse_args()
    arch = load_arch(args.arch)
    console = Console()
    table = Table(title=f"CoSA against kapla's solvers on {args.arch}, batch {args.batch} (kapla's cost model)")
    for col in ("layer", "CoSA E / KAPLA E", "CoSA t / KAPLA t", "MIP status", "gap", "MIP s", "KAPLA s",
                "CoSA E / exh. E"):
        table.add_column(col, justify="left" if col == "layer" else "right")
    energy, cycles, exh, invalid = [], [], [], 0
    for label, layer in distinct_layers(args.nets.split(",")):
        cosa = CosaSolver(time_limit=args.time_limit).solve(layer, args.batch, arch)
        start = time.process_time()
        kapla = KaplaIntraSolver().solve(layer, args.batch, arch)
        kapla_s = time.process_time() - start
        ref = None
        if args.exhaustive:
            ref = ExhaustiveIntraSolver(time_budget=args.exhaustive).solve(layer, args.batch, arch)
        invalid += sum(not r.cost.valid for r in (cosa, kapla, ref) if r is not None)
        e = cosa.cost.total_energy / kapla.cost.total_energy
        t = cosa.cost.time / kapla.cost.time
        energy.append(e)
        cycles.append(t)
        x = cosa.cost.total_energy / ref.cost.total_energy if ref is not None else math.nan
        if ref is not None:
            exh.append(x)
        gap = cosa.details["mip_gap"]
        table.add_row(label, f"{e:.3f}", f"{t:.3f}", cosa.details["mip_status"],
                      "-" if gap is None else f"{gap:.1e}", f"{cosa.details['solve_seconds']:.1f}", f"{kapla_s:.1f}",
                      "-" if ref is None else f"{x:.3f}" + ("" if ref.complete else " (budget)"))
    table.add_section()
    table.add_row("geomean", f"{geomean(energy):.3f}", f"{geomean(cycles):.3f}", "", "", "", "",
                  f"{geomean(exh):.3f}" if exh else "-")
    console.print(table)
    console.print(f"every scheme valid: {'yes' if not invalid else f'NO ({invalid})'}")
    return 1 if invalid else 0


if __name__ == "__main__":
    sys.exit(main())
