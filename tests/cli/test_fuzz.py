"""Fuzzing the inputs a user hands kapla: network files, hardware files and
ONNX models, well-formed, mangled and garbage bytes. Every input ends in a
result or in one ``error:`` line with exit status 2, never a traceback."""

from __future__ import annotations

import copy
import json
from importlib import resources

import onnx
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kapla.cli.main import app
from tests.workload.onnx_models import Model

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                         HealthCheck.too_slow])

# values a careless or hostile file may hold where a field is expected
ODD = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.integers(min_value=2**20, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
    st.lists(st.integers(-2, 40), max_size=5), st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))


def ends_cleanly(result) -> None:
    """A result (exit 0) or one ``error:`` line (exit 2); never a traceback."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    if result.exit_code != 0:
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.output


def run(*args: str):
    return CliRunner().invoke(app, list(args))


@FUZZ
@given(st.binary(max_size=300), st.sampled_from([".yaml", ".json", ".onnx"]))
def test_garbage_bytes_as_a_network(tmp_path, data, suffix):
    path = tmp_path / f"net{suffix}"
    path.write_bytes(data)
    ends_cleanly(run("stats", str(path)))


def _layer(kind: str, name: str, src: str) -> dict:
    base = {"conv": {"out_channels": 4, "kernel": 3}, "depthwise": {"kernel": 3}, "fc": {"out_features": 8},
            "pool": {"kernel": 2}, "global_pool": {}, "eltwise": {}}[kind]
    return {"name": name, "type": kind, "inputs": src, **base}


@st.composite
def mangled_networks(draw) -> dict:
    """A small valid network, then a few of its fields (or new ones) given odd values."""
    kinds = draw(st.lists(st.sampled_from(["conv", "depthwise", "fc", "pool", "global_pool", "eltwise"]),
                          min_size=1, max_size=4))
    layers, src = [], "x"
    for i, kind in enumerate(kinds):
        layers.append(_layer(kind, f"l{i}", src))
        src = f"l{i}"
    net = {"name": "fuzz", "batch": 2, "inputs": {"x": [3, 8, 8]}, "layers": layers}
    for _ in range(draw(st.integers(0, 3))):
        where = draw(st.sampled_from(["top", "layer", "input"]))
        value = draw(ODD)
        if where == "top":
            net[draw(st.sampled_from(["name", "batch", "inputs", "layers", "extra"]))] = value
        elif where == "input":
            net["inputs"] = {"x": value}
        elif isinstance(net.get("layers"), list) and any(isinstance(lr, dict) for lr in net["layers"]):
            layer = draw(st.sampled_from([lr for lr in net["layers"] if isinstance(lr, dict)]))
            field = draw(st.sampled_from(["name", "type", "inputs", "out_channels", "kernel", "stride", "padding",
                                          "groups", "out_features", "mode", "dilation", "multiplier", "bogus"]))
            layer[field] = value
    return net


@FUZZ
@given(mangled_networks(), st.sampled_from(["yaml", "json"]))
def test_mangled_network_files(tmp_path, net, form):
    path = tmp_path / f"net.{form}"
    path.write_text(yaml.safe_dump(net) if form == "yaml" else json.dumps(net))
    ends_cleanly(run("stats", str(path)))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mangled_networks())
def test_mangled_networks_that_load_also_schedule_or_say_why(tmp_path, net):
    path = tmp_path / "net.yaml"
    path.write_text(yaml.safe_dump(net))
    if run("stats", str(path)).exit_code != 0:
        return
    ends_cleanly(run("schedule", str(path), "--arch", "edge", "--batch", "1", "--jobs", "1", "--no-directives"))


EDGE = yaml.safe_load((resources.files("kapla.arch.presets") / "edge.yaml").read_text())


@st.composite
def mangled_hardware(draw) -> dict:
    """The edge preset with a few fields, at any depth, given odd values or removed."""
    spec = copy.deepcopy(EDGE)
    for _ in range(draw(st.integers(1, 3))):
        node = spec
        while True:
            keys = list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
            if not keys:
                break
            key = draw(st.sampled_from(keys))
            if draw(st.booleans()) and isinstance(node[key], (dict, list)) and node[key]:
                node = node[key]
                continue
            if isinstance(node, dict) and draw(st.integers(0, 4)) == 0:
                del node[key]
            else:
                node[key] = draw(ODD)
            break
    return spec


@FUZZ
@given(mangled_hardware())
def test_mangled_hardware_files(tmp_path, spec):
    path = tmp_path / "hw.yaml"
    path.write_text(yaml.safe_dump(spec))
    ends_cleanly(run("arch", "show", str(path)))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mangled_hardware())
def test_mangled_hardware_that_loads_also_schedules_or_says_why(tmp_path, spec):
    path = tmp_path / "hw.yaml"
    path.write_text(yaml.safe_dump(spec))
    if run("arch", "show", str(path)).exit_code != 0:
        return
    ends_cleanly(run("schedule", "mlp_s", "--arch", str(path), "--batch", "1", "--jobs", "1", "--no-directives"))


@FUZZ
@given(st.integers(-1, 9), st.integers(-1, 5), st.integers(-1, 4), st.integers(-2, 4), st.integers(-1, 3),
       st.sampled_from(["Conv", "MaxPool", "Gemm", "Relu", "Add", "Softmax", "LSTM"]), st.binary(max_size=40))
def test_mangled_onnx_models(tmp_path, channels, kernel, stride, pad, group, op, tail):
    m = Model()
    x = m.input("x", 1, 3, 8, 8)
    attrs = {"kernel_shape": [kernel, kernel], "strides": [stride, stride], "pads": [pad] * 4}
    if op == "Conv":
        w = m.const("w", max(channels, 1), 3, max(kernel, 1), max(kernel, 1))
        m.nodes.append(onnx.helper.make_node("Conv", [x, w], ["y"], name="c", group=group, **attrs))
    elif op == "MaxPool":
        m.nodes.append(onnx.helper.make_node("MaxPool", [x], ["y"], name="p", **attrs))
    else:
        m.nodes.append(onnx.helper.make_node(op, [x, x], ["y"], name="o"))
    graph = onnx.helper.make_graph(m.nodes, "g", m.inputs, [onnx.helper.make_tensor_value_info(
        "y", onnx.TensorProto.FLOAT, None)], m.inits)
    data = onnx.helper.make_model(graph).SerializeToString()
    path = tmp_path / "model.onnx"
    path.write_bytes(data[: len(data) - len(tail)] + tail if tail else data)  # sometimes a torn or patched tail
    ends_cleanly(run("stats", str(path)))



def test_a_layer_type_that_is_not_a_name_is_one_error_line(tmp_path):
    # found by test_mangled_network_files: a list as the type was looked up in a dict (a TypeError)
    net = {"name": "bad", "batch": 2, "inputs": {"x": [3, 8, 8]},
           "layers": [{"name": "l0", "type": [], "inputs": "x", "out_channels": 4, "kernel": 3}]}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(net))
    result = run("schedule", str(path))
    ends_cleanly(result)
    assert result.exit_code != 0 and "unknown layer type []" in result.output
