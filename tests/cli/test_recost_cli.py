"""`kapla recost`: a saved schedule costed again from the command line."""

from __future__ import annotations

import json

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
