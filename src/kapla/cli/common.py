"""What every kapla command shares: error reporting and output helpers."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from kapla.errors import KaplaError

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


class KaplaGroup(click.Group):
    """A click group that turns user errors into one line and a non-zero exit."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KaplaError as exc:
            err_console.print(f"error: {exc}", markup=False, soft_wrap=True)
            sys.exit(EXIT_USER_ERROR)
        except KeyboardInterrupt:
            err_console.print("interrupted", markup=False)
            sys.exit(EXIT_INTERRUPTED)


def json_option(f):
    """``--json [FILE]``: one JSON object to stdout, or to FILE."""
    return click.option("--json", "json_out", is_flag=False, flag_value="-", default=None, metavar="[FILE]",
                        help="Print one JSON object instead of tables (to FILE if given).")(f)


def emit_json(data: Any, target: str) -> None:
    text = json.dumps(data, indent=2, sort_keys=False)
    if target == "-":
        click.echo(text)
        return
    try:
        Path(target).write_text(text + "\n")
    except OSError as exc:
        raise KaplaError(f"cannot write JSON to {target}: {exc.strerror}") from None
    err_console.print(f"wrote {target}")
