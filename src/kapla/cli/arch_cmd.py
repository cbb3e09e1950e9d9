"""``kapla arch``: inspect hardware descriptions (presets or files)."""

from __future__ import annotations

import click

from kapla.arch.loader import list_presets
from kapla.cli.common import console, emit_json


@click.group("arch")
def arch_cmd() -> None:
    """Inspect hardware descriptions: shipped presets or your own YAML/JSON files."""


@arch_cmd.command("show")
@click.argument("target", metavar="NAME|FILE")
@click.option("--json", "as_json", is_flag=True, help="Print the spec as JSON (loadable again).")
def show(target: str, as_json: bool) -> None:
    """Print the resolved hardware description of a preset or a .yaml/.yml/.json file."""
    from kapla.arch import describe_arch, load_arch  # the spec's models: not needed to list the presets

    spec = load_arch(target)
    if as_json:
        emit_json(spec.to_dict(), "-")
    else:
        # markup off: the listing contains brackets rich would take for tags.
        console.print(describe_arch(spec), markup=False, soft_wrap=True)


@arch_cmd.command("list")
def list_() -> None:
    """List the hardware presets shipped with kapla."""
    for name in list_presets():
        click.echo(name)
