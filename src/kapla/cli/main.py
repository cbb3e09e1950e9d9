"""Entry point of the ``kapla`` command."""

from __future__ import annotations

import click

from kapla import __version__
from kapla.cli.arch_cmd import arch_cmd
from kapla.cli.common import KaplaGroup
from kapla.cli.compare_cmd import compare_cmd
from kapla.cli.import_cmd import import_cmd
from kapla.cli.report_cmd import report_cmd
from kapla.cli.schedule_cmd import schedule_cmd
from kapla.cli.solvers_cmd import solvers_cmd
from kapla.cli.stats_cmd import stats_cmd


@click.group(cls=KaplaGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kapla")
def app() -> None:
    """kapla: find energy- and time-efficient dataflow schedules of neural
    networks on spatial accelerators."""


app.add_command(stats_cmd)
app.add_command(arch_cmd)
app.add_command(schedule_cmd)
app.add_command(solvers_cmd)
app.add_command(compare_cmd)
app.add_command(report_cmd)
app.add_command(import_cmd)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
