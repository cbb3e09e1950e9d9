"""``kapla stats``: tables, JSON, and one-line errors with a non-zero exit."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kapla.cli.main import app

EXAMPLE = Path(__file__).parents[2] / "examples" / "tiny_cnn.yaml"


def run(*args):
    return CliRunner().invoke(app, list(args))


def test_table_output_has_totals():
    result = run("stats", "alexnet")
    assert result.exit_code == 0, result.output
    assert "layers 19 (CONV 10, FC 3)" in result.output
    assert "fmaps  largest 17.7 MiB, total 95.4 MiB" in result.output


def test_json_to_stdout_and_file(tmp_path):
    result = run("stats", "mlp_m", "--batch", "64", "--json")
    data = json.loads(result.stdout)
    assert data["layers"] == 4 and data["fmap_total_bytes"] == 225280 and data["weight_total_bytes"] == 2823000
    target = tmp_path / "out.json"
    result = run("stats", str(EXAMPLE), "--json", str(target), "--batch", "2")
    assert result.exit_code == 0
    data = json.loads(target.read_text())
    assert data["batch"] == 2 and data["layers"] == 7 and data["macs"] > 0


def test_training_and_word_bits():
    inf = json.loads(run("stats", "alexnet", "--json").stdout)
    train = json.loads(run("stats", "alexnet", "--training", "--json").stdout)
    assert train["training"] and train["layers"] > inf["layers"]
    assert 2.8 < train["macs"] / inf["macs"] <= 3.0
    wide = json.loads(run("stats", "alexnet", "--word-bits", "32", "--json").stdout)
    assert wide["weight_total_bytes"] == 2 * inf["weight_total_bytes"]


@pytest.mark.parametrize("content, message", [
    ("name: n\ninputs: {x: [3, 8, 8]}\nlayers:\n  - {name: a, type: conv, inputs: b, out_channels: 4, kernel: 1}\n"
     "  - {name: b, type: conv, inputs: a, out_channels: 3, kernel: 1}\n", "cycle between layers"),
    ("name: n\ninputs: {x: [3, 8, 8]}\nlayers:\n  - {name: a, type: warp, inputs: x}\n", "unknown layer type 'warp'"),
    ("name: n\ninputs: {x: [3, 8, 8]}\nlayers:\n  - {name: a, type: conv, inputs: x, out_channels: 4, kernel: 1}\n"
     "  - {name: e, type: eltwise, inputs: [a, x]}\n", "input 'x' is 3x8x8 but 'a' is 4x8x8"),
    ("name: n\ninputs: {x: [3, 8, 8]\n", "malformed file"),
])
def test_bad_input_exits_non_zero_with_one_line(tmp_path, content, message):
    path = tmp_path / "net.yaml"
    path.write_text(content)
    result = run("stats", str(path))
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


def test_installed_command_reports_errors_without_traceback():
    proc = subprocess.run([sys.executable, "-m", "kapla.cli.main", "stats", "no_such_net"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: unknown network 'no_such_net'")
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_onnx_models_unsupported_op_and_garbage(tmp_path):
    from tests.workload.test_onnx_import import Model

    m = Model()
    x = m.input("x", 1, 4)
    h = m.node("Relu", "r", [x])
    path = m.save(tmp_path, m.node("Einsum", "mix", [h, h], equation="ij,ij->i"))
    result = run("stats", str(path))
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "node 'mix' (op Einsum) is not supported" in lines[0]
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not a model" * 20)
    result = run("stats", str(garbage))
    assert result.exit_code == 2 and result.output.startswith("error: ") and len(result.output.splitlines()) == 1


def test_onnx_model_stats_and_batch_override(tmp_path):
    from tests.workload.test_onnx_import import cnn_model

    path = cnn_model(tmp_path, batch=2)
    data = json.loads(run("stats", str(path), "--batch", "5", "--json").stdout)
    assert data["batch"] == 5 and data["macs"] > 0


def test_a_transformer_model_by_sequence_length_with_its_op_classes(tmp_path):
    from tests.workload.onnx_transformers import bert_layer

    path = bert_layer(tmp_path, hidden=64, heads=4, ffn=128)
    data = json.loads(run("stats", str(path), "--seq", "16", "--batch", "2", "--json").stdout)
    classes = {c["op_class"]: c for c in data["by_class"]}
    assert classes["attention"]["macs"] == 2 * 2 * 4 * 16 * 16 * 16 and classes["attention"]["weight_bytes"] == 0
    assert classes["projection"]["weight_bytes"] == 2 * (4 * 64 * 64 + 2 * 64 * 128)
    assert classes["softmax"]["macs"] == 0 and classes["softmax"]["ops"] == 2 * 5 * 4 * 16 * 16
    assert classes["norm"]["layers"] == 2 and classes["activation"]["ops"] == 2 * 5 * 16 * 128
    assert sum(c["macs"] for c in data["by_class"]) == data["macs"] and data["matmul_layers"] == 6 + 2
    table = run("stats", str(path), "--seq", "16")
    assert table.exit_code == 0 and "by op class" in table.output and "softmax" in table.output
    missing = run("stats", str(path))
    assert missing.exit_code == 2 and len(missing.output.splitlines()) == 1 and "--seq" in missing.output
    zoo = run("stats", "alexnet", "--seq", "16")
    assert zoo.exit_code == 2 and "sequence length" in zoo.output and len(zoo.output.splitlines()) == 1
