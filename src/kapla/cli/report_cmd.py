"""``kapla report``: a self-contained HTML page of a JSON result."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from kapla.cli.common import check_output, emit_json, err_console
from kapla.errors import KaplaError
from kapla.report import render


@click.command("report")
@click.argument("result", metavar="RESULT.json")
@click.option("-o", "--output", default=None, metavar="FILE",
              help="Where to write the page (default: RESULT.html beside the JSON).")
def report_cmd(result: str, output: str | None) -> None:
    """Write an HTML report of a `kapla schedule`, `compare`, `explore` or `dataflows` JSON result.

    The page holds the summary, the energy by component (stacked bars, in
    total and per layer), the timeline of segments, each segment's placement
    on the node array, per-layer utilisation and accesses, and the directives;
    for a comparison, the solvers side by side. It needs no network access.
    """
    source = Path(result)
    target = output if output is not None else str(source.with_suffix(".html"))
    check_output(target, "--output")
    try:
        doc = json.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise KaplaError(f"{result}: cannot read ({exc.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise KaplaError(f"{result}: not a JSON file ({str(exc).splitlines()[0]})") from None
    write_report(doc, target, result)


def write_report(doc: dict, target: str, source: str = "the result") -> None:
    try:
        page = render(doc)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise KaplaError(f"{source}: not a complete kapla result ({type(exc).__name__}: {exc})") from None
    except KaplaError as exc:
        raise KaplaError(f"{source}: {exc}") from None
    try:
        Path(target).write_text(page, encoding="utf-8")
    except OSError as exc:
        raise KaplaError(f"cannot write the report to {target}: {exc.strerror}") from None
    err_console.print(f"wrote {target}")


def write_outputs(result: Any, plot: Callable[[Any, str], None] | None, plot_path: str | None,
                  report_path: str | None, json_out: str | None) -> bool:
    """A solving command's files beside its tables: the plot, the HTML report and
    the JSON (to stdout for ``-``); True when the JSON went to stdout (no tables then)."""
    if plot_path is not None and plot is not None:
        plot(result, plot_path)
        err_console.print(f"wrote {plot_path}")
    if report_path is not None:
        write_report(result.to_dict(), report_path)
    if json_out is not None:
        emit_json(result.to_dict(), json_out)
        return json_out == "-"
    return False
