"""Micro-benchmark: how many layer schemes the evaluator judges per second.

Run: python benchmarks/evaluate.py [--seconds S]

Evaluates a few representative schemes (a row-stationary CONV on one Eyeriss
node, a systolic CONV on the edge node, and KAPLA's CONV + depthwise CONV
example on multi-node regions) over and over, with and without the validity
check, and prints evaluations per second and microseconds per evaluation.
"""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

from kapla.arch import load_arch
from kapla.dataflow.examples import kapla_example, row_stationary_example, systolic_example
from kapla.model import evaluate


def cases():
    _, conv, dw = kapla_example()
    multinode = load_arch("multinode")
    return [
        ("RS CONV, eyeriss", row_stationary_example(), load_arch("eyeriss")),
        ("systolic CONV, edge", systolic_example(), load_arch("edge")),
        ("KAPLA example CONV, 4x16 nodes", conv, multinode.with_node_region(4, 16)),
        ("KAPLA example DWCONV, 12x16 nodes", dw, multinode.with_node_region(12, 16)),
    ]


def rate(scheme, arch, check: bool, seconds: float) -> float:
    evaluate(scheme, arch, check=check)  # warm caches
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(50):
            evaluate(scheme, arch, check=check)
        count += 50
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    args = parser.parse_args()
    table = Table(title="layer-scheme evaluations per second (one core)")
    for col in ("scheme", "checked /s", "us each", "unchecked /s", "us each"):
        table.add_column(col, justify="left" if col == "scheme" else "right")
    for label, scheme, arch in cases():
        checked = rate(scheme, arch, True, args.seconds)
        raw = rate(scheme, arch, False, args.seconds)
        table.add_row(label, f"{checked:,.0f}", f"{1e6 / checked:.0f}", f"{raw:,.0f}", f"{1e6 / raw:.0f}")
    Console().print(table)


if __name__ == "__main__":
    main()
