"""``kapla solvers``: the registered solvers and their parts, one line each."""

from __future__ import annotations

import click

from kapla.solve.registry import INTRA, SOLVERS, STRATEGIES


@click.command("solvers")
def solvers_cmd() -> None:
    """List the solvers `kapla schedule --solver` accepts (one line each), then
    the network strategies and intra-layer solvers they pair, with the options
    each takes (`kapla schedule -O KEY=VALUE`)."""
    width = max(len(n) for n in list(SOLVERS) + list(STRATEGIES) + list(INTRA))
    for s in SOLVERS.values():
        click.echo(f"{s.name:<{width}}  {s.summary} [strategy {s.strategy}, intra-layer {s.intra}]")
    click.echo("")
    for kind, entries in (("strategy", STRATEGIES), ("intra", INTRA)):
        for e in entries.values():
            options = ", ".join(e.options) or "none"
            click.echo(f"{kind} {e.name:<{width}}  {e.summary} (options: {options})")
