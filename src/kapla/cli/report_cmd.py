"""``kapla report``: a self-contained HTML page of a JSON result."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kapla.cli.common import check_output, err_console
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
