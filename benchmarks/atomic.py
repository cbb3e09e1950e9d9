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
``--engines 4x4,8x8,16x16`` runs the engine-count sweep of Fig. 12 instead
(the same PEs and SRAM in all, each engine's array and buffer scaled).

``--zoo`` runs every zoo network (or ``--nets``) at batch 1 and 20 (``--batches``)
under the four round-model schedulers, each run as ``kapla schedule NET --arch
atomic --solver S --batch B`` runs it (the CLI's default objective, one process,
``--jobs 1``), in a child process stopped after ``--timeout`` seconds; every
schedule is checked (the round model's validity check, and every atom of the
timeline run once) and one row per run is appended to ``--results`` (jsonl), whose
finished runs a new start skips: the sweep resumes. Then one table of them all.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

import kapla
from kapla.arch import ArchSpec, load_arch

#: The paper's networks the zoo has (NASNet-A and PNASNet-5 are not built), and AlexNet and MobileNet.
NETS = "vgg19,resnet50,resnet152,inception_v3,efficientnet_b0,googlenet,mobilenet,alexnet"
SOLVERS = ("atomic", "layer-sequential", "cnn-partition", "il-pipe", "layerwise", "kapla")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nets", default=NETS)
    parser.add_argument("--arch", default="atomic")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--engines", default=None, metavar="RxC,...",
                        help="instead: the paper's Fig. 12, the engine arrays given (e.g. 2x2,4x4,8x8,16x16) at the "
                             "preset's total PEs and SRAM, atomic against layer-sequential and IL-Pipe")
    parser.add_argument("--zoo", action="store_true",
                        help="instead: every zoo network (or --nets if given) at --batches under the four "
                             "round-model schedulers, resumable through --results; one table")
    parser.add_argument("--batches", default="1,20", help="with --zoo: the batch sizes")
    parser.add_argument("--solvers", default=",".join(ROUND_SOLVERS), help="with --zoo: the solvers")
    parser.add_argument("--objective", default=None, help="with --zoo: the objective (default: the CLI's)")
    parser.add_argument("--results", default="docs/benchmarks/atomic_zoo.jsonl",
                        help="with --zoo: the jsonl of finished runs (appended to; its runs are skipped)")
    parser.add_argument("--timeout", type=float, default=900.0, help="with --zoo: seconds before a run is stopped")
    parser.add_argument("--retry", action="store_true", help="with --zoo: run again the runs of --results not ok")
    parser.add_argument("--table-only", action="store_true",
                        help="with --zoo: print the table of --results, run nothing")
    args = parser.parse_args()
    console = Console(width=200, markup=False)
    if args.zoo:
        return zoo(args, Console(width=240, markup=False))
    if args.engines:
        return engine_count(args, console)
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


#: The four schedulers on the round model (the issue's "Done when": every zoo network under each).
ROUND_SOLVERS = ("atomic", "layer-sequential", "cnn-partition", "il-pipe")


def zoo_point(net: str, arch: str, batch: int, solver: str, objective: str | None) -> dict:
    """One run of the zoo sweep, as the CLI runs it, checked: a row of the results file."""
    row: dict = {"network": net, "arch": arch, "batch": batch, "solver": solver, "objective": objective,
                 "revision": _revision()}
    start, cpu = time.perf_counter(), time.process_time()
    try:
        extra = {} if objective is None else {"objective": objective}
        result = kapla.schedule(net, arch, batch=batch, solver=solver, jobs=1, **extra)
        doc = result.to_dict()
        info = doc["atomic"]
        ran = [a for r in info["timeline"] for a, _ in r["atoms"]]
        problems = list(info["violations"])
        groups = info["batch_groups"]["groups"]  # the timeline is one group's of samples
        if len(ran) != len(set(ran)) or len(ran) * groups != info["atoms"]:
            problems.append(f"{len(ran)} runs of {len(set(ran))} atoms a group, {info['atoms']} made "
                            f"in {groups} groups")
        if not result.valid and not problems:
            problems.append("a layer's own cost is invalid")
        row.update(status="ok" if not problems else "invalid: " + "; ".join(problems[:3]),
                   time_cycles=doc["time_cycles"], energy_j=doc["energy_j"], atoms=info["atoms"],
                   rounds=info["rounds"], solver_seconds=doc["solver_seconds"])
    except Exception as exc:  # noqa: BLE001 -- a run that fails is a row saying how, not the end of the sweep
        row["status"] = f"error: {type(exc).__name__}: {exc}".splitlines()[0][:300]
    row["seconds"] = round(time.perf_counter() - start, 2)
    row["cpu_seconds"] = round(time.process_time() - cpu, 2)  # this process's CPU time: less moved by a busy machine
    return row


def _revision() -> str:
    """The commit the run's code is at (``KAPLA_REVISION`` where it runs outside a checkout)."""
    if os.environ.get("KAPLA_REVISION"):
        return os.environ["KAPLA_REVISION"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(kapla.__file__).parent,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _child(conn, *point) -> None:
    conn.send(zoo_point(*point))
    conn.close()


def run_point(net: str, arch: str, batch: int, solver: str, objective: str | None, timeout: float) -> dict:
    """:func:`zoo_point` in a child process, stopped after ``timeout`` seconds (a row saying so)."""
    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe(duplex=False)
    start = time.perf_counter()
    child = ctx.Process(target=_child, args=(theirs, net, arch, batch, solver, objective))
    child.start()
    theirs.close()
    row = None
    if ours.poll(timeout):
        try:
            row = ours.recv()
        except EOFError:
            row = None
    if row is None:
        alive = child.is_alive()
        if alive:
            child.kill()
        child.join()
        row = {"network": net, "arch": arch, "batch": batch, "solver": solver, "objective": objective,
               "status": f"timeout after {timeout:.0f} s" if alive else f"error: the run died (exit {child.exitcode})",
               "seconds": round(time.perf_counter() - start, 2)}
    child.join()
    return row


def _short(status: str) -> str:
    """A row's status for the table (the results file keeps it whole)."""
    refused = re.search(r"is ([0-9,]+) atoms even cut as coarsely.* over the ([0-9,]+)", status)
    if refused:
        return f"refused: {refused.group(1)} atoms at the coarsest cut, over the limit ({refused.group(2)})"
    return status if len(status) <= 90 else status[:87] + "..."


def _key(row: dict) -> tuple:
    return (row["network"], row["arch"], int(row["batch"]), row["solver"], row.get("objective"))


def zoo(args: argparse.Namespace, console: Console) -> int:
    from kapla.workload.zoo import ZOO

    nets = list(ZOO) if args.nets == NETS else args.nets.split(",")
    unknown = [n for n in nets if n not in ZOO]
    if unknown:
        raise SystemExit(f"error: --nets: not in the zoo: {', '.join(unknown)}")
    try:
        batches = [int(b) for b in args.batches.split(",")]
        if any(b < 1 for b in batches):
            raise ValueError
    except ValueError:
        raise SystemExit(f"error: --batches {args.batches!r}: expected whole numbers of at least 1, "
                         "e.g. 1,20") from None
    solvers = args.solvers.split(",")
    if not set(solvers) <= set(ROUND_SOLVERS):
        raise SystemExit(f"error: --solvers: expected some of {', '.join(ROUND_SOLVERS)}")
    if args.timeout <= 0:
        raise SystemExit("error: --timeout must be above 0")
    path = Path(args.results)
    done: dict[tuple, dict] = {}
    if path.exists():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    row = json.loads(line)
                    done[_key(row)] = row  # a later row of the same run replaces an earlier one
                except (ValueError, KeyError, TypeError):
                    raise SystemExit(f"error: {path}:{n}: not a row of this sweep") from None
    points = [(net, args.arch, b, s, args.objective) for b in batches for net in nets for s in solvers]
    if not args.table_only:
        path.parent.mkdir(parents=True, exist_ok=True)
        for point in points:
            if point in done and (done[point]["status"] == "ok" or not args.retry):
                continue
            row = run_point(*point, timeout=args.timeout)
            with path.open("a") as f:
                f.write(json.dumps(row) + "\n")
            done[point] = row
            console.print(f"{row['network']} batch {row['batch']} {row['solver']}: {row['status']} "
                          f"in {row['seconds']:.1f} s", highlight=False)
    rows = [done[p] for p in points if p in done]
    objective = args.objective or "the CLI's default"
    console.print(f"# python benchmarks/atomic.py --zoo --arch {args.arch} --batches {args.batches}"
                  + (f" --nets {args.nets}" if args.nets != NETS else "")
                  + (f" --objective {args.objective}" if args.objective else ""))
    table = Table(title=f"every zoo network on {args.arch} under the round-model schedulers (objective: "
                        f"{objective}; one process each; every schedule checked by the round model)")
    for col in ("network", "batch", "solver", "status", "latency (cycles)", "energy mJ", "atoms", "run s", "CPU s",
                "at"):
        table.add_column(col, justify="left" if col in ("network", "solver", "status", "at") else "right")
    for row in rows:
        ok = row["status"] == "ok"
        table.add_row(row["network"], str(row["batch"]), row["solver"], _short(row["status"]),
                      f"{row['time_cycles']:,}" if ok else "", f"{row['energy_j'] * 1e3:,.2f}" if ok else "",
                      f"{row['atoms']:,}" if ok else "", f"{row['seconds']:.1f}",
                      f"{row['cpu_seconds']:.1f}" if "cpu_seconds" in row else "", row.get("revision", ""))
    console.print(table)
    bad = [r for r in rows if r["status"] != "ok"]
    missing = len(points) - len(rows)
    # the whole run as a user waits for it (CNN-Partition's and IL-Pipe's solver_seconds are their chosen option's)
    timed = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: -r["seconds"])[:5]
    console.print(f"{len(rows) - len(bad)} of {len(points)} runs ok, {len(bad)} not, {missing} not run yet; slowest: "
                  + ", ".join(f"{r['network']} b{r['batch']} {r['solver']} {r['seconds']:.0f} s"
                              for r in timed))
    return 1 if bad or missing else 0


def engine_arch(base: ArchSpec, rows: int, cols: int) -> ArchSpec:
    """``base`` (engines of a PE array and a buffer each) as ``rows x cols`` engines with
    the same PEs and SRAM in all: each engine's PE array and buffer scaled inversely."""
    node = base.node_level
    assert node is not None
    er, ec = base.node_array
    pr, pc = base.pe_array
    if (er * pr) % rows or (ec * pc) % cols:
        raise SystemExit(f"error: --engines {rows}x{cols} does not divide the {er * pr}x{ec * pc} PEs")
    capacity = base.capacity_words(node.name) * base.word_bits // 8 * er * ec // (rows * cols)
    pe_level = base.levels[0].name
    return (base.with_level(pe_level, array=[er * pr // rows, ec * pc // cols])
            .with_level(node.name, array=[rows, cols], capacity=capacity)
            .replace(name=f"{base.name}_{rows}x{cols}"))


def engine_count(args: argparse.Namespace, console: Console) -> int:
    base = load_arch(args.arch)
    console.print(f"# python benchmarks/atomic.py --nets {args.nets} --arch {args.arch} --batch {args.batch} "
                  f"--engines {args.engines}")
    table = Table(title=f"engine count at {base.num_pes} PEs and the same SRAM in all (the paper's Fig. 12), "
                        f"batch {args.batch}: latency in cycles, atomic's speed-up over each baseline")
    for col in ("network", "engines", "PEs per engine", "buffer per engine", "atomic", "layer-sequential",
                "IL-Pipe", "over layer-sequential", "over IL-Pipe"):
        table.add_column(col, justify="left" if col == "network" else "right")
    invalid = 0
    for net in args.nets.split(","):
        for text in args.engines.split(","):
            try:
                rows, cols = (int(v) for v in text.lower().split("x"))
                if rows < 1 or cols < 1:
                    raise ValueError
            except ValueError:
                raise SystemExit(f"error: --engines {text!r}: expected ROWSxCOLS, e.g. 8x8") from None
            arch = engine_arch(base, rows, cols)
            got = {}
            for solver in ("atomic", "layer-sequential", "il-pipe"):
                got[solver] = kapla.schedule(net, arch, batch=args.batch, solver=solver, objective="latency",
                                             jobs=args.jobs)
                invalid += not got[solver].valid
            a = got["atomic"].time
            node = arch.node_level
            assert node is not None
            table.add_row(net, f"{rows}x{cols}", "x".join(map(str, arch.pe_array)),
                          f"{arch.capacity_words(node.name) * arch.word_bits // 8 // 1024} KiB",
                          f"{a:,.0f}", f"{got['layer-sequential'].time:,.0f}", f"{got['il-pipe'].time:,.0f}",
                          f"{got['layer-sequential'].time / a:.2f}", f"{got['il-pipe'].time / a:.2f}")
    console.print(table)
    console.print("the paper (Fig. 12, 16384 PEs and 8 MB in all): atomic dataflow's time against the engine count is "
                  "U-shaped, with a sweet spot per network")
    console.print(f"every schedule valid: {'yes' if not invalid else f'NO ({invalid})'}")
    return 1 if invalid else 0


if __name__ == "__main__":
    sys.exit(main())
