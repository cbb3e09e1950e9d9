"""``kapla recost``: a saved schedule costed again by this kapla's cost model."""

from __future__ import annotations

import click

from kapla.api import recost
from kapla.arch import load_arch
from kapla.cli.common import check_output, console, emit_json, json_option
from kapla.cli.report_cmd import write_report
from kapla.cli.schedule_cmd import _print_layers, _print_segments, _print_summary
from kapla.errors import KaplaError
from kapla.scheduling.recost import read_document
from kapla.workload.zoo import canonical_name


@click.command("recost")
@click.argument("result")
@click.option("--arch", "arch_name", default=None, metavar="NAME|FILE",
              help="Hardware to cost it on (default: the one it was made for, by name); its node array "
                   "must hold the schedule's regions.")
@click.option("--net", "net_name", default=None, metavar="NAME|FILE",
              help="The network it schedules, where its name is no zoo name (a network file or ONNX model; "
                   "at the schedule's batch).")
@click.option("--report", "report_path", default=None, metavar="FILE",
              help="Also write a self-contained HTML report of the costed schedule to FILE.")
@json_option
def recost_cmd(result: str, arch_name: str | None, net_name: str | None, report_path: str | None,
               json_out: str | None) -> None:
    """Cost the schedule in RESULT (`kapla schedule --json`) again with this kapla's cost model.

    Every segment is rebuilt as the schedule placed it (layers, slots, regions,
    batch groups, pinning) with every layer's directives, then costed and
    checked by the evaluator: a schedule an older kapla made, compared with a
    new one under one model, or one schedule on other energy tables (--arch).
    Prints the totals beside the figure RESULT states, the segments and the
    layers; --json writes the costed schedule.
    """
    check_output(json_out, "--json")
    check_output(report_path, "--report")
    doc = read_document(result)
    arch = load_arch(arch_name if arch_name is not None else str(doc.get("arch")))
    if net_name is None and canonical_name(str(doc.get("network"))) is None:
        raise KaplaError(f"{result}: its network '{doc.get('network')}' is not a zoo network: give its file "
                         "with --net")
    again = recost(doc, net_name, arch)
    if json_out is not None or report_path is not None:
        costed = again.to_dict()
        if report_path is not None:
            write_report(costed, report_path)
        if json_out is not None:
            emit_json(costed, json_out)
    if json_out != "-":
        stated = doc.get("energy_j")
        if isinstance(stated, (int, float)) and stated > 0:
            console.print(f"{result}: {stated * 1e3:.3f} mJ as saved (on {doc.get('arch')}), "
                          f"{again.energy_j * 1e3:.3f} mJ costed here ({again.energy_j / stated:.4f}x)",
                          markup=False, soft_wrap=True)
        _print_summary(again, arch)
        _print_segments(again)
        _print_layers(again, arch)
