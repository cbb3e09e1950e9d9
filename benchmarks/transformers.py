"""Transformers on the presets: energy by op class, and time against its floor.

Run: python benchmarks/transformers.py [--archs edge,multinode,simba] [--tokens 128,512,2048]
                                       [--caches 512,2048] [--batches 1] [--zoo] [--jobs N]

For a Llama-3-8B block (prefill of each ``--tokens`` count, decode of one
token against each ``--caches`` length) and, with ``--zoo``, the zoo's
BERT-base, GPT-2 (prefill, decode) and ViT-B/16, schedules each on each
preset at each batch with kapla's solver and prints its energy, the share
of each op class (projections, Q x K^T and scores x V, softmax and norms,
activations, the rest: scaling, masks, rotary, residual adds), its time, and
the time over its floor, the larger of the operations over the PEs (ops)
and the weights, KV cache, inputs and outputs over the DRAM bandwidth (mem).
A ratio is never below 1 (``tests/test_transformers.py`` checks prefill
against the first and decode against the second).
"""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

import kapla
from kapla.arch import load_arch
from kapla.model.floors import compute_floor, memory_floor
from kapla.workload.zoo import get_network
from kapla.workload.zoo.transformers import llama3_8b, llama3_8b_decode

GROUPS = {"projection": "proj", "attention": "QK/AV", "softmax": "sm+norm", "norm": "sm+norm",
          "activation": "act"}
COLUMNS = ("proj", "QK/AV", "sm+norm", "act", "other")


def cases(args: argparse.Namespace):
    for batch in args.batches:
        for tokens in args.tokens:
            yield f"llama3_8b_block@{tokens}", llama3_8b(batch, tokens=tokens)
        for cache in args.caches:
            yield f"llama3_8b_decode@{cache}", llama3_8b_decode(batch, cache=cache)
        if args.zoo:
            for name in ("bert_base", "gpt2", "gpt2_decode", "vit_b16"):
                yield name, get_network(name, batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", default="edge,multinode,simba")
    parser.add_argument("--tokens", default="128,512,2048", help="prefill lengths of the Llama block")
    parser.add_argument("--caches", default="512,2048", help="KV cache lengths of the Llama block's decode")
    parser.add_argument("--batches", default="1")
    parser.add_argument("--zoo", action="store_true", help="also BERT-base, GPT-2 (prefill, decode), ViT-B/16")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    args.tokens = [int(t) for t in args.tokens.split(",") if t]
    args.caches = [int(c) for c in args.caches.split(",") if c]
    args.batches = [int(b) for b in args.batches.split(",") if b]
    table = Table(title="transformers: energy by op class, time over its floor")
    for col in ("network", "arch", "batch", "energy mJ", *COLUMNS, "time (cycles)", "floor", "ratio", "solve s"):
        table.add_column(col, justify="left" if col in ("network", "arch") else "right")
    for name, net in cases(args):
        for arch in args.archs.split(","):
            start = time.perf_counter()
            result = kapla.schedule(net, arch, jobs=args.jobs)
            seconds = time.perf_counter() - start
            shares = dict.fromkeys(COLUMNS, 0.0)
            for lr in result.layers:
                shares[GROUPS.get(lr.scheme.layer.op_class, "other")] += sum(lr.cost.energy.values())
            total = sum(shares.values())
            spec = load_arch(arch)
            compute, memory = compute_floor(net, spec), memory_floor(net, spec)
            low = max(compute, memory)
            table.add_row(name, arch, str(net.batch), f"{result.energy_j * 1e3:.2f}",
                          *(f"{100 * shares[c] / total:.1f}%" for c in COLUMNS), f"{result.time:,.0f}",
                          f"{low:,.0f} {'mem' if memory > compute else 'ops'}", f"{result.time / low:.2f}",
                          f"{seconds:.1f}")
    Console(width=200).print(table)


if __name__ == "__main__":
    main()
