"""kapla against nn_dataflow on nn_dataflow's own reference runs (issue 11).

    python benchmarks/nn_dataflow.py [RUN.json ...] [--solvers kapla,exhaustive]

For each output of nn_dataflow given (by default the references in
tests/interop/nn_dataflow/data; any run of nn_dataflow_search.py's
``--json`` of a network kapla rebuilds, docs/nn_dataflow.md says how to
make them):

1. nn_dataflow's own schedule evaluated by kapla under ``multinode_nndataflow``
   (``kapla import-schedule``), totals beside nn_dataflow's;
2. what each counting convention is worth: nn_dataflow's AlexNet schedule
   costed with kapla's counting, then switching nn_dataflow's on one by one;
3. kapla's own schedule of the same network, options and batch on
   ``multinode_nndataflow`` (found by KAPLA and by the exhaustive search) and
   on ``multinode`` (KAPLA), beside nn_dataflow's energy and search time.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import kapla
from kapla.arch.loader import load_preset
from kapla.errors import KaplaError
from kapla.interop.nn_dataflow import import_schedule
from kapla.interop.nn_dataflow.evaluate import kapla_figures
from kapla.interop.nn_dataflow.hardware import arch_from_run

DATA = Path(__file__).resolve().parents[1] / "tests" / "interop" / "nn_dataflow" / "data"
CASES = {
    "nn_dataflow_alexnet_per_layer.json": dict(pipelining=False, buffer_sharing=False),
    "nn_dataflow_mlp_s_tangram.json": dict(),
    "nn_dataflow_mlp_m_tangram.json": dict(),
    "nn_dataflow_mlp_l_tangram.json": dict(),
    "nn_dataflow_lstm_showtell_tangram.json": dict(),
}
#: kapla's own schedules: by default KAPLA and the exhaustive search (nn_dataflow's own search is
#: exhaustive) under nn_dataflow's counting, and KAPLA under kapla's
CONVENTIONS = [
    ("kapla's (multinode)", {}),
    ("+ every node fetches its own DRAM copy", {"dram_reads": "per_node"}),
    ("+ partial sums through DRAM", {"dram_reads": "per_node", "partial_sums": "through_dram"}),
    ("+ GBUF counted on its PE side",
     {"dram_reads": "per_node", "partial_sums": "through_dram", "gbuf_side": "pe_side"}),
    # what fits a PE, not what moves: the same words, but nn_dataflow's passes become valid
    ("+ REGF holding one output's window (multinode_nndataflow)",
     {"dram_reads": "per_node", "partial_sums": "through_dram", "gbuf_side": "pe_side", "regf_holds": "window"}),
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", help="nn_dataflow JSON outputs (default: the shared references)")
    parser.add_argument("--solvers", default="kapla,exhaustive",
                        help="kapla's solvers for its own schedules under nn_dataflow's counting")
    args = parser.parse_args(argv)
    paths = [Path(p) for p in args.runs] or [DATA / name for name in CASES]
    runs = [("multinode_nndataflow", solver) for solver in args.solvers.split(",")] + [("multinode", "kapla")]
    # the run's options (buffer sharing, inter-layer pipelining) come with its hardware (arch_from_run)
    try:
        imported = {path.name: import_schedule(path) for path in paths}
    except KaplaError as exc:
        raise SystemExit(f"error: {exc}") from None
    print("## 1. nn_dataflow's schedule evaluated by kapla (multinode_nndataflow)\n")
    print("| run | figure | kapla | nn_dataflow | ratio |\n|---|---|---|---|---|")
    for res in imported.values():
        ours, theirs = res.kapla.total, res.nn_dataflow.total
        rows = [("energy (J)", ours.energy_j, theirs.energy_j), ("time (cycles)", ours.time_cycles, theirs.time_cycles)]
        rows += [(f"{lvl} (words)", ours.accesses[lvl], theirs.accesses[lvl]) for lvl in theirs.accesses]
        rows.append(("NoC (word-hops)", ours.noc_hops, theirs.noc_hops))
        for label, a, b in rows:
            print(f"| {res.run.net} | {label} | {a:.4g} | {b:.4g} | {a / b:.3f} |")
    alexnet = imported.get("nn_dataflow_alexnet_per_layer.json")
    if alexnet is not None:
        conventions(alexnet)
    own(imported, runs)


def conventions(alexnet) -> None:
    print("\n## 2. What each convention is worth (nn_dataflow's AlexNet schedule)\n")
    run, net = alexnet.run, alexnet.network
    base = load_preset("multinode")
    print("| counting | energy (mJ) | time (Mcycles) | DRAM (M words) | GBUF (M words) | layers kapla rejects |\n"
          "|---|---|---|---|---|---|")
    for label, counting in CONVENTIONS:
        figures = kapla_figures(run, net, arch_from_run(run, base.replace(counting=counting)))
        t = figures.total
        rejected = sum(1 for f in figures.layers.values() if f.notes)
        print(f"| {label} | {t.energy_j * 1e3:.1f} | {t.time_cycles / 1e6:.2f} | {t.accesses['DRAM'] / 1e6:.1f} "
              f"| {t.accesses['GBUF'] / 1e6:.0f} | {rejected} of {len(figures.layers)} |")
    print(f"| nn_dataflow's own figures | {run.total_cost * 1e3:.1f} | {run.total_time / 1e6:.2f} "
          f"| {run.total_accesses[0] / 1e6:.1f} | {run.total_accesses[1] / 1e6:.0f} | |")


def own(imported: dict, runs: list[tuple[str, str]]) -> None:
    print("\n## 3. kapla's own schedule beside nn_dataflow's\n")
    print("| run | hardware | kapla's solver | kapla energy (J) | nn_dataflow energy (J) | ratio | kapla search (s) "
          "| nn_dataflow search (s) |\n|---|---|---|---|---|---|---|---|")
    for name, res in imported.items():
        options = CASES.get(name, {})
        net = res.network
        for preset, solver in runs:
            arch = arch_from_run(res.run, load_preset(preset))
            start = time.perf_counter()
            result = kapla.schedule(net, arch, batch=res.run.batch, solver=solver, jobs=1, **options)
            seconds = time.perf_counter() - start
            theirs = res.run.total_cost
            print(f"| {res.run.net} | {preset} | {solver} | {result.energy_j:.4g} | {theirs:.4g} "
                  f"| {result.energy_j / theirs:.3f} | {seconds:.1f} | {res.run.elapsed:.0f} |")


if __name__ == "__main__":
    main()
