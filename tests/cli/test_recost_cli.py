"""`kapla recost`: a saved schedule costed again from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kapla.cli.main import app


def test_kapla_recost_prints_both_figures_and_writes_json(tmp_path):
    runner = CliRunner()
    saved_path, out = tmp_path / "s.json", tmp_path / "again.json"
    assert runner.invoke(app, ["schedule", "mlp_m", "--arch", "multinode_4x4", "--jobs", "1",
                               "--json", str(saved_path)]).exit_code == 0
    run = runner.invoke(app, ["recost", str(saved_path), "--json", str(out)])
    assert run.exit_code == 0, run.output
    stated = json.loads(saved_path.read_text())["energy_j"]
    assert f"{stated * 1e3:.3f} mJ as saved" in run.output and "(1.0000x)" in run.output
    assert json.loads(out.read_text())["energy_j"] == pytest.approx(stated, rel=1e-12)
    bad = runner.invoke(app, ["recost", str(tmp_path / "missing.json")])
    assert bad.exit_code != 0 and bad.output.startswith("error:") and "cannot read" in bad.output


def test_a_schedule_of_a_network_file_is_costed_with_net_and_asks_for_it_without(tmp_path):
    runner = CliRunner()
    network = Path(__file__).resolve().parents[2] / "examples" / "small_cnn.yaml"
    saved_path = tmp_path / "s.json"
    assert runner.invoke(app, ["schedule", str(network), "--arch", "edge", "--batch", "1", "--jobs", "1",
                               "--json", str(saved_path)]).exit_code == 0
    asked = runner.invoke(app, ["recost", str(saved_path)])
    assert asked.exit_code != 0 and asked.output.startswith("error:") and "--net" in asked.output
    run = runner.invoke(app, ["recost", str(saved_path), "--net", str(network)])
    assert run.exit_code == 0 and "(1.0000x)" in run.output
