"""Whole networks with KAPLA (and the exhaustive baseline where it finishes), and nn_dataflow's reference cases.

Run: python benchmarks/network.py [--nets alexnet,...] [--modes inference,training]
                                  [--budget SECONDS] [--compare NETS] [--no-reference] [--no-exhaustive]
                                  [--sweep] [--baseline REV [--archs multinode,edge,simba] [--solver NAME]]
                                  [--scaling [--archs multinode] [--plot FILE]] [--jobs N|default]

Part 1 schedules each network on the `multinode` preset at batch 64 with
KAPLA's inter-layer search (top-4 DP) and intra-layer solver, for inference
and training, and prints energy, time, solver seconds and the inter-layer
schemes considered / valid / Pareto-optimal / solved (the paper's Table VI).
The exhaustive baseline (every inter-layer scheme, exhaustive intra-layer
search) runs with a time budget per network; where it finishes, KAPLA's
overhead against it is printed, else '-'.

Part 3 (--sweep) schedules every zoo network, inference and training, on
`multinode` and `multinode_4x4` at batch 64 and on `edge` at batch 1, and
checks every result with the evaluator.

--baseline REV runs every zoo network (or --nets), inference and training, on
each of --archs (batch 64 on multi-node presets, 1 elsewhere) with this tree
and with git revision REV (its own checkout), case by case in one run, each
side in its own worker process and one case at a time, and prints both
energies, the revision's schedule costed by this tree's model (`kapla
recost`: like for like where the cost model changed between them), the ratio
of this tree's energy to that one (to the revision's own where its schedule
cannot be rebuilt here) and both wall times; the last lines count the cases
whose energy is the same, lower and higher here. --jobs sets the worker
processes of every case (default 1: each side solves in its own process;
'default': kapla's default, the wall time a user sees). Every case is timed in
a process that has imported kapla and started its worker server (one small
schedule, MLP-S on `edge`, with the same solver and workers, before the first),
as in a sweep; a one-shot `kapla schedule` pays both besides. Each case also reports
its peak memory: the peak resident set of the process and of every process
it started (the worker pool's forkserver and workers), summed (an upper
bound of their peak together: pages they share count once per process); the
last line gives the largest here.

--scaling runs this tree alone on networks of one design at growing depth
(ResNet-18, -34, -50, -101, -152; 1, 2, 4 and 8 Llama-3-8B-style blocks) on
the first of --archs and prints wall time against the number of layers, each
family's time and layer count relative to its shallowest.

Part 1b compares KAPLA with the exhaustive baseline on networks where the
exhaustive search finishes in minutes on this machine: the small networks
(--compare, default MLP-S, MLP-M, LSTM-M) on `multinode_4x4` at batch 64.

Part 2 schedules the two cases of shared/reference/nn_dataflow_results.md
with the same hardware and options and prints kapla's energy, time and
per-level access counts beside the reference, with their ratios.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time

from rich.console import Console
from rich.table import Table

import kapla
from kapla.search.base import SearchBudgetExceeded

NETS = ("alexnet", "vgg16", "googlenet", "resnet50", "mobilenet", "mlp_l", "lstm_l")

# shared/reference/nn_dataflow_results.md, copied as published figures
REFERENCE = {
    "alexnet": dict(
        title="AlexNet, layer by layer, no buffer sharing",
        options=dict(pipelining=False, buffer_sharing=False),
        energy=0.353926, time=20214080,
        parts={"MAC": 0.04636, "memory": 0.2513, "NoC": 0.0305, "static": 0.02573},
        accesses={"DRAM": 517480448.0, "GBUF": 2647179264.0, "ITCN": 11211792384.0, "REGF": 185659762688.0},
        noc=3.12451e09),
    "mlp_s": dict(
        title="MLP-S, full TANGRAM (sharing, pipelining, ALLO)",
        options=dict(),
        energy=0.000121526, time=2688,
        parts={"MAC": 3.319e-05, "memory": 6.845e-05, "NoC": 1.646e-05, "static": 3.421e-06},
        accesses={"DRAM": 51456.0, "GBUF": 1163008.0, "ITCN": 19470312.0, "REGF": 132992000.0},
        noc=1.68646e06),
}


def level_totals(result) -> dict[str, float]:
    out: dict[str, float] = {}
    for lr in result.layers:
        for level, tensors in lr.cost.accesses.items():
            out[level] = out.get(level, 0.0) + sum(tensors.values())
    return out


def part_one(console: Console, nets, modes, budget, exhaustive: bool) -> None:
    table = Table(title="whole networks on multinode, batch 64")
    for col in ("network", "mode", "KAPLA mJ", "time (Mcycles)", "KAPLA s", "segments", "considered", "valid",
                "pareto", "solved", "exhaustive mJ", "exh s", "overhead"):
        table.add_column(col, justify="left" if col in ("network", "mode") else "right")
    overheads = []
    for name in nets:
        for mode in modes:
            training = mode == "training"
            t0 = time.perf_counter()
            k = kapla.schedule(name, "multinode", batch=64, training=training)
            t_k = time.perf_counter() - t0
            assert k.valid, f"{name} {mode}: KAPLA's schedule failed the evaluator's check"
            counts = k.extra["inter_layer_schemes"]
            exh_e, exh_s, over = "-", "-", "-"
            if exhaustive:
                t0 = time.perf_counter()
                try:
                    e = kapla.schedule(name, "multinode", batch=64, training=training, solver="exhaustive",
                                       time_budget=budget)
                    assert e.valid
                    exh_e, exh_s = f"{e.energy_j * 1e3:.3f}", f"{time.perf_counter() - t0:.0f}"
                    overheads.append(k.energy_j / e.energy_j - 1)
                    over = f"{overheads[-1]:+.2%}"
                except SearchBudgetExceeded:
                    exh_s = f">{budget:g}"
            row = (name, mode, f"{k.energy_j * 1e3:.3f}", f"{k.time / 1e6:.3f}", f"{t_k:.1f}",
                   str(len(k.segments)), f"{counts['considered']:,}", f"{counts['valid']:,}",
                   f"{counts['pareto']:,}", f"{counts['solved']:,}", exh_e, exh_s, over)
            console.print("  ".join(row), highlight=False)
            table.add_row(*row)
    console.print(table)
    if overheads:
        console.print(f"KAPLA against exhaustive where it finished: mean {statistics.mean(overheads):+.2%}, "
                      f"worst {max(overheads):+.2%} over {len(overheads)} runs")


def part_one_b(console: Console, nets, budget) -> None:
    table = Table(title="KAPLA vs the exhaustive network search, multinode_4x4, batch 64, inference")
    for col in ("network", "KAPLA mJ", "KAPLA s", "exhaustive mJ", "exhaustive s", "overhead", "speed ratio"):
        table.add_column(col, justify="left" if col == "network" else "right")
    overheads = []
    for name in nets:
        t0 = time.perf_counter()
        k = kapla.schedule(name, "multinode_4x4", batch=64)
        t_k = time.perf_counter() - t0
        t0 = time.perf_counter()
        try:
            e = kapla.schedule(name, "multinode_4x4", batch=64, solver="exhaustive", time_budget=budget)
        except SearchBudgetExceeded:
            table.add_row(name, f"{k.energy_j * 1e3:.4f}", f"{t_k:.1f}", "-", f">{budget:g}", "-", "-")
            continue
        t_e = time.perf_counter() - t0
        assert k.valid and e.valid
        overheads.append(k.energy_j / e.energy_j - 1)
        row = (name, f"{k.energy_j * 1e3:.4f}", f"{t_k:.1f}", f"{e.energy_j * 1e3:.4f}", f"{t_e:.1f}",
               f"{overheads[-1]:+.2%}", f"{t_e / t_k:.0f}x")
        console.print("  ".join(row), highlight=False)
        table.add_row(*row)
    console.print(table)
    if overheads:
        console.print(f"mean overhead {statistics.mean(overheads):+.2%}, worst {max(overheads):+.2%}")


def _compare_row(table: Table, label: str, mine: float, theirs: float, fmt: str = "{:,.4g}") -> None:
    table.add_row(label, fmt.format(mine), fmt.format(theirs), f"{mine / theirs:.3f}" if theirs else "-")


def part_two(console: Console) -> None:
    for name, ref in REFERENCE.items():
        result = kapla.schedule(name, "multinode", batch=64, **ref["options"])
        levels = level_totals(result)
        energy = result.energy
        memory = sum(v for k, v in energy.items() if k not in ("MAC", "NoC", "static"))
        table = Table(title=f"{name}: {ref['title']} - kapla vs nn_dataflow")
        for col in ("figure", "kapla", "nn_dataflow", "ratio"):
            table.add_column(col, justify="left" if col == "figure" else "right")

        row = functools.partial(_compare_row, table)
        row("energy (J)", result.energy_j, ref["energy"])
        row("  MAC (J)", energy.get("MAC", 0.0), ref["parts"]["MAC"])
        row("  memory (J)", memory, ref["parts"]["memory"])
        row("  NoC (J)", energy.get("NoC", 0.0), ref["parts"]["NoC"])
        row("  static (J)", energy.get("static", 0.0), ref["parts"]["static"])
        row("time (cycles)", result.time, ref["time"])
        for level, words in ref["accesses"].items():
            row(f"{level} accesses (words)", levels.get(level, 0.0), words)
        row("NoC (word-hops)", sum(lr.cost.noc_hops for lr in result.layers), ref["noc"])
        console.print(table)
        console.print(f"segments: {[list(s) for s in result.segments]}; pinned: {result.pinned}")


def sweep(console: Console) -> None:
    from kapla.workload.zoo import ZOO

    table = Table(title="every zoo network on every preset")
    for col in ("network", "arch", "batch", "mode", "energy mJ", "time (Mcycles)", "segments", "pinned", "s",
                "valid"):
        table.add_column(col, justify="left" if col in ("network", "arch", "mode") else "right")
    failures = 0
    for name in ZOO:
        for arch, batch in (("multinode", 64), ("multinode_4x4", 64), ("edge", 1)):
            for training in (False, True):
                t0 = time.perf_counter()
                r = kapla.schedule(name, arch, batch=batch, training=training)
                row = (name, arch, str(batch), "training" if training else "inference", f"{r.energy_j * 1e3:.3f}",
                       f"{r.time / 1e6:.3f}", str(len(r.segments)), "yes" if r.pinned else "no",
                       f"{time.perf_counter() - t0:.1f}", "yes" if r.valid else "NO")
                failures += not r.valid
                console.print("  ".join(row), highlight=False)
                table.add_row(*row)
    console.print(table)
    console.print(f"every schedule valid: {'yes' if not failures else f'NO ({failures} invalid)'}")


_SERVER = """
import json, os, sys, threading, time
import kapla


def processes():
    # every process's parent, from /proc
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    return parents


def descendants(root):
    parents, out, todo = processes(), [], [root]
    while todo:
        pid = todo.pop()
        kids = [p for p, parent in parents.items() if parent == pid]
        out += kids
        todo += kids
    return out


def peak_kib(pid):
    # the process's peak resident set (VmHWM), KiB; 0 once it is gone
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("VmHWM:")), 0)
    except OSError:
        return 0


def reset_peak(pid):
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


class Memory:
    # the peak resident set of this process and of every process it started (the worker pool's
    # forkserver and workers), each process's own peak summed: an upper bound of their peak together
    def __init__(self):
        self.me = os.getpid()
        for pid in [self.me] + descendants(self.me):
            reset_peak(pid)
        self.peaks, self.done = {}, threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True)
        self.thread.start()

    def sample(self):
        for pid in descendants(self.me):
            self.peaks[pid] = max(self.peaks.get(pid, 0), peak_kib(pid))

    def watch(self):
        while not self.done.wait(0.2):
            self.sample()

    def stop(self):
        self.sample()
        self.done.set()
        self.thread.join()
        return (peak_kib(self.me) + sum(self.peaks.values())) / 1024, len(self.peaks)


def network(name, batch, training):
    # NAME*N: N blocks of a zoo transformer (the scaling study); else a zoo name
    if "*" not in name:
        return name
    from kapla.workload.zoo.transformers import llama3_8b
    base, blocks = name.split("*")
    assert base == "llama3_8b_block", name
    return llama3_8b(batch, layers=int(blocks))


def costed_here(doc, net, arch, batch, training):
    # a schedule (another revision's) costed by this kapla's model: (energy, valid) or an error
    from kapla.api import resolve_network
    from kapla.arch import load_arch
    from kapla.scheduling.recost import recost

    r = recost(doc, resolve_network(network(net, batch, training), batch, training, None), load_arch(arch))
    return dict(energy=r.energy_j, valid=r.valid)


print("ready", flush=True)
warmed = set()
for line in sys.stdin:
    asked = json.loads(line)
    if isinstance(asked, dict):
        try:
            print(json.dumps(costed_here(asked["doc"], *asked["case"][:4])), flush=True)
        except (kapla.KaplaError, KeyError, ImportError) as exc:
            print(json.dumps(dict(error=f"{type(exc).__name__}: {exc}")), flush=True)
        continue
    net, arch, batch, training, solver, jobs = (asked + [1])[:6]
    if (solver, jobs) not in warmed:
        # every case is timed alike, in a process that has imported kapla and started its
        # worker server (as a sweep runs): the first case would otherwise pay for both
        warmed.add((solver, jobs))
        try:
            kapla.schedule("mlp_s", "edge", batch=1, solver=solver, jobs=jobs)
        except kapla.KaplaError:
            pass
    memory = Memory() if os.path.isdir("/proc") else None
    t = time.perf_counter()
    try:
        target = network(net, batch, training)
        r = kapla.schedule(target, arch, batch=batch, training=training, solver=solver, jobs=jobs)
        out = dict(energy=r.energy_j, time=r.time, valid=r.valid, layers=len(r.layers), doc=r.to_dict())
    except kapla.KaplaError as exc:
        out = dict(error=str(exc))
    out["seconds"] = time.perf_counter() - t
    if memory is not None:
        out["mib"], out["processes"] = memory.stop()
    print(json.dumps(out), flush=True)
"""


def _server(root: str, meta: str | None = None):
    """A process serving cases with the kapla at ``root``; ``meta``: a folder for that
    checkout's own package metadata (its plugins' entry points), where it is not the
    installed one."""
    import os
    import subprocess
    import sys

    path = [os.path.join(root, "src")]
    if meta is not None:
        path.insert(0, _own_metadata(root, meta))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    proc = subprocess.Popen([sys.executable, "-c", _SERVER], cwd=root, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _own_metadata(root: str, folder: str) -> str:
    """A distribution record of the kapla checked out at ``root``, with the plugin entry
    points its pyproject.toml declares, in ``folder`` (put first on the path, it stands
    in for the installed kapla's record, whose entry points name this tree's modules)."""
    import os
    import tomllib

    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    info = os.path.join(folder, "kapla-0+baseline.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(f"Metadata-Version: 2.1\nName: kapla\nVersion: {project.get('version', '0')}\n")
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        for group, points in project.get("entry-points", {}).items():
            f.write(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()) + "\n")
    return folder


def _ask(proc, case) -> dict:
    import json

    proc.stdin.write(json.dumps(case) + "\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def _costed_here(here, out: dict, case) -> tuple[float, str]:
    """The energy of a revision's schedule costed by this tree's model (``here``'s
    server), else its own (a schedule this tree cannot rebuild, or finds invalid),
    and the column's text."""
    again = _ask(here, {"doc": out["doc"], "case": case})
    if "error" in again:
        return out["energy"], f"- ({again['error'][:70]})"
    if not again["valid"]:
        return out["energy"], "- (invalid here)"
    return again["energy"], f"{again['energy'] * 1e3:.4f}"


def _jobs(text: str) -> int | None:
    return None if text == "default" else int(text)


def _mib(out: dict) -> str:
    return f"{out['mib']:,.0f}" if "mib" in out else "-"


def _secs(seconds: float) -> str:
    # hundredths below 10 s: the targets are 1 s and 3 s, and a tenth hides which side of them a run is
    return f"{seconds:.2f}" if seconds < 10 else f"{seconds:.1f}"


def against(console: Console, ref: str, nets: list[str], modes: list[str], archs: list[str], solver: str,
            jobs: int | None = 1) -> None:
    """Every case with this tree and with ``ref``, side by side in one run."""
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    here = str(Path(__file__).resolve().parents[1])
    peaks: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "baseline")
        subprocess.run(["git", "-C", here, "worktree", "add", "--detach", base, ref], check=True,
                       capture_output=True)
        old, new = _server(base, os.path.join(tmp, "meta")), _server(here)
        workers = "default workers" if jobs is None else f"{jobs} job{'s' * (jobs > 1)}"
        table = Table(title=f"{solver} here against {ref}, {workers}: energy, wall time and peak memory per network")
        for col in ("arch", "batch", "mode", "network", f"{ref} mJ", f"{ref} costed here mJ", "here mJ", "ratio",
                    f"{ref} s", "here s", f"{ref} MiB", "here MiB"):
            table.add_column(col, justify="left" if col in ("arch", "mode", "network") else "right")
        counts = {"same": 0, "lower": 0, "higher": 0, "failed": 0, "only here": 0}
        try:
            for arch in archs:
                batch = 64 if arch.startswith("multinode") else 1
                for mode in modes:
                    for net in nets:
                        case = (net, arch, batch, mode == "training", solver, jobs)
                        a, b = _ask(old, case), _ask(new, case)
                        if "unknown network" in a.get("error", ""):
                            # a network the revision's zoo lacks: the same layers, written as a network file
                            path = _network_file(net, tmp)
                            if path is not None:
                                a = _ask(old, (path,) + case[1:])
                        if "mib" in b:
                            peaks.append(b["mib"])
                        if "unknown network" in a.get("error", "") and "error" not in b and b.get("valid"):
                            # its layers are of kinds the revision cannot hold (matmuls, scalings): only timed here
                            counts["only here"] += 1
                            row = (arch, str(batch), mode, net, f"not in {ref}", "-", f"{b['energy'] * 1e3:.4f}", "-",
                                   "-", _secs(b['seconds']), "-", _mib(b))
                        elif "error" in a or "error" in b or not b.get("valid"):
                            counts["failed"] += 1
                            row = (arch, str(batch), mode, net, a.get("error", f"{a.get('energy', 0) * 1e3:.4f}"),
                                   "-", b.get("error", f"{b.get('energy', 0) * 1e3:.4f}"), "-", _secs(a['seconds']),
                                   _secs(b['seconds']), _mib(a), _mib(b))
                        else:
                            # the revision's schedule under this tree's cost model: the like-for-like figure
                            # where the model changed between them (else the revision's own)
                            theirs, costed = _costed_here(new, a, case)
                            ratio = b["energy"] / theirs
                            counts["same" if abs(ratio - 1) <= 1e-9 else "lower" if ratio < 1 else "higher"] += 1
                            row = (arch, str(batch), mode, net, f"{a['energy'] * 1e3:.4f}", costed,
                                   f"{b['energy'] * 1e3:.4f}", f"{ratio:.6f}", _secs(a['seconds']),
                                   _secs(b['seconds']), _mib(a), _mib(b))
                        console.print("  ".join(row), highlight=False)
                        table.add_row(*row)
        finally:
            for proc in (old, new):
                proc.stdin.close()
                proc.wait()
            subprocess.run(["git", "-C", here, "worktree", "remove", "--force", base], capture_output=True)
    console.print(table)
    only = f"; {counts['only here']} networks {ref} cannot hold, timed here only" if counts["only here"] else ""
    console.print(f"energy here against {ref}: {counts['same']} the same, {counts['lower']} lower, "
                  f"{counts['higher']} higher, {counts['failed']} failed or invalid{only}")
    if peaks:
        console.print(f"peak memory here (this process and its workers, each one's peak resident set summed): "
                      f"at most {max(peaks):,.0f} MiB")


def _network_file(name: str, folder: str) -> str | None:
    """Zoo network ``name`` written as a network file in ``folder`` (None: the format cannot hold it)."""
    import os

    import yaml

    from kapla.errors import SpecError
    from kapla.workload.spec import network_spec
    from kapla.workload.zoo import get_network

    try:
        spec = network_spec(get_network(name, 1))
    except SpecError:
        return None
    path = os.path.join(folder, f"{name}.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(spec, f, sort_keys=False)
    return path


#: The scaling study's networks: the ResNets of one block design at five depths, and Llama-3-8B-style blocks.
SCALING = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "llama3_8b_block*1", "llama3_8b_block*2",
           "llama3_8b_block*4", "llama3_8b_block*8")


def scaling(console: Console, nets: list[str], modes: list[str], arch: str, jobs: int | None,
            plot: str | None = None) -> None:
    """Wall time against the number of layers, this tree only, one case at a time (plotted to ``plot``)."""
    from pathlib import Path

    here = str(Path(__file__).resolve().parents[1])
    batch = 64 if arch.startswith("multinode") else 1
    proc = _server(here)
    workers = "default workers" if jobs is None else f"{jobs} job{'s' * (jobs > 1)}"
    table = Table(title=f"scheduling time against depth: kapla on {arch}, batch {batch}, {workers}")
    for col in ("network", "mode", "layers", "s", "ms per layer", "s / first's s", "layers / first's",
                "peak MiB"):
        table.add_column(col, justify="left" if col in ("network", "mode") else "right")
    points: dict[tuple[str, str], list[tuple[int, float]]] = {}
    try:
        for mode in modes:
            first: dict[str, tuple[float, int]] = {}
            for net in nets:
                out = _ask(proc, (net, arch, batch, mode == "training", "kapla", jobs))
                if "error" in out:
                    row = (net, mode, "-", f"{out['seconds']:.1f}", "-", "-", "-", _mib(out))
                else:
                    family = net.split("*")[0].rstrip("0123456789")
                    points.setdefault((family, mode), []).append((out["layers"], out["seconds"]))
                    s0, n0 = first.setdefault(family, (out["seconds"], out["layers"]))
                    row = (net, mode, str(out["layers"]), f"{out['seconds']:.1f}",
                           f"{out['seconds'] / out['layers'] * 1e3:.0f}", f"{out['seconds'] / s0:.2f}",
                           f"{out['layers'] / n0:.2f}", _mib(out))
                console.print("  ".join(row), highlight=False)
                table.add_row(*row)
    finally:
        proc.stdin.close()
        proc.wait()
    console.print(table)
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for (family, mode), xy in points.items():
            xs, ys = zip(*xy, strict=True)
            ax.plot(xs, ys, marker="o", label=f"{family}, {mode}")
        ax.set_xlabel("layers")
        ax.set_ylabel("wall time (s)")
        ax.set_title(f"kapla on {arch}, batch {batch}, {workers}")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(plot, metadata={"Date": None} if plot.endswith(".svg") else None)
        console.print(f"plot: {plot}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nets", default=",".join(NETS))
    parser.add_argument("--modes", default="inference,training")
    parser.add_argument("--budget", type=float, default=60.0, help="exhaustive seconds per network")
    parser.add_argument("--compare", default="mlp_s,mlp_m,lstm_m",
                        help="small networks for the exhaustive comparison (part 1b)")
    parser.add_argument("--no-exhaustive", action="store_true")
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--sweep", action="store_true", help="only part 3: every zoo network on every preset")
    parser.add_argument("--baseline", metavar="REV", default=None,
                        help="only: this tree against git revision REV, every case side by side")
    parser.add_argument("--archs", default="multinode,edge,simba", help="hardware for --baseline")
    parser.add_argument("--solver", default="kapla", help="solver for --baseline")
    parser.add_argument("--jobs", default="1", help="worker processes for --baseline and --scaling: a number, or "
                        "'default' (kapla's default: one per CPU, at most 4)")
    parser.add_argument("--scaling", action="store_true",
                        help="only: wall time against depth (--nets, default ResNet-18 to -152 and 1-8 Llama blocks) "
                        "on --archs' first preset")
    parser.add_argument("--plot", metavar="FILE", default=None, help="--scaling: plot time against layers to FILE")
    args = parser.parse_args()
    console = Console(width=160)
    if args.baseline:
        from kapla.workload.zoo import ZOO

        nets = list(ZOO) if args.nets == ",".join(NETS) else args.nets.split(",")
        against(console, args.baseline, nets, args.modes.split(","), args.archs.split(","), args.solver,
                _jobs(args.jobs))
        return
    if args.scaling:
        nets = list(SCALING) if args.nets == ",".join(NETS) else args.nets.split(",")
        scaling(console, nets, args.modes.split(","), args.archs.split(",")[0], _jobs(args.jobs), args.plot)
        return
    if args.sweep:
        sweep(console)
        return
    part_one(console, args.nets.split(","), args.modes.split(","), args.budget, not args.no_exhaustive)
    if args.compare:
        part_one_b(console, args.compare.split(","), max(args.budget, 600.0))
    if not args.no_reference:
        part_two(console)


if __name__ == "__main__":
    main()
