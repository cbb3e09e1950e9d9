"""``kapla dataflows``: a network under every dataflow of Interstellar's taxonomy."""

from __future__ import annotations

import click
from rich.table import Table

from kapla.cli.common import console
from kapla.cli.explore_cmd import run_sweep, sweep_options
from kapla.explore.dataflows import dataflows, paper_name
from kapla.explore.explore import Exploration
from kapla.explore.sweep import OK


@click.command("dataflows")
@click.argument("net", default="alexnet")
@click.option("--arch", "arch_name", default="interstellar", show_default=True, metavar="NAME|FILE",
              help="Hardware preset (see `kapla arch list`) or a hardware file.")
@click.option("--replication/--no-replication", default=True, show_default=True,
              help="Let rows or columns a loop leaves idle run another loop (U|V+repl).")
@sweep_options
def dataflows_cmd(net: str, arch_name: str, replication: bool, batch: int | None, seq: int | None, training: bool,
                  objective: str, solver: str, solver_options: tuple[str, ...], executor: str,
                  ray_address: str | None, jobs: int | None, store_path: str | None, plot_path: str | None,
                  report_path: str | None, json_out: str | None) -> None:
    """Schedule NET under every dataflow of Interstellar's taxonomy, best first.

    A dataflow is the pair of loops unrolled over the PE array's rows and
    columns (U|V: C|K, FY|Y, X|Y...), every pair of the network's loops of
    bound above 1 (21 for a CONV network, 3 for an MLP); the blocking and loop
    order of each layer are optimised by the solver. Prints each dataflow's
    energy, time and PE utilisation, best first; --json writes the sweep's
    points (vary.dataflow is the spec's spelling, S and R for FY and FX).
    """
    result = run_sweep(net, arch_name, None, batch, seq, training, objective, solver, solver_options, executor,
                       ray_address, jobs, store_path, plot_path, report_path, json_out,
                       sweep=lambda network, arch, **kw: dataflows(network, arch, replication=replication, **kw))
    if result is not None:
        _print(result)


def _print(result: Exploration) -> None:
    mode = "training" if result.training else "inference"
    table = Table(title=f"{result.network} on {result.arch} ({mode}, batch {result.batch}, {result.solver}): "
                        f"dataflows, best {result.objective} first")
    for col in ("dataflow", "status", "energy mJ", "x best", "time cycles", "PE utilisation", "s"):
        table.add_column(col, justify="left" if col in ("dataflow", "status") else "right")
    best = result.rows[result.best] if result.best is not None else None
    key = {"energy": "energy_j", "latency": "time_cycles"}.get(result.objective)
    order = sorted(range(len(result.rows)), key=lambda i: (
        result.rows[i]["status"] != OK,
        (result.rows[i]["energy_j"] * result.rows[i]["time_cycles"] if key is None else result.rows[i][key])
        if result.rows[i]["status"] == OK else 0, i))
    for i in order:
        row = result.rows[i]
        name = paper_name(str(row["vary"]["dataflow"]))
        if row["status"] == OK and best is not None:
            table.add_row(name, row["status"], f"{row['energy_j'] * 1e3:.4f}",
                          f"{row['energy_j'] / best['energy_j']:.3f}", f"{row['time_cycles']:,.0f}",
                          f"{row['utilisation']:.1%}", f"{row['seconds']:.1f}")
        else:
            table.add_row(name, row["status"], "-", "-", "-", "-", f"{row['seconds']:.1f}")
    console.print(table)
    finished = [r for r in result.rows if r["status"] == OK]
    if best is not None and finished:
        spread = max(r["energy_j"] for r in finished) / best["energy_j"]
        within = sum(r["energy_j"] <= best["energy_j"] * 1.1 for r in finished)
        console.print(f"{len(finished)} of {len(result.rows)} dataflows scheduled; {within} within 10 % of the best "
                      f"({paper_name(str(best['vary']['dataflow']))}); the worst is {spread:.2f}x the best; "
                      f"PE utilisation {min(r['utilisation'] for r in finished):.0%} to "
                      f"{max(r['utilisation'] for r in finished):.0%}", markup=False)
    for row in result.rows:
        if row["status"] != OK and row.get("message"):
            console.print(f"{paper_name(str(row['vary']['dataflow']))}: {row['status']}: {row['message']}",
                          markup=False)
