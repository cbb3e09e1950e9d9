"""``kapla compare``: several solvers on one network and one accelerator, side by side."""

from __future__ import annotations

import click
from rich.table import Table

from kapla.arch import load_arch
from kapla.cli.common import (
    check_output,
    check_plot_output,
    console,
    output_options,
    progress_bar,
)
from kapla.cli.report_cmd import write_outputs
from kapla.cli.schedule_cmd import parse_options
from kapla.errors import KaplaError
from kapla.explore.compare import OK, Comparison, check_solvers, compare, plot
from kapla.model.objective import OBJECTIVES
from kapla.workload.load import load_network


@click.command("compare")
@click.argument("net", default="alexnet")
@click.option("--arch", "arch_name", default="multinode", show_default=True, metavar="NAME|FILE",
              help="Hardware preset (see `kapla arch list`) or a hardware file.")
@click.option("--solvers", default="kapla,layerwise,random", show_default=True, metavar="NAME,...",
              help="Registered solvers to run (`kapla solvers` lists them), e.g. exhaustive,random,kapla.")
@click.option("--batch", type=click.IntRange(min=1), default=None,
              help="Batch size (overrides a file's or model's; zoo default 64).")
@click.option("--seq", type=click.IntRange(min=1), default=None,
              help="Sequence length binding an ONNX model's symbolic dims (transformers).")
@click.option("--training", is_flag=True, help="Schedule the training DAG (forward + backward layers).")
@click.option("--objective", type=click.Choice(OBJECTIVES), default="energy", show_default=True)
@click.option("--budget", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Seconds each solver that takes a budget may run (exhaustive, random); one that runs out "
                   "is reported as such.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the solvers that sample (random).")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes solving layers in parallel (default: one per CPU, at most 4).")
@click.option("--option", "-O", "solver_options", multiple=True, metavar="SOLVER.KEY=VALUE",
              help="An option of one solver, e.g. -O random.p=0.85 (see `kapla solvers`).")
@click.option("--plot", "plot_path", default=None, metavar="FILE",
              help="Draw the energies, normalised and stacked by component, to FILE (.png or .svg).")
@output_options
def compare_cmd(net: str, arch_name: str, solvers: str, batch: int | None, seq: int | None,
                training: bool, objective: str,
                budget: float | None, seed: int, jobs: int | None, solver_options: tuple[str, ...],
                plot_path: str | None, report_path: str | None, store_path: str | None,
                json_out: str | None) -> None:
    """Run several solvers on NET and compare their schedules.

    Prints each solver's status, energy and time (normalised to the
    exhaustive optimum when it finished, else to the best), the energy by
    component, and the solver seconds with ratios; --json writes
    {"results": {SOLVER: {...}}}, --plot the paper's bar chart.
    """
    names = check_solvers([s.strip() for s in solvers.split(",") if s.strip()])
    options: dict[str, dict[str, object]] = {}
    for key, value in parse_options(solver_options).items():
        solver, dot, option = key.partition(".")
        if not dot or not option:
            raise KaplaError(f"--option {key}: expected SOLVER.KEY=VALUE, e.g. random.p=0.85")
        options.setdefault(solver, {})[option] = value
    check_output(json_out, "--json")
    check_plot_output(plot_path)
    check_output(report_path, "--report")
    network = load_network(net, batch=batch, training=training, seq=seq)
    arch = load_arch(arch_name)
    with progress_bar(f"comparing on {network.name}", network.name) as progress:
        result = compare(network, arch, names, objective=objective, budget=budget, seed=seed, jobs=jobs,
                         options=options, progress=progress, store=store_path)
    if not write_outputs(result, plot, plot_path, report_path, json_out):
        _print(result)


def _print(result: Comparison) -> None:
    ref = result.reference
    title = (f"{result.network} on {result.arch} ({'training' if result.training else 'inference'}, "
             f"batch {result.batch}, objective {result.objective})")
    if ref is not None:
        title += f"; ratios (x) to {ref.solver}"
    table = Table(title=title)
    for col in ("solver", "status", "energy mJ", "x", "time cycles", "x", "solver s", "x"):
        table.add_column(col, justify="left" if col in ("solver", "status") else "right")
    for run in result.runs:
        r = run.result
        if run.status != OK or r is None or ref is None or ref.result is None:
            table.add_row(run.solver, run.status, "-", "-", "-", "-", f"{run.seconds:.2f}", "-")
            continue
        table.add_row(run.solver, run.status, f"{r.energy_j * 1e3:.3f}", f"{r.energy_j / ref.result.energy_j:.3f}",
                      f"{r.time:,.0f}", f"{r.time / ref.result.time:.3f}", f"{run.seconds:.2f}",
                      f"{run.seconds / ref.seconds:.3g}" if ref.seconds > 0 else "-")
    console.print(table)
    done = [run for run in result.runs if run.status == OK and run.result is not None]
    if done:
        parts = list(done[0].result.energy) if done[0].result else []
        breakdown = Table(title="energy by component (mJ)")
        breakdown.add_column("solver")
        for part in parts:
            breakdown.add_column(part, justify="right")
        for run in done:
            assert run.result is not None
            breakdown.add_row(run.solver, *(f"{run.result.energy.get(p, 0.0) * 1e3:.3f}" for p in parts))
        console.print(breakdown)
    for run in result.runs:
        if run.message:
            console.print(f"{run.solver}: {run.message}", markup=False)
