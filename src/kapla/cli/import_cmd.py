"""``kapla import-schedule``: evaluate nn_dataflow's schedule with kapla, both tools' figures side by side."""

from __future__ import annotations

import click
from rich.table import Table

from kapla.arch import format_bytes
from kapla.arch.spec import ArchSpec
from kapla.cli.common import check_output, console, emit_json, json_option
from kapla.interop.nn_dataflow import Figures, ImportResult, import_schedule
from kapla.interop.nn_dataflow.reader import LEVELS, LayerSchedule, NnDataflowRun


@click.command("import-schedule")
@click.argument("file", metavar="FILE.json")
@json_option
def import_cmd(file: str, json_out: str | None) -> None:
    """Evaluate the schedule in FILE, nn_dataflow's JSON output, with kapla.

    Reads the schedules (partitions, loop blocking, orders, buffer sharing,
    segments), the network by its nn_dataflow name and the hardware and unit
    energies the file records, evaluates every layer with kapla under
    nn_dataflow's conventions and prints both tools' energy, time, accesses
    per memory level and NoC traffic per layer and in total; --json writes
    them as one object ({"kapla": ..., "nn_dataflow": ...}).
    """
    check_output(json_out, "--json")
    result = import_schedule(file)
    if json_out is not None:
        emit_json(result.to_dict(), json_out)
    if json_out != "-":
        print_import(result)


def print_import(result: ImportResult) -> None:
    """The header, the per-layer table, the totals and a legend."""
    run = result.run
    for line in _header(result):
        console.print(line, markup=False, soft_wrap=True)
    console.print(_layer_table(result))
    for line in _objections(result):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    console.print(_total_table(result))
    console.print(LEGEND, markup=False, highlight=False, soft_wrap=True)
    if run.num_segments < len(run.schedules):
        console.print(PIPELINE_NOTE, markup=False, highlight=False, soft_wrap=True)


LEGEND = """\
ratio: kapla / nn_dataflow ("-" where nn_dataflow's figure is 0). Accesses in words: DRAM; GBUF, the node buffers;
ITCN, the array bus into the PEs; REGF, the PEs' registers. NoC: word-hops. A layer's time is its own run on its
nodes and its energy includes static energy over that time."""

PIPELINE_NOTE = """\
Layers of one segment run at the same time (stage s.t: spatial stage s of the segment, t-th on it in time), so the
total time (nn_dataflow: its segments' times) and the total static energy are not the layers' sums."""


def _header(result: ImportResult) -> list[str]:
    run, arch = result.run, result.arch
    searched = "not recorded" if run.elapsed is None else f"{run.elapsed:,.1f} s"
    segments = run.num_segments
    return [
        f"nn_dataflow {run.version} run {run.source}: network {run.net}, batch {run.batch}, "
        f"{len(run.schedules)} layers in {segments} segment{'s' if segments != 1 else ''}; "
        f"nn_dataflow's search took {searched}",
        f"hardware {arch.name}: {_describe(arch)}",
        f"nn_dataflow's options: {_options(run)}",
    ]


def _describe(arch: ArchSpec) -> str:
    (nr, nc), (pr, pc) = arch.node_array, arch.pe_array
    on = {True: "on", False: "off"}
    return (f"{nr}x{nc} nodes of {pr}x{pc} PEs, REGF {format_bytes(arch.capacity_bytes(0))}, "
            f"GBUF {format_bytes(arch.capacity_bytes(1))}, array bus {arch.array_bus.width_bits} bit, "
            f"DRAM {arch.dram_bandwidth:g} B/cycle over {len(arch.dram_channel_nodes)} channels, "
            f"{arch.clock_mhz:g} MHz; buffer sharing {on[arch.options.buffer_sharing]}, "
            f"layer pipelining {on[arch.options.spatial_layer_pipe]}")


def _options(run: NnDataflowRun) -> str:
    opt = run.options
    parts = [name for flag, name in ((opt.partition_hybrid, "output channels x fmap"), (opt.partition_batch, "batch"),
                                     (opt.partition_ifmaps, "input channels")) if flag]
    items = [f"node partitioning over {', '.join(parts) or 'fmap (CONV) or output channels (FC)'}",
             f"buffer sharing {'on' if opt.hw_gbuf_sharing else 'off'}"]
    if opt.partition_interlayer:
        most = opt.layer_pipeline_max_degree
        items.append("layer pipelining" + ("" if most == float("inf") else f" (at most {most:g} layers)"))
    else:
        items.append("layer by layer")
    if opt.hw_gbuf_save_writeback:
        items.append("save-writeback")
    items.append(("analytical" if opt.sw_solve_loopblocking else "exhaustive") + " loop blocking")
    return "; ".join(items)


# ------------------------------------------------------------------ tables

_COLUMNS = ("energy (mJ)", "time (cycles)", *LEVELS, "NoC hops")
_TOOLS = ("kapla", "nn_dataflow", "ratio")


def _values(f: Figures) -> list[float]:
    return [f.energy_j * 1e3, f.time_cycles, *(f.accesses[level] for level in LEVELS), f.noc_hops]


def _new_table(title: str, first: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(first, justify="left", no_wrap=True)
    table.add_column("", justify="left", no_wrap=True)
    for col in _COLUMNS:
        table.add_column(col, justify="right", no_wrap=True)
    return table


def _add_group(table: Table, labels: tuple[str, str, str], ours: Figures, theirs: Figures) -> None:
    """Three rows: kapla's figures, nn_dataflow's and their ratio."""
    a, b = _values(ours), _values(theirs)
    rows = ([_number(x) for x in a], [_number(x) for x in b], [_ratio(x, y) for x, y in zip(a, b, strict=True)])
    for i, (label, tool, cells) in enumerate(zip(labels, _TOOLS, rows, strict=True)):
        table.add_row(label, tool, *cells, end_section=i == 2,
                      style="dim" if tool == "nn_dataflow" else ("bold" if tool == "ratio" else None))


def _layer_table(result: ImportResult) -> Table:
    table = _new_table("per layer", "layer")
    theirs = result.nn_dataflow.layers
    for name, ours in result.kapla.layers.items():
        _add_group(table, _layer_labels(result.run, name, bool(ours.notes)), ours, theirs[name])
    return table


def _objections(result: ImportResult) -> list[str]:
    """kapla's objections to nn_dataflow's schemes (layers marked * above), each layer costed all the same."""
    noted = {name: f.notes for name, f in result.kapla.layers.items() if f.notes}
    if not noted:
        return []
    lines = ["* kapla's own check objects to these schemes (each layer is costed all the same):"]
    lines += [f"  {name}: {'; '.join(n.removeprefix(f'{name}: ') for n in notes)}" for name, notes in noted.items()]
    return lines


def _total_table(result: ImportResult) -> Table:
    table = _new_table("total", "network")
    _add_group(table, (result.run.net, "", ""), result.kapla.total, result.nn_dataflow.total)
    return table


def _layer_labels(run: NnDataflowRun, name: str, objected: bool) -> tuple[str, str, str]:
    """The layer (marked * if kapla objects to its scheme), its segment and, in a pipelined one, its stage."""
    sched: LayerSchedule = run.schedules[name]
    seg, stage, turn = sched.sched_seq
    shared = sum(1 for s in run.schedules.values() if s.segment == seg) > 1
    return name + (" *" if objected else ""), f"segment {seg}", f"stage {stage}.{turn}" if shared else ""


def _number(x: float) -> str:
    """Short and aligned: 0.09686, 806.4, 2,112, 1.321e7 (four significant digits, or whole below a million)."""
    if abs(x) >= 1e6:
        mantissa, exponent = f"{x:.3e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.4g}"


def _ratio(ours: float, theirs: float) -> str:
    return "-" if theirs == 0 else f"{ours / theirs:.3f}"

