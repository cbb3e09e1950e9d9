"""KAPLA's any-depth descent against the exhaustive optimum on four-level hierarchies.

Run: python benchmarks/deep_hierarchy.py [--designs four_level,pe_buffer,l2,eyeriss_lbuf]
                                         [--nets alexnet,mobilenet] [--batches 1,16]
                                         [--budget SECONDS] [--limit N] [--jobs N] [--recorded [FILE,...]]

For every distinct CONV/FC layer of the networks (distinct by
:func:`kapla.space.problem.shape_key`), at each batch, on each four-level design
(examples/four_level.yaml: registers, a local buffer, node buffers on 2x2
nodes; examples/four_level_pe_buffer.yaml: registers behind a per-PE buffer
under one global buffer; examples/four_level_l2.yaml: four global buffers
under a shared L2; examples/eyeriss_lbuf.yaml: Eyeriss with a 2 KiB buffer
between its PEs and its global buffer), KAPLA (the any-depth descent of
:mod:`kapla.search.layer.kapla.levels`) and the exhaustive search schedule the layer
in the same worker process, one after the other. The table gives each
energy, KAPLA's overhead against exhaustive and both wall times; the summary
gives, per design, the mean and worst overhead and the speed ratio (total
exhaustive time / total KAPLA time). Every returned scheme is checked with
the evaluator's independent validity check. An exhaustive search that hits
--budget is marked '*': its result is the best found, not a proven optimum,
and it is left out of the overhead statistics.

--recorded compares KAPLA with exhaustive runs already recorded (by default
every docs/benchmarks/deep_hierarchy*.txt and the four-level section of
docs/benchmarks/exhaustive_branch_and_bound.txt) instead of running the
exhaustive search again, which takes hours at batch 16: per layer, the
lowest energy any recorded run found, proven if a run that finished found
it ('*' if every run that found it hit its budget). Layers no run recorded
are left out.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from intra_layer import distinct_layers, kapla_only  # noqa: E402

from kapla.arch import load_arch  # noqa: E402
from kapla.model import evaluate  # noqa: E402
from kapla.search.layer.exhaustive import ExhaustiveIntraSolver  # noqa: E402
from kapla.search.layer.kapla import KaplaIntraSolver  # noqa: E402
from kapla.space.problem import NoSchemeError  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DESIGNS = {
    "four_level": EXAMPLES / "four_level.yaml",
    "pe_buffer": EXAMPLES / "four_level_pe_buffer.yaml",
    "l2": EXAMPLES / "four_level_l2.yaml",
    "eyeriss_lbuf": EXAMPLES / "eyeriss_lbuf.yaml",
}
NETS = ("alexnet", "mobilenet")
RECORDS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"


def recorded_optima(paths: list[Path]) -> dict[tuple[str, int, str], tuple[float, bool]]:
    """Per (design, batch, layer), the lowest exhaustive energy (J) the recorded
    runs give, and whether a run that finished (no '*') found it."""
    found: dict[tuple[str, int, str], list[tuple[float, bool]]] = {}
    for path in paths:
        section_batch = None
        for line in path.read_text().splitlines():
            m = re.match(r"(\w+)\s+b(\d+)\s+(\S+)\s+exh\s+([\d.]+)(\*?)\s+mJ", line)
            if m:  # a line of this benchmark's own output
                found.setdefault((m[1], int(m[2]), m[3]), []).append((float(m[4]) * 1e-3, not m[5]))
                continue
            if line.startswith("## "):
                b = re.search(r"at batch (\d+)", line)
                section_batch = int(b[1]) if b and "Four-level" in line else None
                continue
            m = re.match(r"(\w+)\s+(\w+/\S+)\s+([\d.]+)(\*?)\s+[\d.]+\s+([\d.]+)(\*?)\s", line)
            if m and section_batch is not None and m[1] in DESIGNS:  # old and new exhaustive, side by side
                key = (m[1], section_batch, m[2])
                found.setdefault(key, []).extend([(float(m[3]) * 1e-3, not m[4]), (float(m[5]) * 1e-3, not m[6])])
    out = {}
    for key, runs in found.items():
        low = min(e for e, _ in runs)
        out[key] = (low, any(proven and e <= low * (1 + 1e-9) for e, proven in runs))
    return out


def run_one(job):
    design, batch, label, layer, budget = job
    arch = load_arch(str(DESIGNS[design]))
    t0 = time.perf_counter()
    k = KaplaIntraSolver().solve(layer, batch, arch)
    t_k = time.perf_counter() - t0
    row = dict(design=design, batch=batch, layer=label, kapla=k.cost.total_energy, t_kapla=t_k,
               valid=evaluate(k.scheme, arch).valid)
    if budget == 0:  # KAPLA only
        return row
    t0 = time.perf_counter()
    try:
        e = ExhaustiveIntraSolver(time_budget=budget).solve(layer, batch, arch)
    except NoSchemeError:  # the budget ran out before any valid scheme: nothing to compare with
        row.update(exhaustive=math.inf, t_exhaustive=time.perf_counter() - t0, capped=True)
        return row
    t_e = time.perf_counter() - t0
    row.update(exhaustive=e.cost.total_energy, t_exhaustive=t_e, capped=not e.complete,
               valid=row["valid"] and evaluate(e.scheme, arch).valid)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--designs", default=",".join(DESIGNS), help=f"any of {', '.join(DESIGNS)}")
    parser.add_argument("--nets", default=",".join(NETS))
    parser.add_argument("--batches", default="1,16")
    parser.add_argument("--budget", type=float, default=600.0,
                        help="exhaustive seconds per layer (0: KAPLA alone)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N distinct layers")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--recorded", nargs="?", const="", default=None, metavar="FILE,...",
                        help="against recorded exhaustive runs (default: those in docs/benchmarks), not new ones")
    args = parser.parse_args()
    designs = args.designs.split(",")
    unknown = [d for d in designs if d not in DESIGNS]
    if unknown:
        parser.error(f"unknown design(s) {', '.join(unknown)}; known: {', '.join(DESIGNS)}")
    batches = [int(b) for b in args.batches.split(",")]
    layers = distinct_layers(args.nets.split(","))[: args.limit]
    jobs = [(d, b, label, layer, args.budget) for d in designs for b in batches for label, layer in layers]
    known = None
    if args.recorded is not None:
        paths = ([Path(f) for f in args.recorded.split(",")] if args.recorded else
                 sorted(RECORDS.glob("deep_hierarchy*.txt")) + [RECORDS / "exhaustive_branch_and_bound.txt"])
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            parser.error(f"no such file: {', '.join(missing)}")
        known = recorded_optima(paths)
        jobs = [(d, b, label, layer, 0.0) for d, b, label, layer, _ in jobs if (d, b, label) in known]
    console = Console(width=150)
    rows = []
    with Progress(console=console, transient=True) as bar, ProcessPoolExecutor(args.jobs) as pool:
        task = bar.add_task("solving", total=len(jobs))
        for row in pool.map(run_one, jobs):
            if known is not None:
                energy, proven = known[(row["design"], row["batch"], row["layer"])]
                row.update(exhaustive=energy, t_exhaustive=0.0, capped=not proven)
            rows.append(row)
            # a line per layer as it finishes, so a long run that is interrupted still shows its results
            if "exhaustive" in row:
                bar.console.print(
                    f"{row['design']:<12} b{row['batch']:<3} {row['layer']:<28} "
                    f"{'rec' if known is not None else 'exh'} {row['exhaustive'] * 1e3:10.4f}"
                    f"{'*' if row['capped'] else ' '} mJ  "
                    f"kapla {row['kapla'] * 1e3:10.4f} mJ  {row['kapla'] / row['exhaustive'] - 1:+7.2%}  "
                    f"{row['t_exhaustive']:6.1f} s {row['t_kapla']:5.2f} s{'' if row['valid'] else '  INVALID'}",
                    highlight=False)
            bar.update(task, advance=1, description=f"{row['design']} b{row['batch']} {row['layer']}")
    if args.budget == 0 and known is None:
        kapla_only(console, rows, designs, key="design")
        return
    table = Table(title="KAPLA vs exhaustive on four-level hierarchies, per layer")
    for col in ("design", "batch", "layer", "exhaustive mJ", "KAPLA mJ", "overhead", "exh s", "KAPLA s", "valid"):
        table.add_column(col, justify="left" if col in ("design", "layer") else "right")
    for r in rows:
        over = r["kapla"] / r["exhaustive"] - 1
        table.add_row(r["design"], str(r["batch"]), r["layer"],
                      f"{r['exhaustive'] * 1e3:.4f}{'*' if r['capped'] else ''}", f"{r['kapla'] * 1e3:.4f}",
                      f"{over:+.2%}", f"{r['t_exhaustive']:.1f}", f"{r['t_kapla']:.2f}",
                      "yes" if r["valid"] else "NO")
    console.print(table)
    summary = Table(title="summary (layers where exhaustive finished; * capped layers left out)")
    for col in ("design", "layers", "capped", "mean overhead", "worst overhead", "above 5 %", "exhaustive s",
                "KAPLA s", "speed ratio"):
        summary.add_column(col, justify="left" if col == "design" else "right")
    for design in designs + ["all"]:
        every = [r for r in rows if design in ("all", r["design"])]
        sel = [r for r in every if not r["capped"]]
        if not sel:
            continue
        over = [r["kapla"] / r["exhaustive"] - 1 for r in sel]
        t_e = sum(r["t_exhaustive"] for r in sel)
        t_k = sum(r["t_kapla"] for r in sel)
        summary.add_row(design, str(len(sel)), str(len(every) - len(sel)), f"{statistics.mean(over):+.2%}",
                        f"{max(over):+.2%}", str(sum(o > 0.05 for o in over)),
                        "recorded" if known is not None else f"{t_e:.1f}", f"{t_k:.1f}",
                        "-" if known is not None else f"{t_e / t_k:.0f}x")
    console.print(summary)
    invalid = [r for r in rows if not r["valid"]]
    console.print(f"every returned scheme valid: {'yes' if not invalid else 'NO: ' + str(len(invalid))}")


if __name__ == "__main__":
    main()
