"""Entry point of the ``kapla`` command."""

from __future__ import annotations

import importlib
from typing import Any

import click
from click.utils import make_default_short_help

from kapla import __version__
from kapla.cli.common import KaplaGroup

# name: (module, name of the command in it, the first sentence of its help). A command's
# module (and what it needs: the solvers, numpy, the report) is loaded only
# when that command runs, so that ``kapla --help`` answers at once;
# tests/cli/test_main.py checks each line against the command's own help.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "arch": ("kapla.cli.arch_cmd", "arch_cmd",
             "Inspect hardware descriptions: shipped presets or your own YAML/JSON files."),
    "compare": ("kapla.cli.compare_cmd", "compare_cmd", "Run several solvers on NET and compare their schedules."),
    "dataflows": ("kapla.cli.dataflows_cmd", "dataflows_cmd",
                  "Schedule NET under every dataflow of Interstellar's taxonomy, best first."),
    "explore": ("kapla.cli.explore_cmd", "explore_cmd", "Schedule NET on every point of a grid of hardware variants."),
    "import-schedule": ("kapla.cli.import_cmd", "import_cmd",
                        "Evaluate the schedule in FILE, nn_dataflow's JSON output, with kapla."),
    "recost": ("kapla.cli.recost_cmd", "recost_cmd",
               "Cost the schedule in RESULT (`kapla schedule --json`) again with this kapla's cost model."),
    "report": ("kapla.cli.report_cmd", "report_cmd",
               "Write an HTML report of a `kapla schedule`, `compare`, `explore` or `dataflows` JSON result."),
    "schedule": ("kapla.cli.schedule_cmd", "schedule_cmd",
                 "Schedule NET (a zoo name, a network file or an ONNX model) on an accelerator."),
    "solvers": ("kapla.cli.solvers_cmd", "solvers_cmd",
                "List the solvers `kapla schedule --solver` accepts (one line each), then the network schedulers"
                " and layer solvers they pair, with the options each takes (`kapla schedule -O KEY=VALUE`)."),
    "stats": ("kapla.cli.stats_cmd", "stats_cmd", "Print per-layer MACs and tensor sizes of NET and its totals."),
}


class LazyGroup(KaplaGroup):
    """The top-level group: its commands are imported when one is run (or asked
    for its own help), their one-line help for the group's help read from
    :data:`COMMANDS`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command

    def format_commands(self, ctx: click.Context, formatter: Any) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        with formatter.section("Commands"):
            formatter.write_dl([(name, make_default_short_help(COMMANDS[name][2], limit)) for name in names])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kapla")
def app() -> None:
    """kapla: find energy- and time-efficient dataflow schedules of neural
    networks on spatial accelerators."""


def main() -> None:
    app()


if __name__ == "__main__":
    main()
