"""``kapla schedule`` and the Python API example of the README."""

import json
import re
from pathlib import Path

from click.testing import CliRunner

from kapla.cli.main import app

README = Path(__file__).parents[2] / "README.md"


def run(*args):
    return CliRunner().invoke(app, list(args))


def test_schedule_json_has_the_promised_fields(tmp_path):
    target = tmp_path / "out.json"
    result = run("schedule", "mlp_s", "--batch", "8", "--json", str(target))
    assert result.exit_code == 0, result.output
    data = json.loads(target.read_text())
    for key in ("energy_j", "time_cycles", "breakdown", "solver_seconds", "valid", "segments", "layers"):
        assert key in data
    assert data["valid"] and data["energy_j"] == sum(data["breakdown"].values())
    assert [layer["name"] for layer in data["layers"]] == ["fc1", "fc2", "fc3"]
    assert all(layer["directives"].startswith(f"layer {layer['name']} batch=8:") for layer in data["layers"])
    assert sorted(name for seg in data["segments"] for name in seg) == ["fc1", "fc2", "fc3"]
    assert all("region" in layer and layer["valid"] for layer in data["layers"])
    # the network's time is its segments' (layers of a segment overlap)
    assert data["time_cycles"] == sum(seg["time_cycles"] for seg in data["segment_details"])
    assert data["inter_layer_schemes"]["solved"] >= 3


def test_schedule_prints_directives_breakdown_and_time():
    result = run("schedule", "mlp_s", "--arch", "edge", "--batch", "1", "--directives")
    assert result.exit_code == 0, result.output
    assert "layer fc1 batch=1:" in result.output and "tensor{" in result.output
    assert re.search(r"energy [\d.]+ mJ \(MAC", result.output)
    assert re.search(r"time [\d,]+ cycles", result.output) and "valid" in result.output


def test_schedule_bad_inputs_exit_2():
    result = run("schedule", "nonet")
    assert result.exit_code == 2 and result.output.startswith("error: unknown network 'nonet'")
    result = run("schedule", "mlp_s", "--arch", "nohw")
    assert result.exit_code == 2 and "error: unknown hardware 'nohw'" in result.output


def test_schedule_reports_a_layer_that_cannot_fit(tmp_path):
    arch = json.loads(run("arch", "show", "eyeriss", "--json").stdout)
    arch["levels"][0]["capacity"] = 4
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(arch))
    result = run("schedule", "alexnet", "--arch", str(path), "--batch", "1")
    assert result.exit_code == 2
    assert re.match(r"error: layer 'conv1_a' does not fit: its smallest block needs \d+ B of REGF but REGF "
                    r"holds 4 B", result.output)
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_readme_python_example_runs():
    text = README.read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    namespace: dict = {"__name__": "__main__"}  # as when run as a script
    exec(compile(block, "README example", "exec"), namespace)  # noqa: S102 - our own README
    assert namespace["result"].valid


def test_a_script_without_the_main_guard_gets_one_clear_error(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"
    script.write_text('import kapla\nkapla.schedule("mlp_s", "edge", batch=1, jobs=2)\n')
    run_ = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run_.returncode != 0
    assert 'kapla must be called under `if __name__ == "__main__":`' in run_.stderr


def test_schedule_pipelining_switches_and_top_k():
    result = run("schedule", "alexnet", "--batch", "8", "--arch", "multinode_4x4", "--no-pipelining",
                 "--no-sharing", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert all(len(seg) == 1 for seg in data["segments"]) and data["valid"]
    piped = json.loads(run("schedule", "alexnet", "--batch", "8", "--arch", "multinode_4x4", "--top-k", "1",
                           "--json").stdout)
    assert any(len(seg) > 1 for seg in piped["segments"])
    assert piped["energy_j"] <= data["energy_j"]
    bad = run("schedule", "alexnet", "--top-k", "0")
    assert bad.exit_code == 2 and "--top-k" in bad.output


def test_a_store_is_reused_and_reported(tmp_path):
    store = tmp_path / "layers.store"
    args = ("schedule", "mlp_s", "--arch", "edge", "--batch", "1", "--no-directives", "--jobs", "1",
            "--store", str(store))
    first, again = run(*args), run(*args)
    assert first.exit_code == 0 and again.exit_code == 0, first.output + again.output
    solved = int(re.search(r"layer store .*: 0 layer solves reused, (\d+) solved", first.output).group(1))
    assert solved >= 3
    assert f"{solved} layer solves reused, 0 solved" in again.output
    energy = re.compile(r"energy ([\d.]+) mJ")
    assert energy.search(first.output).group(1) == energy.search(again.output).group(1)


def test_a_bad_store_is_one_error_before_solving(tmp_path):
    foreign = tmp_path / "notes.txt"
    foreign.write_text("hello\n")
    for target, message in ((foreign, "is not a kapla layer store"),
                            (tmp_path / "no" / "such.store", "cannot open layer store")):
        result = run("schedule", "alexnet", "--store", str(target))
        assert result.exit_code == 2
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output


def test_usage_errors_are_one_error_line():
    for args, message in ((("schedule", "--bogus"), "No such option '--bogus'"),
                          (("schedule", "--batch", "0"), "Invalid value for '--batch'"),
                          (("nope",), "No such command 'nope'"),
                          (("schedule", "mlp_s", "--batch", "99999999999999999999999"),
                           "batch is 99,999,999,999,999,999,999,999; kapla handles batches up to 1,048,576")):
        result = run(*args)
        assert result.exit_code == 2
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output


def test_an_unwritable_json_target_is_refused_before_solving(monkeypatch):
    import kapla.cli.schedule_cmd as cmd

    def never(*args, **kwargs):
        raise AssertionError("solved before checking the output path")

    monkeypatch.setattr(cmd, "schedule", never)
    result = run("schedule", "alexnet", "--json", "/nonexistent/x.json")
    assert result.exit_code == 2
    assert result.output.strip() == "error: --json /nonexistent/x.json: its directory does not exist"


def test_a_budget_for_a_solver_without_one_says_so():
    result = run("schedule", "mlp_s", "--budget", "5")
    assert result.exit_code == 2
    assert "error: solver 'kapla' takes no time budget (solvers that do: exhaustive, ml, random)" in result.output


def test_the_summary_of_alexnet_fits_one_screen_before_any_directive():
    plain = run("schedule", "alexnet", "--jobs", "1")
    assert plain.exit_code == 0, plain.output
    lines = plain.stdout.splitlines()  # stderr may hold progress lines on a slow machine
    assert lines[0] == "alexnet on multinode: inference, batch 64, solver kapla, objective energy"
    assert lines[1].startswith("energy ") and lines[2].startswith("time ")  # the totals first
    assert len(lines) <= 50 and "  REGF:" not in plain.stdout  # directives only when asked
    assert any(line.startswith("terms: ") for line in lines)
    with_directives = run("schedule", "alexnet", "--jobs", "1", "--directives").stdout.splitlines()
    same = [i for i in range(len(lines)) if i != 2]  # line 2 holds the solver's seconds
    assert [with_directives[i] for i in same] == [lines[i] for i in same]
    assert "  REGF:" in with_directives[len(lines):]


def test_a_plot_of_the_energy_per_layer(tmp_path):
    png, svg = tmp_path / "e.png", tmp_path / "e.svg"
    assert run("schedule", "mlp_s", "--arch", "edge", "--batch", "1", "--plot", str(png)).exit_code == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert run("schedule", "mlp_s", "--arch", "edge", "--batch", "1", "--plot", str(svg)).exit_code == 0
    assert "<svg" in svg.read_text() and "fc2" in svg.read_text()
    bad = run("schedule", "mlp_s", "--plot", str(tmp_path / "e.gif"))
    assert bad.exit_code == 2 and "must end in .png or .svg" in bad.output


def test_a_transformer_from_the_zoo_and_from_onnx(tmp_path):
    target = tmp_path / "out.json"
    result = run("schedule", "llama3_8b_decode", "--arch", "simba", "--batch", "1", "--jobs", "1",
                 "--json", str(target))
    assert result.exit_code == 0, result.output
    data = json.loads(target.read_text())
    assert data["valid"] and {"l0.qk", "l0.softmax", "l0.norm1", "l0.silu"} <= {lr["name"] for lr in data["layers"]}
    assert all(lr["energy_j"] > 0 for lr in data["layers"])

    from tests.workload.onnx_transformers import gpt2_block

    path = gpt2_block(tmp_path, hidden=64, heads=4)
    result = run("schedule", str(path), "--seq", "8", "--arch", "edge", "--jobs", "1")
    assert result.exit_code == 0, result.output
    assert "attn_weights" in result.output and "softmax" in result.output
    line = next(text for text in result.output.splitlines() if text.startswith("by op class: "))
    for name in ("projection", "attention", "softmax", "norm", "activation", "scale", "eltwise"):
        assert re.search(rf"[:,] {name} \d+\.\d+ mJ \(\d+\.\d%\)", line), name
