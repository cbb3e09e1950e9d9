"""``kapla schedule``: find a dataflow schedule for a network and report its cost."""

from __future__ import annotations

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kapla.api import SOLVERS, make_solver
from kapla.arch import load_arch
from kapla.cli.common import console, emit_json, err_console, json_option
from kapla.solve.base import OBJECTIVES
from kapla.solve.layerwise import schedule_layerwise
from kapla.workload.load import load_network


@click.command("schedule")
@click.argument("net", default="alexnet")
@click.option("--arch", "arch_name", default="multinode", show_default=True, metavar="NAME|FILE",
              help="Hardware preset (see `kapla arch list`) or a hardware file.")
@click.option("--batch", type=click.IntRange(min=1), default=None,
              help="Batch size (overrides a file's or model's; zoo default 64).")
@click.option("--training", is_flag=True, help="Schedule the training DAG (forward + backward layers).")
@click.option("--solver", type=click.Choice(sorted(SOLVERS)), default="kapla", show_default=True)
@click.option("--objective", type=click.Choice(OBJECTIVES), default="energy", show_default=True)
@click.option("--directives/--no-directives", default=True, show_default=True,
              help="Print each layer's directive listing.")
@json_option
def schedule_cmd(net: str, arch_name: str, batch: int | None, training: bool, solver: str, objective: str,
                 directives: bool, json_out: str | None) -> None:
    """Schedule NET (a zoo name, a network file or an ONNX model) on an accelerator.

    Each layer is scheduled on the whole node array, one layer at a time.
    Prints the directives of every layer, the energy breakdown and the time;
    --json writes the same as one JSON object.
    """
    network = load_network(net, batch=batch, training=training)
    arch = load_arch(arch_name)
    columns = (TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True, disable=not err_console.is_terminal) as bar:
        task = bar.add_task(f"scheduling {network.name}", total=len(network))
        result = schedule_layerwise(network, arch, make_solver(solver), objective,
                                    progress=lambda name: bar.update(task, advance=1, description=name))
    if json_out is not None:
        emit_json(result.to_dict(), json_out)
        if json_out == "-":
            return
    if directives:
        for lr in result.layers:
            console.print(lr.to_dict()["directives"], markup=False, highlight=False)
    table = Table(title=f"{result.network} on {result.arch} ({'training' if result.training else 'inference'}, "
                        f"batch {result.batch}, solver {result.solver}, objective {result.objective})")
    for col in ("layer", "energy (mJ)", "time (cycles)", "DRAM words", "valid"):
        table.add_column(col, justify="left" if col == "layer" else "right")
    for lr in result.layers:
        dram = sum(lr.cost.accesses.get(arch.levels[-1].name, {}).values())
        table.add_row(lr.name, f"{lr.cost.total_energy * 1e3:.3f}", f"{lr.cost.time:,.0f}", f"{dram:,.0f}",
                      "yes" if lr.cost.valid else "NO")
    console.print(table)
    parts = "  ".join(f"{k} {v * 1e3:.3f}" for k, v in result.energy.items())
    console.print(f"energy {result.energy_j * 1e3:.3f} mJ ({parts} mJ)")
    console.print(f"time {result.time:,.0f} cycles ({result.time / arch.frequency_hz * 1e3:.3f} ms at "
                  f"{arch.clock_mhz:g} MHz); solver {result.solver_seconds:.2f} s; "
                  f"{'valid' if result.valid else 'INVALID'}")
