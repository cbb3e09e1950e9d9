"""``kapla import-schedule``: the tables, the JSON document and one-line errors
(kapla's evaluation stands in as nn_dataflow's figures x FACTORS, see conftest)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kapla.cli.common import PIPE_WIDTH
from kapla.cli.main import app
from tests.conftest import CHECKED
from tests.interop.nn_dataflow.conftest import ALEXNET, FACTORS, MLP_S, reference_data

runner = CliRunner()
RATIOS = [f"{FACTORS[k]:.3f}" for k in ("energy", "time", "DRAM", "GBUF", "ITCN", "REGF", "NoC")]


def run(*args):
    return runner.invoke(app, ["import-schedule", *map(str, args)])


def table_rows(text, tool):
    """The cells of every row of ``tool`` (kapla, nn_dataflow or ratio) in the tables, keyed by group label."""
    rows, label = [], None
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) != 9:
            continue
        if cells[1] == "kapla":
            label = cells[0]
        if cells[1] == tool:
            rows.append((label, cells[2:]))
    return rows


def test_the_tables_set_both_tools_side_by_side_per_layer_and_in_total(fake_evaluation):
    result = run(MLP_S)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"run {MLP_S}: network mlp_s, batch 64, 3 layers in 1 segment; nn_dataflow's search took 1,232.8 s" in out
    assert "hardware multinode_nndataflow as in nn_dataflow_mlp_s_tangram.json: 16x16 nodes of 8x8 PEs" in out
    assert "layer pipelining (at most 5 layers)" in out
    ratios = table_rows(out, "ratio")
    assert [label for label, _ in ratios] == ["fc1", "fc2", "fc3", "mlp_s"]
    for label, cells in ratios:
        # fc2 neither reads nor writes DRAM: no ratio
        assert cells == (RATIOS if label != "fc2" else [*RATIOS[:2], "-", *RATIOS[3:]]), label
    theirs = dict(table_rows(out, "nn_dataflow"))
    assert theirs["fc1"] == ["0.08805", "2,112", "50,688", "517,376", "1.321e7", "1.004e8", "753,568"]
    assert theirs["mlp_s"] == ["0.1215", "2,688", "51,456", "1.163e6", "1.947e7", "1.33e8", "1.686e6"]
    assert dict(table_rows(out, "kapla"))["fc1"][:2] == ["0.1321", "1,056"]
    assert "segment 0" in out and "stage 2.0" in out  # fc3: the segment's third stage
    assert "Layers of one segment run at the same time" in out


def test_a_layer_by_layer_run_fits_the_pipe_width_and_says_nothing_of_pipelining(fake_evaluation):
    result = run(ALEXNET)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    table_lines = [line for line in lines if "│" in line or "━" in line or "─" in line]
    assert table_lines and max(len(line) for line in table_lines) <= PIPE_WIDTH
    assert len(table_rows(result.stdout, "ratio")) == 19 + 1
    assert "19 layers in 19 segments" in result.stdout and "layer by layer" in result.stdout
    assert "stage" not in result.stdout


def test_json_to_a_file_writes_the_checked_document_and_still_prints_the_tables(fake_evaluation, tmp_path):
    before = len(CHECKED)
    out = tmp_path / "cmp.json"
    result = run(MLP_S, "--json", out)
    assert result.exit_code == 0, result.output
    # (the stderr console wraps a long path)
    assert "per layer" in result.stdout and f"wrote {out}" in result.stderr.replace("\n", "")
    doc = json.loads(out.read_text())
    assert CHECKED[before:] == [doc]  # validated against the schema by tests/conftest.py
    assert doc["format"] == "kapla-import" and set(doc["kapla"]) == set(doc["nn_dataflow"])
    assert doc["kapla"]["layers"]["fc2"]["noc_hops"] == FACTORS["NoC"] * doc["nn_dataflow"]["layers"]["fc2"]["noc_hops"]


def test_json_to_stdout_prints_only_the_document(fake_evaluation):
    result = run(MLP_S, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["nn_dataflow"]["time_cycles"] == 2688 and doc["kapla"]["time_cycles"] == 1344


def test_an_unwritable_json_target_fails_before_reading(fake_evaluation, tmp_path):
    result = run(MLP_S, "--json", tmp_path / "no" / "cmp.json")
    assert result.exit_code == 2 and "its directory does not exist" in result.stderr
    assert fake_evaluation == []


def _mutated(mutate):
    data = reference_data()
    mutate(data)
    return json.dumps(data)


# (file content, what the one error line says after "FILE: ")
BAD_FILES = [
    ('{"a": 1}', "not nn_dataflow's output: it has none of net, resource, cost, schedules"),
    ('{"format": "kapla-schedule", "version": 1, "layers": []}', "a kapla-schedule document written by kapla"),
    ("[]", "not nn_dataflow's output: the top level is a list, not an object"),
    ("{", "not JSON (line 1, column 2:"),
    (b"\x80abc", "not a text file (byte 0x80 at offset 0 is not UTF-8)"),
    ("  \n", "empty file"),
    (_mutated(lambda d: d.pop("cost")), "cost: missing required field"),
    (_mutated(lambda d: d["schedules"]["fc1"][0]["access"].pop()),
     "schedules.fc1.access: expected 4 rows: DRAM, GBUF, ITCN, REGF (got 3)"),
    (_mutated(lambda d: d["schedules"]["fc2"][0].update(time=-1)), "schedules.fc2.time: must not be negative"),
    (_mutated(lambda d: d["schedules"]["fc1"][0]["tvals"].append([1, 1, 1])),
     "schedules.fc1.tvals: expected 3 rows: DRAM, GBUF, REGF (got 4)"),
    (_mutated(lambda d: d["schedules"]["fc1"][0]["part"][1].pop()),
     "schedules.fc1.part.pdims: expected 4 pairs: OUTP, OFMP, BATP, INPP (got 3)"),
    (_mutated(lambda d: d.update(batch="64")), "batch: must be an integer (got '64')"),
    (_mutated(lambda d: d.update(net="resnet18")), "net: unknown nn_dataflow network 'resnet18' (kapla knows "
                                                   "alex_net, googlenet, lstm_gnmt, lstm_phoneme, lstm_showtell, "
                                                   "mlp_l, mlp_m, mlp_s, resnet152, resnet50, vgg19_net, vgg_net, "
                                                   "zfnet)"),
    (_mutated(lambda d: d["schedules"].update(fc9=d["schedules"].pop("fc3"))),
     "schedules.fc9: no layer 'fc9' in nn_dataflow's mlp_s"),
    (_mutated(lambda d: d["resource"].update(array_bus_width=float("inf"))),
     "resource.array_bus_width: the run had no array-bus limit (Infinity)"),
]


@pytest.mark.parametrize(("content", "message"), BAD_FILES, ids=[m for _, m in BAD_FILES])
def test_a_bad_file_is_one_error_line(fake_evaluation, write_json, content, message):
    path = write_json(content)
    result = run(path)
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert result.stderr.splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith(f"error: {path}: ") and message in result.stderr
    assert "Traceback" not in result.output and result.stdout == ""
    assert fake_evaluation == []


def test_a_missing_file_or_directory_is_one_error_line(tmp_path):
    for target, message in ((tmp_path / "none.json", "no such file"),
                            (tmp_path, "is a directory, not nn_dataflow's JSON output")):
        result = run(target)
        assert result.exit_code == 2
        assert result.stderr.strip() == f"error: {target}: {message}"


def test_the_command_is_listed():
    result = runner.invoke(app, ["--help"])
    assert "import-schedule" in result.stdout


def test_kapla_objections_are_listed_under_the_layer_table():
    from kapla.interop.nn_dataflow import import_schedule

    result = run(MLP_S, "--json", "-")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    noted = {name: layer["notes"] for name, layer in doc["kapla"]["layers"].items() if "notes" in layer}
    assert noted == {name: list(f.notes) for name, f in import_schedule(MLP_S).kapla.layers.items() if f.notes}
    assert noted  # nn_dataflow's MLP-S keeps pinned weights in the layers' own blocks
    out = run(MLP_S).stdout
    assert "* kapla's own check objects to these schemes (each layer is costed all the same):" in out
    for name in noted:
        assert f"  {name}: " in out and f"{name} *" in out


def test_a_layer_recorded_off_its_allocated_nodes_is_one_error_line(write_json):
    data = reference_data()
    data["schedules"]["fc2"][1][1][0][1] = [0, 15]  # fc2's output region moved to another origin
    path = write_json(json.dumps(data))
    result = run(path)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith(f"error: {path}: schedules.fc2: its output layout's region")
