"""``kapla arch``: listing, showing and one-line errors."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kapla.arch import load_arch, parse_arch
from kapla.cli.main import app

runner = CliRunner()


def test_list():
    result = runner.invoke(app, ["arch", "list"])
    assert result.exit_code == 0
    assert result.stdout.split() == ["edge", "eyeriss", "multinode", "multinode_4x4"]


def test_show_preset():
    result = runner.invoke(app, ["arch", "show", "multinode"])
    assert result.exit_code == 0
    assert "multinode: 256 nodes (16x16), 16384 PEs (8x8 per GBUF)" in result.stdout
    assert "GBUF" in result.stdout and "32 KiB" in result.stdout


def test_show_json_loads_back():
    result = runner.invoke(app, ["arch", "show", "edge", "--json"])
    assert result.exit_code == 0
    assert parse_arch(json.loads(result.stdout)) == load_arch("edge")


def test_show_bad_file_exits_2(write_yaml, multinode_data):
    multinode_data["levels"][1]["capacity"] = -4
    path = write_yaml(multinode_data)
    result = runner.invoke(app, ["arch", "show", str(path)])
    assert result.exit_code == 2
    assert result.stderr == f"error: hardware file {path}: levels[1].capacity: must be positive (got -4)\n"
    assert "Traceback" not in result.output


def test_show_unknown_name_exits_2():
    result = runner.invoke(app, ["arch", "show", "tpu9000"])
    assert result.exit_code == 2 and result.stderr.startswith("error: unknown hardware 'tpu9000'")
