"""What every kapla command shares: error reporting and output helpers."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

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


@contextmanager
def progress_bar(title: str, name: str) -> Iterator[Callable[[str, int, int], None]]:
    """A progress bar on a terminal's stderr (nothing elsewhere), as the
    ``progress(stage, done, total)`` callback the solvers call."""
    columns = (TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True, disable=not err_console.is_terminal) as bar:
        task = bar.add_task(title, total=None)

        def progress(stage: str, done: int, total: int) -> None:
            bar.update(task, description=f"{name}: {stage}", completed=done, total=total)

        yield progress


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
