"""The top-level command: its commands load lazily, and its help says what each does."""

import importlib
import subprocess
import sys

from click.testing import CliRunner

from kapla.cli.main import COMMANDS, app


def test_each_commands_line_in_the_help_is_its_own():
    # the group's help reads COMMANDS without loading the commands: the line
    # kept there must be what the command itself says
    for name, (module, attr, text) in COMMANDS.items():
        command = getattr(importlib.import_module(module), attr)
        assert command.name == name
        assert command.get_short_help_str(10_000) == text


def test_help_lists_every_command_and_runs_one():
    runner = CliRunner()
    out = runner.invoke(app, ["--help"])
    assert out.exit_code == 0
    for name in COMMANDS:
        assert f"  {name} " in out.output
    listed = runner.invoke(app, ["arch", "list"])
    assert listed.exit_code == 0 and "multinode" in listed.output.split()


def test_help_loads_neither_the_solvers_nor_numpy():
    code = ("import sys; from kapla.cli.main import app\n"
            "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('numpy', 'kapla.api', 'kapla.search', 'networkx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_an_unknown_command_is_one_error_line():
    out = subprocess.run([sys.executable, "-m", "kapla.cli.main", "no-such-command"], capture_output=True, text=True)
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "no-such-command" in lines[0]


def test_lazy_packages_export_what_they_list():
    import kapla.arch
    import kapla.workload

    for package in (kapla.arch, kapla.workload):
        assert sorted(package.__all__) == sorted(package._WHERE)
        for name in package.__all__:
            assert getattr(package, name) is not None
