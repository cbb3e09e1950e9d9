"""KAPLA's intra-layer solver against the exhaustive optimum, layer by layer.

Run: python benchmarks/intra_layer.py [--configs multinode,region4x4,edge,four_level,simba] [--nets ...]
                                      [--budget SECONDS] [--jobs N] [--limit N] [--baseline GIT_REF [--repeat N]]

``--budget 0`` runs KAPLA alone (its energy, time and validity per layer).
``--baseline REF`` compares KAPLA here with KAPLA at another git revision,
each in a worker process of its own, every layer solved by both in turn (who
goes first alternates) so that both see the same machine; times are each
worker's CPU seconds (the least of ``--repeat`` solves).

For every distinct CONV/FC layer of AlexNet, VGG-16, GoogLeNet, ResNet-50,
MobileNet and the MLPs, on three configurations (the whole 16x16 `multinode`
array at batch 64, a 4x4 block of it at batch 64, and the `edge` node at batch
1), both solvers schedule the layer in the same worker process, one after the
other. The table gives each energy, KAPLA's overhead against exhaustive and
both wall times; the summary gives the mean and worst overhead and the speed
ratio (total exhaustive time / total KAPLA time). Every returned scheme is
checked with the evaluator's independent validity check. An exhaustive search
that hits --budget is marked '*': its result is the best found, not a proven
optimum, and it is left out of the overhead statistics.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from kapla.arch import load_arch
from kapla.model import evaluate
from kapla.search.layer.exhaustive.solver import ExhaustiveIntraSolver
from kapla.search.layer.kapla.solver import KaplaIntraSolver
from kapla.space.problem import shape_key
from kapla.workload.zoo import get_network

NETS = ("alexnet", "vgg16", "googlenet", "resnet50", "mobilenet", "mlp_s", "mlp_m", "mlp_l")
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CONFIGS = {
    "multinode": ("multinode", None, 64),
    "region4x4": ("multinode", (4, 4), 64),
    "edge": ("edge", None, 1),
    # deeper hierarchies: the documented 4-level example (registers, a local
    # buffer, node buffers on 2x2 nodes) and CoSA's Simba (per-tensor buffers,
    # 4 on-chip levels, weights bypassing the global buffer), batch 1 as CoSA
    "four_level": (str(EXAMPLES / "four_level.yaml"), None, 64),
    "simba": ("simba", None, 1),
}

def distinct_layers(nets):
    seen, out = set(), []
    for name in nets:
        for layer in get_network(name, 1):
            if not layer.has_weights:
                continue
            key = shape_key(layer)
            if key not in seen:
                seen.add(key)
                out.append((f"{name}/{layer.name}", key))
    return out


def arch_of(config):
    name, region, batch = CONFIGS[config]
    arch = load_arch(name)
    return (arch.with_node_region(*region) if region else arch), batch


def run_one(job):
    config, label, layer, budget = job
    arch, batch = arch_of(config)
    t0 = time.perf_counter()
    k = KaplaIntraSolver().solve(layer, batch, arch)
    t_k = time.perf_counter() - t0
    if budget == 0:  # KAPLA only
        return dict(config=config, layer=label, kapla=k.cost.total_energy, t_kapla=t_k,
                    valid=evaluate(k.scheme, arch).valid)
    t0 = time.perf_counter()
    e = ExhaustiveIntraSolver(time_budget=budget).solve(layer, batch, arch)
    t_e = time.perf_counter() - t0
    valid = evaluate(k.scheme, arch).valid and evaluate(e.scheme, arch).valid
    return dict(config=config, layer=label, kapla=k.cost.total_energy, exhaustive=e.cost.total_energy,
                t_kapla=t_k, t_exhaustive=t_e, capped=budget is not None and t_e >= budget, valid=valid,
                evaluated=e.evaluated)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--nets", default=",".join(NETS))
    parser.add_argument("--budget", type=float, default=600.0, help="exhaustive seconds per layer")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None, help="only the first N distinct layers")
    parser.add_argument("--baseline", metavar="GIT_REF", default=None,
                        help="KAPLA only, against KAPLA of GIT_REF run in the same invocation (its own checkout, "
                             "one process each, every layer solved by both in turn) on the configurations both know")
    parser.add_argument("--repeat", type=int, default=1,
                        help="with --baseline: solve each layer this many times per side, keep the least CPU time")
    args = parser.parse_args()
    layers = distinct_layers(args.nets.split(","))[: args.limit]
    if args.baseline:
        compare_with(args.baseline, args.configs.split(","), layers, args)
        return
    jobs = [(c, label, layer, args.budget) for c in args.configs.split(",") for label, layer in layers]
    console = Console(width=150)
    rows = []
    with Progress(console=console, transient=True) as bar, ProcessPoolExecutor(args.jobs) as pool:
        task = bar.add_task("solving", total=len(jobs))
        for row in pool.map(run_one, jobs):
            rows.append(row)
            # a line per layer as it finishes, so a long run that is interrupted still shows its results
            if "exhaustive" in row:
                bar.console.print(f"{row['config']:<10} {row['layer']:<34} exh {row['exhaustive'] * 1e3:10.4f} mJ  "
                                  f"kapla {row['kapla'] * 1e3:10.4f} mJ  {row['kapla'] / row['exhaustive'] - 1:+7.2%}"
                                  f"  {row['t_exhaustive']:6.1f} s {row['t_kapla']:5.2f} s", highlight=False)
            bar.update(task, advance=1, description=f"{row['config']} {row['layer']}")
    if args.budget == 0:
        kapla_only(console, rows, args.configs.split(","))
        return
    table = Table(title="KAPLA vs exhaustive, per layer")
    for col in ("config", "layer", "exhaustive mJ", "KAPLA mJ", "overhead", "exh s", "KAPLA s", "valid"):
        table.add_column(col, justify="left" if col in ("config", "layer") else "right")
    for r in rows:
        over = r["kapla"] / r["exhaustive"] - 1
        table.add_row(r["config"], r["layer"], f"{r['exhaustive'] * 1e3:.4f}{'*' if r['capped'] else ''}",
                      f"{r['kapla'] * 1e3:.4f}", f"{over:+.2%}", f"{r['t_exhaustive']:.1f}", f"{r['t_kapla']:.2f}",
                      "yes" if r["valid"] else "NO")
    console.print(table)
    summary = Table(title="summary (layers where exhaustive finished)")
    for col in ("config", "layers", "mean overhead", "worst overhead", "exhaustive s", "KAPLA s", "speed ratio"):
        summary.add_column(col, justify="left" if col == "config" else "right")
    for config in args.configs.split(",") + ["all"]:
        sel = [r for r in rows if (config == "all" or r["config"] == config) and not r["capped"]]
        if not sel:
            continue
        over = [r["kapla"] / r["exhaustive"] - 1 for r in sel]
        t_e = sum(r["t_exhaustive"] for r in sel)
        t_k = sum(r["t_kapla"] for r in sel)
        summary.add_row(config, str(len(sel)), f"{statistics.mean(over):+.2%}", f"{max(over):+.2%}",
                        f"{t_e:.1f}", f"{t_k:.1f}", f"{t_e / t_k:.0f}x")
    console.print(summary)
    invalid = [r for r in rows if not r["valid"]]
    console.print(f"every returned scheme valid: {'yes' if not invalid else 'NO: ' + str(len(invalid))}")


def kapla_only(console: Console, rows: list[dict], groups: list[str], key: str = "config") -> None:
    """KAPLA's energy, time and validity summed per group of rows (``row[key]``), and over all."""
    table = Table(title=f"KAPLA alone, per {'configuration' if key == 'config' else key}")
    for col in (key, "layers", "energy mJ (sum)", "KAPLA s", "slowest layer s", "all valid"):
        table.add_column(col, justify="left" if col == key else "right")
    for group in groups + ["all"]:
        sel = [r for r in rows if group == "all" or r[key] == group]
        if sel:
            table.add_row(group, str(len(sel)), f"{sum(r['kapla'] for r in sel) * 1e3:.3f}",
                          f"{sum(r['t_kapla'] for r in sel):.1f}", f"{max(r['t_kapla'] for r in sel):.2f}",
                          "yes" if all(r["valid"] for r in sel) else "NO")
    console.print(table)


_WORKER = """
import json, sys, time
sys.path.insert(0, sys.argv[1] + "/benchmarks")
from intra_layer import CONFIGS, arch_of, distinct_layers
try:
    from kapla.search.layer.kapla import KaplaIntraSolver
except ImportError:  # a revision before the search/ layout
    from kapla.solve.kapla_intra import KaplaIntraSolver
layers = dict(distinct_layers(sys.argv[2].split(",")))
repeat = int(sys.argv[3])
print(json.dumps(sorted(CONFIGS)), flush=True)
for line in sys.stdin:  # one 'config:layer' per line; answers its energy and least CPU seconds
    config, label = line.strip().split(":", 1)
    arch, batch = arch_of(config)
    best = None
    for _ in range(repeat):
        t = time.process_time()
        r = KaplaIntraSolver().solve(layers[label], batch, arch)
        dt = time.process_time() - t
        best = dt if best is None else min(best, dt)
    print(json.dumps([r.cost.total_energy, best]), flush=True)
"""


class _Worker:
    """KAPLA of one source tree in a process of its own, solving one layer per request."""

    def __init__(self, root: str, nets: str, repeat: int) -> None:
        env = {**os.environ, "PYTHONPATH": os.path.join(root, "src")}
        self.proc = subprocess.Popen([sys.executable, "-c", _WORKER, root, nets, str(repeat)], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.configs = set(json.loads(self.proc.stdout.readline()))

    def solve(self, key: str) -> tuple[float, float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(key + "\n")
        self.proc.stdin.flush()
        energy, seconds = json.loads(self.proc.stdout.readline())
        return energy, seconds

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def _side_by_side(base: str, here: str, configs: list[str], layers, args) -> tuple[dict, dict]:
    """Each layer solved by both trees in turn (who goes first alternates), so
    that both see the same machine; CPU seconds of each worker process, the
    least of ``--repeat`` runs."""
    workers = [_Worker(base, args.nets, args.repeat), _Worker(here, args.nets, args.repeat)]
    keys = [f"{c}:{label}" for c in configs if all(c in w.configs for w in workers) for label, _ in layers]
    out: list[dict] = [{}, {}]
    try:
        with Progress(console=Console(width=150), transient=True) as bar:
            task = bar.add_task("solving", total=len(keys))
            for n, key in enumerate(keys):
                for side in ((0, 1) if n % 2 == 0 else (1, 0)):
                    out[side][key] = workers[side].solve(key)
                bar.advance(task)
    finally:
        for w in workers:
            w.close()
    return out[0], out[1]


def compare_with(ref: str, configs: list[str], layers, args) -> None:
    """KAPLA of this tree and of ``ref`` on the same layers, side by side (see :func:`_side_by_side`)."""
    here = str(Path(__file__).resolve().parents[1])
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "baseline")
        subprocess.run(["git", "-C", here, "worktree", "add", "--detach", base, ref], check=True,
                       capture_output=True)
        try:
            old, new = _side_by_side(base, here, configs, layers, args)
        finally:
            subprocess.run(["git", "-C", here, "worktree", "remove", "--force", base], capture_output=True)
    console = Console(width=150)
    table = Table(title=f"KAPLA here against KAPLA at {ref} ({len(layers)} layers per configuration)")
    for col in ("config", "layers", "same energy", "lower", "mean energy ratio", "worst energy ratio",
                f"{ref} CPU s", "here CPU s", "speed-up"):
        table.add_column(col, justify="left" if col == "config" else "right")
    for config in configs + ["all"]:
        keys = [k for k in new if k in old and (config == "all" or k.startswith(config + ":"))]
        if not keys:
            continue
        ratios = [new[k][0] / old[k][0] for k in keys]
        t_old, t_new = sum(old[k][1] for k in keys), sum(new[k][1] for k in keys)
        table.add_row(config, str(len(keys)), str(sum(abs(r - 1) <= 1e-9 for r in ratios)),
                      str(sum(r < 1 - 1e-9 for r in ratios)),
                      f"{statistics.mean(ratios):.6f}", f"{max(ratios):.6f}", f"{t_old:.1f}", f"{t_new:.1f}",
                      f"{t_old / t_new:.2f}x")
    console.print(table)


if __name__ == "__main__":
    main()
