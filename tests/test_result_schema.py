"""The published JSON Schema: the package's copy is the one in docs/, it is a
valid schema, and it rejects what it should (the CLI tests validate every
document they make kapla write, see conftest.py)."""

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from kapla.cli.main import app
from kapla.schemas import result_schema
from tests.conftest import CHECKED

DOCS = Path(__file__).parents[1] / "docs" / "result-schema.json"


def test_the_published_schema_is_the_shipped_one_and_valid():
    assert json.loads(DOCS.read_text()) == result_schema()
    jsonschema.Draft202012Validator.check_schema(result_schema())


def test_every_kind_of_output_is_checked(tmp_path):
    before = len(CHECKED)
    runner = CliRunner()
    for args in (["schedule", "mlp_s", "--arch", "edge", "--batch", "1", "--jobs", "1", "--json", "-"],
                 ["compare", "mlp_s", "--arch", "edge", "--batch", "1", "--jobs", "1", "--json", "-"],
                 ["stats", "mlp_s", "--json"], ["arch", "show", "edge", "--json"],
                 ["explore", "mlp_s", "--arch", "edge", "--batch", "1", "--jobs", "1", "--vary",
                  "REGF.capacity=2B,64B", "--json", "-"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    formats = [doc.get("format", "hardware") for doc in CHECKED[before:]]
    assert formats == ["kapla-schedule", "kapla-comparison", "kapla-stats", "hardware", "kapla-exploration"]
    assert [p["status"] for p in CHECKED[before + 4]["points"]] == ["infeasible", "ok"]
    schedule = CHECKED[before]
    assert isinstance(schedule["time_cycles"], int) and schedule["units"]["noc_hops"] == "word-hops"
    assert all(0 < layer["pe_utilisation"] <= 1 and layer["macs"] > 0 for layer in schedule["layers"])


@pytest.mark.parametrize("mangle", [
    lambda d: d.update(time_cycles=1.5),  # cycles are whole
    lambda d: d.pop("units"),
    lambda d: d["layers"][0].update(pe_utilisation=1.5),
    lambda d: d.update(objective="speed"),
])
def test_the_schema_rejects_a_broken_result(mangle):
    result = CliRunner().invoke(app, ["schedule", "mlp_s", "--arch", "edge", "--batch", "1", "--jobs", "1",
                                      "--json", "-"])
    doc = json.loads(result.stdout)
    mangle(doc)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, result_schema())


def test_a_round_model_schedule_is_described_and_checked():
    """An atomic schedule's round-model figures, its batch in groups of samples included:
    the schema holds them, and rejects a group count of 0 or a reuse ratio above 1."""
    before = len(CHECKED)
    result = CliRunner().invoke(app, ["schedule", str(Path(__file__).parents[1] / "examples" / "tiny_cnn.yaml"),
                                      "--arch", "atomic", "--batch", "4", "--solver", "atomic", "--jobs", "1",
                                      "-O", "max_atoms=40", "--json", "-"])
    assert result.exit_code == 0, result.output
    doc = CHECKED[before]
    assert doc["atomic"]["batch_groups"] == {"groups": 2, "samples": 2}
    jsonschema.validate(doc, result_schema())
    for mangle in (lambda d: d["atomic"]["batch_groups"].update(groups=0),
                   lambda d: d["atomic"].update(reuse_ratio=1.5), lambda d: d["atomic"].pop("timeline")):
        broken = json.loads(json.dumps(doc))
        mangle(broken)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, result_schema())
