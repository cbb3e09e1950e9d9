"""What every kapla command shares: error reporting and output helpers."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from kapla.errors import KaplaError
from kapla.report.plots import check_plot_target

# Off a terminal (a pipe, a log file) rich would assume 80 columns and cut the tables' cells.
PIPE_WIDTH = 120
console = Console(highlight=False, width=None if sys.stdout.isatty() else PIPE_WIDTH)
err_console = Console(stderr=True, highlight=False)

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


class KaplaGroup(click.Group):
    """A click group that turns user errors into one line and a non-zero exit:
    kapla's own and click's usage errors alike."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as exc:
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            _error_line(exc.format_message() + hint)
            sys.exit(EXIT_USER_ERROR)
        except click.ClickException as exc:
            _error_line(exc.format_message())
            sys.exit(exc.exit_code)
        except click.Abort:
            err_console.print("interrupted", markup=False)
            sys.exit(EXIT_INTERRUPTED)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KaplaError as exc:
            _error_line(str(exc))
            sys.exit(EXIT_USER_ERROR)
        except KeyboardInterrupt:
            err_console.print("interrupted", markup=False)
            sys.exit(EXIT_INTERRUPTED)


def _error_line(message: str) -> None:
    err_console.print("error: " + " ".join(message.split()), markup=False, soft_wrap=True)


LOG_EVERY_SECONDS = 30.0  # off a terminal: a progress line at most this often (none for shorter runs)


@contextmanager
def progress_bar(title: str, name: str) -> Iterator[Callable[[str, int, int], None]]:
    """Progress as the ``progress(stage, done, total)`` callback the solvers
    call: a bar with the time left on a terminal's stderr; elsewhere (a log
    file, CI) a line every ``LOG_EVERY_SECONDS`` with the same figures."""
    columns = (TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())
    tty = err_console.is_terminal
    with Progress(*columns, console=err_console, transient=True, disable=not tty) as bar:
        task = bar.add_task(title, total=None)
        log = _ProgressLog(name)

        def progress(stage: str, done: int, total: int) -> None:
            bar.update(task, description=f"{name}: {stage}", completed=done, total=total)
            if not tty:
                log.update(stage, done, total)

        yield progress


class _ProgressLog:
    """Progress lines for a run that is not on a terminal, with a time-left estimate per stage."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.start = self.last = time.monotonic()
        self.stage = ""
        self.stage_start = self.start
        self.stage_done = 0

    def update(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if stage != self.stage:
            self.stage, self.stage_start, self.stage_done = stage, now, done
        if now - self.last < LOG_EVERY_SECONDS:
            return
        self.last = now
        line = f"{self.name}: {stage} {done}/{total}, {_clock(now - self.start)} elapsed"
        rate = (done - self.stage_done) / max(now - self.stage_start, 1e-9)
        if rate > 0 and total >= done:
            line += f", about {_clock((total - done) / rate)} left in this stage"
        err_console.print(line, markup=False, highlight=False, soft_wrap=True)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def json_option(f):
    """``--json [FILE]``: one JSON object to stdout, or to FILE."""
    return click.option("--json", "json_out", is_flag=False, flag_value="-", default=None, metavar="[FILE]",
                        help="Print one JSON object instead of tables (to FILE if given).")(f)


def output_options(f):
    """What a solving command writes besides its tables: ``--report FILE``, ``--store FILE`` and ``--json``."""
    f = json_option(f)
    f = click.option("--store", "store_path", default=None, metavar="FILE",
                     help="Keep finished layer solves in FILE: a run stopped at any point and started again with "
                          "the same FILE resumes where it was.")(f)
    return click.option("--report", "report_path", default=None, metavar="FILE",
                        help="Also write a self-contained HTML report (charts, timeline, placement) to FILE.")(f)


def check_output(target: str | None, what: str) -> None:
    """Fail before any work if ``target`` (a file to write; None or "-" for none) cannot be written there."""
    if target in (None, "-"):
        return
    path = Path(target)
    if not path.resolve().parent.is_dir():
        raise KaplaError(f"{what} {target}: its directory does not exist")
    if path.is_dir():
        raise KaplaError(f"{what} {target}: is a directory")


def check_plot_output(target: str | None) -> None:
    """Fail before any work if ``--plot`` cannot be written at ``target`` (None: no plot) or is not a PNG/SVG."""
    check_output(target, "--plot")
    if target is not None:
        check_plot_target(target)


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
