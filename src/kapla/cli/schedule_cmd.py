"""``kapla schedule``: find a dataflow schedule for a network and report its cost."""

from __future__ import annotations

import sys

import click
import yaml
from rich.table import Table

from kapla.api import schedule
from kapla.arch import load_arch
from kapla.cli.common import (
    EXIT_INTERRUPTED,
    check_output,
    check_plot_output,
    console,
    emit_json,
    err_console,
    output_options,
    progress_bar,
)
from kapla.cli.report_cmd import write_report
from kapla.dataflow.listing import format_scheme
from kapla.errors import KaplaError
from kapla.model.objective import OBJECTIVES
from kapla.report.plots import plot_schedule
from kapla.scheduling.registry import solver_names
from kapla.workload.load import load_network


@click.command("schedule")
@click.argument("net", default="alexnet")
@click.option("--arch", "arch_name", default="multinode", show_default=True, metavar="NAME|FILE",
              help="Hardware preset (see `kapla arch list`) or a hardware file.")
@click.option("--batch", type=click.IntRange(min=1), default=None,
              help="Batch size (overrides a file's or model's; zoo default 64).")
@click.option("--seq", type=click.IntRange(min=1), default=None,
              help="Sequence length binding an ONNX model's symbolic dims (transformers).")
@click.option("--training", is_flag=True, help="Schedule the training DAG (forward + backward layers).")
@click.option("--solver", type=click.Choice(sorted(solver_names())), default="kapla", show_default=True,
              help="A registered solver (`kapla solvers` lists them): kapla: pruned inter-layer search + KAPLA "
                   "intra-layer solver; exhaustive: every inter-layer scheme, exhaustive intra-layer search "
                   "(slow; see --budget).")
@click.option("--option", "-O", "solver_options", multiple=True, metavar="KEY=VALUE",
              help="An option of the solver's parts, e.g. -O refine=40 (see `kapla solvers`).")
@click.option("--objective", type=click.Choice(OBJECTIVES), default="energy", show_default=True)
@click.option("--top-k", type=click.IntRange(min=1), default=4, show_default=True,
              help="Segment chains KAPLA's dynamic program keeps and solves.")
@click.option("--pipelining/--no-pipelining", default=True, show_default=True,
              help="Let layers run together in segments (where the hardware allows).")
@click.option("--sharing/--no-sharing", default=True, show_default=True,
              help="Let nodes share buffered data (where the hardware allows).")
@click.option("--budget", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Give up the exhaustive search after this long.")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes solving layers in parallel (default: one per CPU, at most 4).")
@click.option("--directives/--no-directives", default=False, show_default=True,
              help="Print each layer's directive listing after the summary.")
@click.option("--plot", "plot_path", default=None, metavar="FILE",
              help="Draw each layer's energy, stacked by component, to FILE (.png or .svg; needs kapla[plot]).")
@output_options
def schedule_cmd(net: str, arch_name: str, batch: int | None, seq: int | None,
                 training: bool, solver: str, objective: str,
                 solver_options: tuple[str, ...], top_k: int, pipelining: bool, sharing: bool,
                 budget: float | None, jobs: int | None, directives: bool, plot_path: str | None,
                 report_path: str | None,
                 store_path: str | None,
                 json_out: str | None) -> None:
    """Schedule NET (a zoo name, a network file or an ONNX model) on an accelerator.

    Finds the segments (layers that run together, pipelined, with on-chip
    forwarding), where each layer runs and every layer's dataflow. Prints the
    totals (energy by component, time, validity), the segments, a per-layer
    table and a legend of the terms, then, with --directives, every layer's
    directive listing; --json writes the same as one JSON object.
    """
    check_output(json_out, "--json")
    check_output(report_path, "--report")
    check_plot_output(plot_path)
    network = load_network(net, batch=batch, training=training, seq=seq)
    arch = load_arch(arch_name)
    with progress_bar(f"scheduling {network.name}", network.name) as progress:
        result = schedule(network, arch, solver=solver, solver_options=parse_options(solver_options),
                          objective=objective, top_k=top_k, pipelining=pipelining, buffer_sharing=sharing,
                          time_budget=budget, jobs=jobs, progress=progress, store=store_path)
    if report_path or plot_path or json_out:
        doc = result.to_dict()  # once for every output (it formats every layer's directives)
        if report_path is not None:
            write_report(doc, report_path)
        if plot_path is not None:
            plot_schedule(doc, plot_path)
            err_console.print(f"wrote {plot_path}")
        if json_out is not None:
            emit_json(doc, json_out)
    if json_out != "-":
        _print_summary(result, arch)
        _print_segments(result)
        _print_layers(result, arch)
        _print_classes(result)
        console.print(LEGEND, markup=False, highlight=False, soft_wrap=True)
        if directives:
            for lr in result.layers:
                console.print(format_scheme(lr.scheme), markup=False, highlight=False)
    if result.stopped is not None and result.stopped.by == "interrupt":
        sys.exit(EXIT_INTERRUPTED)


LEGEND = """\
terms: a segment's layers run together (layout spatial: each slot on its own block of nodes, pipelined;
temporal: one after another on the whole array, fmaps kept on chip); batch groups: the batch split into
pieces that flow through the segment (ALLO); nodes: rows x columns @ top-left node ("folded": a stripe
that many rows high and columns long, zig-zagging across the array from that node); PE util: MACs / (PEs
of the region x cycles). Directives (--directives): tensor{T}(...) the block of T a level holds, shr=N a
block shared by N nodes, stack(..., repl=...) spatial copies, update(...) a loop; ITCN: the array bus
between the node buffer (GBUF) and the PEs' registers (REGF); NoC: hops between nodes."""


def _print_summary(result, arch) -> None:
    mode = "training" if result.training else "inference"
    console.print(f"{result.network} on {result.arch}: {mode}, batch {result.batch}, solver {result.solver}, "
                  f"objective {result.objective}", markup=False, soft_wrap=True)
    parts = "  ".join(f"{k} {v * 1e3:.3f}" for k, v in result.energy.items())
    console.print(f"energy {result.energy_j * 1e3:.3f} mJ ({parts} mJ)", markup=False, soft_wrap=True)
    console.print(f"time {result.time:,.0f} cycles ({result.time / arch.frequency_hz * 1e3:.3f} ms at "
                  f"{arch.clock_mhz:g} MHz); solver {result.solver_seconds:.2f} s; "
                  f"{'valid' if result.valid else 'INVALID'}", markup=False)
    if result.pinned:
        console.print(f"weights pinned on chip (loaded once before the runs: "
                      f"{result.pinned_load_j * 1e3:.3f} mJ, not included)", markup=False)
    counts = result.extra.get("inter_layer_schemes")
    if counts and any(counts.values()):
        console.print("inter-layer schemes: " + ", ".join(f"{v:,} {k}" for k, v in counts.items()), markup=False)
    rounds = result.extra.get("atomic")
    if rounds:
        groups = rounds["batch_groups"]
        batched = (f" (the batch in {groups['groups']} groups of {groups['samples']} samples, one after the other)"
                   if groups["groups"] > 1 else "")
        console.print(f"{rounds['atoms']:,} atoms in {rounds['rounds']:,} rounds{batched}; throughput "
                      f"{rounds['throughput']:,.1f} samples/s; PE utilisation {rounds['utilization']:.0%} (compute "
                      f"alone); NoC overhead {rounds['noc_overhead']:.0%}; on-chip reuse {rounds['reuse_ratio']:.0%}",
                      markup=False, soft_wrap=True)
    if result.store is not None:
        console.print(f"layer store {result.store.path}: {result.store.reused:,} layer solves reused, "
                      f"{result.store.solved:,} solved and recorded", soft_wrap=True, markup=False)
    if result.stopped is not None:
        console.print(f"INCOMPLETE: {result.stopped.reason}", markup=False, soft_wrap=True)


def _print_layers(result, arch) -> None:
    table = Table(title="layers")
    for col in ("layer", "segment", "nodes", "energy (mJ)", "time (cycles)", "PE util", "DRAM words", "valid"):
        table.add_column(col, justify="left" if col in ("layer", "nodes") else "right")
    segment_of = {name: i for i, seg in enumerate(result.segments) for name in seg}
    for lr in result.layers:
        dram = sum(lr.cost.accesses.get(arch.levels[-1].name, {}).values())
        table.add_row(lr.name, str(segment_of[lr.name]), lr.region_text,
                      f"{lr.cost.total_energy * 1e3:.3f}", f"{lr.cost.time:,.0f}", f"{lr.pe_utilisation:.0%}",
                      f"{dram:,.0f}", "yes" if lr.cost.valid else "NO")
    console.print(table)


def _print_classes(result) -> None:
    """One line: the layers' energy by op class (projection, attention, softmax, norm, conv, ...), largest first."""
    energy: dict[str, float] = {}
    for lr in result.layers:
        name = lr.scheme.layer.op_class
        energy[name] = energy.get(name, 0.0) + lr.cost.total_energy
    total = sum(energy.values()) or 1.0
    parts = ", ".join(f"{name} {joules * 1e3:.3f} mJ ({joules / total:.1%})"
                      for name, joules in sorted(energy.items(), key=lambda kv: -kv[1]))
    console.print(f"by op class: {parts}", markup=False, highlight=False, soft_wrap=True)


def parse_options(items: tuple[str, ...]) -> dict[str, object]:
    """``KEY=VALUE`` strings as options; values are read as YAML scalars (numbers, booleans)."""
    out: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise KaplaError(f"--option {item!r}: expected KEY=VALUE")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            out[key.strip()] = value
    return out


def _print_segments(result) -> None:
    if not result.segment_details:  # a round-model schedule runs atoms, not segments
        return
    table = Table(title="segments")
    for col in ("#", "layers", "layout", "batch groups", "energy (mJ)", "time (cycles)"):
        table.add_column(col, justify="left" if col in ("layers", "layout") else "right")
    for i, seg in enumerate(result.segment_details):
        slots = " | ".join(" ".join(slot) for slot in seg.slots)
        table.add_row(str(i), slots, seg.layout, str(seg.groups), f"{seg.energy_j * 1e3:.3f}",
                      f"{seg.time_cycles:,.0f}")
    console.print(table)
