"""``kapla explore``: one network on every point of a grid of hardware variants."""

from __future__ import annotations

import functools

import click
from rich.table import Table

from kapla.arch import load_arch
from kapla.cli.common import check_output, check_plot_output, console, json_option, progress_bar
from kapla.cli.report_cmd import write_outputs
from kapla.cli.schedule_cmd import parse_options
from kapla.explore.executors import EXECUTORS
from kapla.explore.explore import Exploration, explore, label, plot, shown
from kapla.explore.grid import parse_vary
from kapla.explore.sweep import OK
from kapla.model.objective import OBJECTIVES
from kapla.workload.load import load_network


def sweep_options(f):
    """What every sweep command takes besides its grid: the workload, the solver, where points run, outputs."""
    for option in reversed([
        click.option("--batch", type=click.IntRange(min=1), default=None,
                     help="Batch size (overrides a file's or model's; zoo default 64)."),
        click.option("--seq", type=click.IntRange(min=1), default=None,
                     help="Sequence length binding an ONNX model's symbolic dims (transformers)."),
        click.option("--training", is_flag=True, help="Schedule the training DAG (forward + backward layers)."),
        click.option("--objective", type=click.Choice(OBJECTIVES), default="energy", show_default=True),
        click.option("--solver", default="kapla", show_default=True, help="A registered solver (`kapla solvers`)."),
        click.option("--option", "-O", "solver_options", multiple=True, metavar="KEY=VALUE",
                     help="An option of the solver's parts, e.g. -O refine=40."),
        click.option("--executor", type=click.Choice(EXECUTORS), default="local", show_default=True,
                     help="Where points run: local worker processes, or a Ray cluster (needs kapla[ray])."),
        click.option("--ray-address", default=None, metavar="ADDRESS",
                     help="The Ray cluster to run on (default: RAY_ADDRESS, else a local one with --jobs CPUs)."),
        click.option("--jobs", type=click.IntRange(min=1), default=None,
                     help="Points scheduled at once (default: one per CPU, at most 4)."),
        click.option("--store", "store_path", default=None, metavar="DIR",
                     help="Keep each finished point in DIR: a sweep stopped at any point and run again with the "
                          "same DIR skips every point it finished."),
        click.option("--plot", "plot_path", default=None, metavar="FILE",
                     help="Draw energy over the grid (a line, or a heatmap for two fields) and the Pareto front "
                          "to FILE (.png or .svg)."),
        click.option("--report", "report_path", default=None, metavar="FILE",
                     help="Also write a self-contained HTML report (the grid as a heatmap, the Pareto front, every "
                          "point) to FILE."),
        json_option,
    ]):
        f = option(f)
    return f


def run_sweep(net: str, arch_name: str, grid, batch: int | None, seq: int | None, training: bool,
              objective: str, solver: str, solver_options: tuple[str, ...], executor: str, ray_address: str | None,
              jobs: int | None, store_path: str | None, plot_path: str | None, report_path: str | None,
              json_out: str | None, sweep=None) -> Exploration | None:
    """Check the outputs, load NET and ARCH, run ``sweep(network, arch, **settings)`` with a
    progress bar (default :func:`~kapla.explore.explore.explore` over ``grid(arch)``), write
    the plot and the JSON; the result to print (None: the JSON went to stdout)."""
    check_output(json_out, "--json")
    check_output(report_path, "--report")
    check_plot_output(plot_path)
    arch = load_arch(arch_name)
    fields = grid(arch) if grid is not None else []
    network = load_network(net, batch=batch, training=training, seq=seq)
    with progress_bar(f"exploring {network.name}", network.name) as progress:
        def points(done: int, total: int) -> None:
            progress("points", done, total)

        run = sweep if sweep is not None else functools.partial(explore, vary=fields)
        result = run(network, arch, solver=solver, options=parse_options(solver_options), objective=objective,
                     jobs=jobs if jobs is not None else _default_jobs(), executor=executor, address=ray_address,
                     store=store_path, progress=points)
    return None if write_outputs(result, plot, plot_path, report_path, json_out) else result


@click.command("explore")
@click.argument("net", default="alexnet")
@click.option("--arch", "arch_name", default="interstellar", show_default=True, metavar="NAME|FILE",
              help="The base hardware (a preset or a file) whose fields are varied.")
@click.option("--vary", "vary", multiple=True, metavar="PATH=VALUES",
              help="A field and its values: REGF.capacity=16B,32B,64B; GBUF.capacity=32KiB..512KiB*2; "
                   "pe_array=8x8,16x16 (repeat for a grid).")
@sweep_options
def explore_cmd(net: str, arch_name: str, vary: tuple[str, ...], batch: int | None, seq: int | None,
                training: bool, objective: str, solver: str, solver_options: tuple[str, ...], executor: str,
                ray_address: str | None, jobs: int | None, store_path: str | None, plot_path: str | None,
                report_path: str | None, json_out: str | None) -> None:
    """Schedule NET on every point of a grid of hardware variants.

    Each --vary names a field of the base hardware (LEVEL.field, a top-level
    field, pe_array or node_array) and its values; the grid is every
    combination. Every point is a full schedule on its own hardware (energies
    follow sizes through the hardware's energy table unless it fixes them).
    Prints every point (a point whose hardware cannot run NET is infeasible),
    the best one and the Pareto front of energy against on-chip capacity;
    --json writes {"points": [...], "best": {...}, "pareto": [...]}.
    """
    result = run_sweep(net, arch_name, lambda arch: [parse_vary(text, arch) for text in vary], batch, seq,
                       training, objective, solver, solver_options, executor, ray_address, jobs, store_path,
                       plot_path, report_path, json_out)
    if result is not None:
        _print(result)


def _default_jobs() -> int:
    import os

    return max(1, min(os.cpu_count() or 1, 4))


def _print(result: Exploration) -> None:
    mode = "training" if result.training else "inference"
    table = Table(title=f"{result.network} on {result.arch} variants ({mode}, batch {result.batch}, "
                        f"{result.solver}, objective {result.objective}); * Pareto front")
    for f in result.fields:
        table.add_column(f.name, justify="right")
    for col in ("status", "energy mJ", "x best", "time cycles", "on-chip KiB", "s"):
        table.add_column(col, justify="left" if col == "status" else "right")
    best = result.rows[result.best] if result.best is not None else None
    front = set(result.pareto)
    for i, row in enumerate(result.rows):
        cells = [shown(result, row, f.name) for f in result.fields]
        if row["status"] == OK:
            assert best is not None
            mark = " *" if i in front else ""
            cells += [row["status"] + mark, f"{row['energy_j'] * 1e3:.4f}", f"{row['energy_j'] / best['energy_j']:.3f}",
                      f"{row['time_cycles']:,.0f}", f"{row['onchip_bytes'] / 1024:,.1f}", f"{row['seconds']:.1f}"]
        else:
            cells += [row["status"], "-", "-", "-", f"{row['onchip_bytes'] / 1024:,.1f}", f"{row['seconds']:.1f}"]
        table.add_row(*cells)
    console.print(table)
    if best is None:
        console.print("no point finished: every variant is infeasible or failed")
    else:
        console.print(f"best ({result.objective}): {label(best)}: {best['energy_j'] * 1e3:.4f} mJ, "
                      f"{best['time_cycles']:,.0f} cycles", markup=False)
        console.print("Pareto front (energy against on-chip capacity): "
                      + "; ".join(f"{label(result.rows[i])} ({result.rows[i]['energy_j'] * 1e3:.4f} mJ, "
                                  f"{result.rows[i]['onchip_bytes'] / 1024:,.1f} KiB)" for i in result.pareto),
                      markup=False)
    stored = sum(1 for r in result.rows if r.get("stored"))
    if stored:
        console.print(f"{stored} of {len(result.rows)} points taken from the store", markup=False)
    for row in result.rows:
        if row["status"] != OK and row.get("message"):
            console.print(f"{label(row)}: {row['status']}: {row['message']}", markup=False)
