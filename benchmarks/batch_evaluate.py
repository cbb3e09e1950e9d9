"""Micro-benchmark: blocking candidates costed per second, scalar vs batch.

Run: python benchmarks/batch_evaluate.py [--seconds S]

For the skeleton with the most blocking candidates among the first few of
some layers, costs the exhaustive solver's candidates (``_blockings``) with
the scalar evaluator (``build_scheme`` + ``evaluate(check=False)``, for about
``--seconds``) and all of them with :func:`kapla.model.batch.enumerate_and_cost`
(enumeration included), and prints candidates per second and the speed-up.
A last row does the same over every skeleton of one layer (the scalar rate
is measured on a sample and extrapolated).
"""

from __future__ import annotations

import argparse
import itertools
import random
import time

from rich.console import Console
from rich.table import Table

from kapla.arch import load_arch
from kapla.model import evaluate
from kapla.search.layer.exhaustive.solver import _blockings
from kapla.space.layer.batch import enumerate_and_cost, enumerate_blockings
from kapla.space.layer.classic_view import skeletons
from kapla.workload.zoo import get_network

CASES = [
    ("alexnet", "conv3_a", 64, "multinode_4x4"),
    ("alexnet", "fc2", 64, "multinode_4x4"),
    ("alexnet", "conv3_a", 1, "edge"),
    ("mobilenet", "conv2_dw", 1, "edge"),
    ("alexnet", "conv2_a", 1, "eyeriss"),
]


def scalar_rate(skel, arch, seconds: float) -> float:
    count, start = 0, time.perf_counter()
    for scheme in _blockings(skel, arch):
        evaluate(scheme, arch, check=False)
        count += 1
        if count % 64 == 0 and time.perf_counter() - start > seconds:
            break
    return count / (time.perf_counter() - start)


def batch_rate(skel, arch) -> tuple[float, int]:
    enumerate_and_cost(skel, arch)  # warm caches
    start = time.perf_counter()
    found = enumerate_and_cost(skel, arch)
    return found.evaluated / (time.perf_counter() - start), found.evaluated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="scalar time per measurement")
    args = parser.parse_args()
    table = Table(title="blocking candidates costed per second (one core)")
    for col in ("layer", "hardware", "candidates", "scalar /s", "batch /s", "speed-up"):
        table.add_column(col, justify="left" if col in ("layer", "hardware") else "right")
    for net, name, batch, arch_name in CASES:
        arch = load_arch(arch_name)
        layer = get_network(net, batch)[name]
        skel = max(itertools.islice(skeletons(layer, batch, arch), 12),
                   key=lambda s: sum(len(c[0]) for c in enumerate_blockings(s, arch)))
        fast, n = batch_rate(skel, arch)
        slow = scalar_rate(skel, arch, args.seconds)
        table.add_row(f"{net} {name} b{batch}", arch_name, f"{n:,}", f"{slow:,.0f}", f"{fast:,.0f}",
                      f"{fast / slow:.0f}x")

    # A whole layer: every skeleton (no bound pruning).
    net, name, batch, arch_name = "alexnet", "conv3_a", 64, "multinode_4x4"
    arch = load_arch(arch_name)
    layer = get_network(net, batch)[name]
    skels = list(skeletons(layer, batch, arch))
    start = time.perf_counter()
    total = sum(enumerate_and_cost(s, arch).evaluated for s in skels)
    fast = total / (time.perf_counter() - start)
    slow = scalar_rate(random.Random(0).choice(skels), arch, args.seconds)
    table.add_row(f"{net} {name} b{batch}, all {len(skels)} skeletons", arch_name, f"{total:,}",
                  f"{slow:,.0f}", f"{fast:,.0f}", f"{fast / slow:.0f}x")
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
