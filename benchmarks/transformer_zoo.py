"""Every transformer of the zoo on every preset: valid, every layer costed, never under its floors.

Run: python benchmarks/transformer_zoo.py [--archs all] [--nets all] [--batches 1,16] [--jobs N]

Schedules each transformer of the zoo (BERT-base at 128 and 512 tokens,
GPT-2 and the Llama-3-8B block in prefill and decode, ViT-B/16) on each
preset at each batch with kapla's solver, for inference and, for all but
the decoders' one-token decode (which nobody trains), training. Per run it
prints whether the schedule is valid, its energy, the least energy any
layer of a vector op class (softmax, norms, activations, scaling, masks,
rotary, residual adds) carries (never zero: nothing is free), the time over
each floor (operations over the PEs; weights, inputs and outputs over the
DRAM bandwidth; never below 1) and the seconds it took. The exit status is
1 if any run is invalid, leaves a layer without energy or beats a floor.
"""

from __future__ import annotations

import argparse
import sys
import time

from rich.console import Console
from rich.table import Table

import kapla
from kapla.api import resolve_network
from kapla.arch import load_arch
from kapla.arch.loader import list_presets
from kapla.model.floors import compute_floor, memory_floor
from kapla.workload.zoo import TRANSFORMERS

DECODE = ("gpt2_decode", "llama3_8b_decode")


def runs(nets, archs, batches):
    for name in nets:
        for arch in archs:
            for batch in batches:
                for training in (False,) if name in DECODE else (False, True):
                    yield name, arch, batch, training


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", default="all", help="presets, comma-separated (all: every preset)")
    parser.add_argument("--nets", default="all", help="zoo transformers, comma-separated (all: every one)")
    parser.add_argument("--batches", default="1,16")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes per schedule (default: kapla's)")
    args = parser.parse_args()
    archs = list_presets() if args.archs == "all" else args.archs.split(",")
    nets = list(TRANSFORMERS) if args.nets == "all" else args.nets.split(",")
    batches = [int(b) for b in args.batches.split(",") if b]
    console = Console(width=140)
    table = Table(title="every transformer of the zoo on every preset (kapla's solver)")
    for col in ("network", "preset", "batch", "mode", "valid", "energy mJ", "least vector layer nJ",
                "time / ops floor", "time / mem floor", "s"):
        table.add_column(col, justify="left" if col in ("network", "preset", "mode", "valid") else "right")
    bad = []
    for name, arch, batch, training in runs(nets, archs, batches):
        start = time.perf_counter()
        net = resolve_network(name, batch, training)
        result = kapla.schedule(net, arch, jobs=args.jobs)
        spec = load_arch(arch)
        energy = {lr.name: sum(lr.cost.energy.values()) for lr in result.layers}
        vector = [e for name_, e in energy.items() if net[name_].vector_mode is not None]
        least = min(vector) if vector else float("nan")
        ops = result.time / compute_floor(net, spec)
        mem = result.time / memory_floor(net, spec, weights=not result.pinned)
        ok = result.valid and min(energy.values()) > 0 and ops >= 1 and mem >= 1
        if not ok:
            bad.append((name, arch, batch, training))
        row = (name, arch, str(batch), "training" if training else "inference",
               "yes" if result.valid else "NO", f"{result.energy_j * 1e3:.3f}", f"{least * 1e9:.1f}",
               f"{ops:.2f}", f"{mem:.2f}", f"{time.perf_counter() - start:.0f}")
        table.add_row(*row)
        print(" ".join(row), file=sys.stderr, flush=True)  # progress: a run can take half a minute
    console.print(table)
    console.print(f"{len(table.rows)} runs, {len(bad)} invalid, uncosted or under a floor"
                  + "".join(f"\n  {b}" for b in bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
