"""``kapla solvers``: the registered solvers and their parts, one line each."""

from __future__ import annotations

import click

from kapla.scheduling.registry import registry


@click.command("solvers")
def solvers_cmd() -> None:
    """List the solvers `kapla schedule --solver` accepts (one line each), then
    the network schedulers and layer solvers they pair, with the options each
    takes (`kapla schedule -O KEY=VALUE`)."""
    reg = registry()
    solvers, networks, layers = reg.solvers, reg.network_schedulers, reg.layer_solvers
    width = max(len(n) for n in list(solvers) + list(networks) + list(layers))
    for s in solvers.values():
        click.echo(f"{s.name:<{width}}  {s.summary} [network {s.network}, layer {s.layer}]")
    click.echo("")
    for kind, entries in (("network", networks), ("layer", layers)):
        for e in entries.values():
            options = ", ".join(e.options) or "none"
            click.echo(f"{kind} {e.name:<{width}}  {e.summary} (options: {options})")
