"""ONNX import: small models built with onnx.helper must equal hand-built networks."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import numpy_helper

from kapla.errors import NetworkError, SpecError, UnsupportedOpError
from kapla.workload.load import load_network
from kapla.workload.network import Network, NetworkBuilder
from kapla.workload.onnx_import import SUPPORTED_OPS, load_onnx
from kapla.workload.stats import network_stats
from tests.workload.onnx_models import Model


def assert_same(net: Network, ref: Network) -> None:
    assert net.inputs == ref.inputs
    assert net.layers == ref.layers  # ops, shapes, strides, pads, groups: hence MACs and weights
    assert net.edges == ref.edges  # same producers, in the same (concatenation) order
    assert [layer.macs for layer in net] == [layer.macs for layer in ref]
    assert [layer.weight_elems for layer in net] == [layer.weight_elems for layer in ref]
    assert network_stats(net) == network_stats(ref)


# ----------------------------------------------------------------- models


def cnn_model(tmp_path, batch: int | str = 2):
    """conv-relu-conv-add(residual)-relu-two branch convs-concat-pool-flatten-gemm."""
    m = Model()
    x = m.input("x", batch, 3, 16, 16)
    c1 = m.node("Relu", "relu1", [m.conv("c1", x, 3, 8, 3, pads=[1, 1, 1, 1])])
    c2 = m.conv("c2", c1, 8, 8, 3, pads=[1, 1, 1, 1])
    res = m.node("Relu", "relu2", [m.node("Add", "res", [c2, c1])])
    b1 = m.conv("b1", res, 8, 4, 1)
    b2 = m.conv("b2", res, 8, 4, 3, pads=[1, 1, 1, 1])
    cat = m.node("Concat", "cat", [b1, b2], axis=1)
    p = m.node("MaxPool", "p", [cat], kernel_shape=[2, 2], strides=[2, 2])
    flat = m.node("Flatten", "flat", [p])
    fc = m.node("Gemm", "fc", [flat, m.const("fc.w", 10, 8 * 8 * 8), m.const("fc.b", 10)], transB=1)
    return m.save(tmp_path, fc)


def cnn_ref(batch: int = 2) -> Network:
    b = NetworkBuilder("cnn", batch)
    b.input("x", 3, 16)
    b.conv("c1", "x", 8, 3, pad=1)
    b.conv("c2", "c1", 8, 3, pad=1)
    b.eltwise("res", ["c2", "c1"])
    b.conv("b1", "res", 4, 1)
    b.conv("b2", "res", 4, 3, pad=1)
    b.pool("p", ["b1", "b2"], 2)
    b.fc("fc", "p", 10)
    return b.build()


def test_cnn_with_residual_and_concat(tmp_path):
    net = load_onnx(cnn_model(tmp_path), name="cnn")
    assert_same(net, cnn_ref())
    assert net.batch == 2  # the model's static batch
    assert net.producers("p") == ("b1", "b2")  # the Concat became a list of producers


def test_depthwise_separable_block(tmp_path):
    m = Model()
    x = m.input("x", 1, 16, 14, 14)

    def bn(name: str, t: str, c: int) -> str:
        return m.node("BatchNormalization", name, [t] + [m.const(f"{name}.{p}", c) for p in "sbmv"])

    # SAME_UPPER at stride 2 on 14 pixels pads one pixel, at the bottom/right.
    dw = m.conv("dw", x, 16, 16, 3, group=16, strides=[2, 2], auto_pad="SAME_UPPER")
    h = m.node("Relu", "relu1", [bn("bn1", dw, 16)])
    pw = m.conv("pw", h, 16, 32, 1)
    six = [m.const("zero", dtype=np.float32), m.const("six", dtype=np.float32)]
    out = m.node("Clip", "relu6", [bn("bn2", pw, 32)] + six)
    net = load_onnx(m.save(tmp_path, out), name="dws")

    b = NetworkBuilder("dws", 1)
    b.input("x", 16, 14)
    b.depthwise("dw", "x", 3, stride=2, pad=(0, 0, 1, 1))
    b.conv("pw", "dw", 32, 1)
    assert_same(net, b.build())
    assert net["dw"].is_depthwise and net["dw"].ofmap.h == 7


def mlp_model(tmp_path):
    """Gemm, then MatMul + bias Add twice, with relus and a softmax; symbolic batch."""
    m = Model()
    x = m.input("x", "N", 784)
    h = m.node("Relu", "r1", [m.node("Gemm", "fc1", [x, m.const("w1", 784, 500), m.const("b1", 500)])])
    h = m.node("Add", "bias2", [m.node("MatMul", "fc2", [h, m.const("w2", 500, 250)]), m.const("b2", 250)])
    h = m.node("Relu", "r2", [h])
    h = m.node("Add", "bias3", [m.const("b3", 10), m.node("MatMul", "fc3", [h, m.const("w3", 250, 10)])])
    return m.save(tmp_path, m.node("Softmax", "sm", [h]))


def mlp_ref(batch: int) -> Network:
    b = NetworkBuilder("mlp", batch)
    b.input("x", 784)
    b.fc("fc1", "x", 500)
    b.fc("fc2", "fc1", 250)
    b.fc("fc3", "fc2", 10)
    b.eltwise("sm", ["fc3"], "softmax")
    return b.build()


def test_mlp(tmp_path):
    net = load_onnx(mlp_model(tmp_path), name="mlp")
    assert_same(net, mlp_ref(1))  # a symbolic batch dim defaults to 1
    # bias adds folded away, the softmax costed (5 operations per element)
    assert [layer.name for layer in net] == ["fc1", "fc2", "fc3", "sm"] and net["sm"].ops == 5 * 10


def test_batch_override(tmp_path):
    assert_same(load_onnx(mlp_model(tmp_path), batch=64, name="mlp"), mlp_ref(64))
    assert_same(load_onnx(cnn_model(tmp_path), batch=8, name="cnn"), cnn_ref(8))


def test_name_defaults_to_file_stem_and_load_network_dispatches(tmp_path):
    path = cnn_model(tmp_path)
    assert load_onnx(path).name == "model"
    net = load_network(str(path), batch=4)
    assert net.batch == 4 and [layer.name for layer in net] == [layer.name for layer in cnn_ref()]


def test_other_supported_ops(tmp_path):
    """Grouped dilated conv, ceil-mode avg pool, SAME_LOWER, Sum, Mul, global max pool."""
    m = Model()
    x = m.input("x", 1, 8, 15, 15)
    g = m.conv("g", x, 8, 16, 3, group=4, dilations=[2, 2], pads=[2, 2, 2, 2])
    a = m.node("AveragePool", "a", [g], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    s = m.conv("s", a, 16, 16, 2, auto_pad="SAME_LOWER")
    t = m.node("Sum", "sum", [a, s, a])
    u = m.node("Mul", "mul", [t, m.node("Sigmoid", "sig", [t])])
    gp = m.node("GlobalMaxPool", "gp", [u])
    net = load_onnx(m.save(tmp_path, gp), name="misc")

    b = NetworkBuilder("misc", 1)
    b.input("x", 8, 15)
    b.conv("g", "x", 16, 3, pad=2, groups=4, dilation=2)
    b.pool("a", "g", 2, mode="avg", ceil_mode=True)  # 15 pixels -> 8 windows
    b.conv("s", "a", 16, 2, pad=(1, 1, 0, 0))  # SAME_LOWER puts the odd pixel first
    b.eltwise("sum", ["a", "s", "a"])
    b.eltwise("mul", ["sum"], mode="silu")  # x * sigmoid(x): one SiLU layer
    b.global_pool("gp", "mul", mode="max")
    assert_same(net, b.build())
    assert net["a"].ofmap.h == 8


def test_pytorch_style_flatten_through_shape_arithmetic(tmp_path):
    """x.view(x.size(0), -1): Shape/Gather/Unsqueeze/Concat compute a constant reshape target."""
    m = Model()
    x = m.input("x", "N", 3, 8, 8)
    c = m.conv("c", x, 3, 4, 3, pads=[1, 1, 1, 1])
    n = m.node("Gather", "gather", [m.node("Shape", "shape", [c]), m.const("zero", dtype=np.int64)], axis=0)
    target = m.node("Concat", "target", [m.node("Unsqueeze", "unsq", [n, m.const("axes", 1, dtype=np.int64)]),
                                          m.const("minus1", 1, dtype=np.int64)], axis=0)
    flat = m.node("Reshape", "view", [c, target])
    fc = m.node("Gemm", "fc", [flat, m.const("w", 5, 4 * 8 * 8)], transB=1)
    net = load_onnx(m.save(tmp_path, fc), name="flat")
    assert [(layer.name, str(layer.op)) for layer in net] == [("c", "conv"), ("fc", "fc")]
    assert net["fc"].weight_elems == 5 * 256


def test_unnamed_and_duplicate_nodes_get_op_index_names(tmp_path):
    m = Model()
    x = m.input("x", 1, 3, 8, 8)
    a = m.conv("", x, 3, 4, 1)
    b = m.node("Conv", "dup", [a, m.const("w1", 4, 4, 1, 1)])
    c = m.node("Conv", "dup", [b, m.const("w2", 4, 4, 1, 1)])
    net = load_onnx(m.save(tmp_path, c))
    assert [layer.name for layer in net] == ["conv_0", "conv_1", "conv_2"]


# ----------------------------------------------------------------- errors


def test_unsupported_op_names_op_and_node(tmp_path):
    m = Model()
    x = m.input("x", 5, 1, 16)  # seq x batch x features: never needed, the LSTM is reported first
    w, r = m.const("W", 1, 32, 16), m.const("R", 1, 32, 8)
    out = m.node("LSTM", "lstm_0", [x, w, r], hidden_size=8)
    with pytest.raises(UnsupportedOpError, match=r"model\.onnx: node 'lstm_0' \(op LSTM\) is not supported; "
                                                 r"supported ops: .*Conv"):
        load_onnx(m.save(tmp_path, out))


def test_unsupported_unnamed_node_is_named_by_index(tmp_path):
    m = Model()
    x = m.input("x", 1, 4)
    h = m.node("Relu", "r", [x])
    out = m.node("Einsum", "", [h, h], equation="ij,ij->i")
    with pytest.raises(UnsupportedOpError, match=r"node #1 \(op Einsum\) is not supported"):
        load_onnx(m.save(tmp_path, out))


def test_garbage_and_missing_files_are_spec_errors(tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"this is not an onnx model\x00\xff\xfe" * 10)
    with pytest.raises(SpecError, match=r"garbage\.onnx: not a valid ONNX model") as info:
        load_onnx(garbage)
    assert "\n" not in str(info.value)
    with pytest.raises(SpecError, match=r"missing\.onnx: cannot read"):
        load_onnx(tmp_path / "missing.onnx")


@pytest.mark.parametrize("build, error, message", [
    # A concatenation along height is not a channel concatenation.
    (lambda m, x: m.node("Concat", "cat", [x, x], axis=2), UnsupportedOpError, r"node 'cat'.*axis 2"),
    # A reshape that reorganises the fmap cannot be folded before a convolution.
    (lambda m, x: m.conv("c", m.node("Reshape", "rs", [x, m.const("shape", 4, dtype=np.int64)]), 4, 4, 1),
     NetworkError, r"node 'c' \(op Conv\): input 't_rs' is 4x2x32"),
    (lambda m, x: m.node("MatMul", "mm", [m.const("w", 3, 4), x]), UnsupportedOpError, r"node 'mm'.*left operand"),
])
def test_unrepresentable_uses_of_supported_ops(tmp_path, build, error, message):
    m = Model()
    x = m.input("x", 1, 4, 8, 8)
    out = build(m, x)
    if any(t.name == "shape" for t in m.inits):  # give the reshape a real target
        m.inits = [t for t in m.inits if t.name != "shape"]
        m.inits.append(numpy_helper.from_array(np.array([1, 4, 2, 32], np.int64), "shape"))
    with pytest.raises(error, match=message):
        load_onnx(m.save(tmp_path, out))


def se_model(tmp_path, batch: int = 2):
    """Squeeze-and-excitation as torchvision exports it: global average pool, 1x1
    conv, ReLU, 1x1 conv, Sigmoid, and a Mul broadcasting the [N, C, 1, 1] vector."""
    m = Model()
    x = m.input("x", batch, 8, 8, 8)
    c1 = m.node("Relu", "relu1", [m.conv("c1", x, 8, 16, 3, pads=[1, 1, 1, 1])])
    gap = m.node("GlobalAveragePool", "gap", [c1])
    red = m.node("Relu", "relu2", [m.conv("red", gap, 16, 4, 1)])
    sig = m.node("Sigmoid", "sig", [m.conv("exp", red, 4, 16, 1)])
    se = m.node("Mul", "se", [c1, sig])
    return m.save(tmp_path, m.conv("proj", se, 16, 8, 1))


def test_squeeze_excitation_mul_is_a_channel_wise_scaling(tmp_path):
    net = load_onnx(se_model(tmp_path), name="se")
    b = NetworkBuilder("se", 2)
    b.input("x", 8, 8)
    b.conv("c1", "x", 16, 3, pad=1)
    b.global_pool("gap", "c1")
    b.conv("red", "gap", 4, 1)
    b.conv("exp", "red", 16, 1)
    b.eltwise("sig", ["exp"], "silu")  # a lone Sigmoid is costed as the importer's SiLU mode
    b.scale("se", "c1", "sig")
    b.conv("proj", "se", 8, 1)
    assert_same(net, b.build())
    se = net["se"]
    assert se.is_scale and se.macs == 0 and se.ops == 16 * 8 * 8
    assert {(e.src, e.port) for e in net.in_edges("se")} == {("c1", "in"), ("sig", "b")}


def test_the_vector_may_be_either_operand_of_the_mul(tmp_path):
    m = Model()
    x = m.input("x", 1, 4, 6, 6)
    v = m.conv("v", m.node("GlobalAveragePool", "gap", [x]), 4, 4, 1)
    net = load_onnx(m.save(tmp_path, m.node("Mul", "se", [v, x])))
    assert net["se"].is_scale and net.producers("se") == ("x", "v")


@pytest.mark.parametrize("build, shapes", [
    # a spatial map broadcast over the channels ([N, 1, H, W]): no channel-wise scaling
    (lambda m, x: m.node("Mul", "se", [x, m.conv("c", x, 4, 1, 1)]), r"\[1, 1, 8, 8\]"),
    # an [N, C, 1, 1] vector added, not multiplied
    (lambda m, x: m.node("Add", "se", [x, m.node("GlobalAveragePool", "gap", [x])]), r"\[1, 4, 1, 1\]"),
    # divided by it
    (lambda m, x: m.node("Div", "se", [x, m.node("GlobalAveragePool", "gap", [x])]), r"\[1, 4, 1, 1\]"),
    # a vector no node computes: a graph input
    (lambda m, x: m.node("Mul", "se", [x, m.input("v", 1, 4, 1, 1)]), r"\[1, 4, 1, 1\]"),
    # a vector of another channel count ([N, 1, 1, 1])
    (lambda m, x: m.node("Mul", "se", [x, m.conv("c", m.node("GlobalAveragePool", "gap", [x]), 4, 1, 1)]),
     r"\[1, 1, 1, 1\]"),
])
def test_other_broadcasts_are_refused_in_one_line(tmp_path, build, shapes):
    m = Model()
    x = m.input("x", 1, 4, 8, 8)
    with pytest.raises(UnsupportedOpError, match=r"node 'se' \(op (Mul|Add|Div)\): operands 't?_?x' \[1, 4, 8, 8\] "
                                                 rf".*{shapes}.* do not broadcast one feature map") as info:
        load_onnx(m.save(tmp_path, build(m, x)))
    assert "\n" not in str(info.value)


def test_unreadable_input_shape_is_reported_when_used(tmp_path):
    m = Model()
    x = m.input("x", 1, 3, "H", "W")
    out = m.conv("c", x, 3, 4, 1)
    with pytest.raises(NetworkError, match=r"graph input 'x' has shape \[1, 3, \?, \?\]"):
        load_onnx(m.save(tmp_path, out))


def test_supported_ops_listed():
    assert {"Conv", "Gemm", "MatMul", "MaxPool", "Concat", "Add", "Relu", "Flatten"} <= set(SUPPORTED_OPS)


def test_an_onnx_model_schedules_end_to_end(tmp_path):
    """The residual/concat CNN through `kapla schedule` on two presets: every layer placed and valid."""
    import json

    from click.testing import CliRunner

    from kapla.cli.main import app

    path = cnn_model(tmp_path, batch=4)
    for arch in ("multinode_4x4", "edge"):
        result = CliRunner().invoke(app, ["schedule", str(path), "--arch", arch, "--json"])
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["valid"] and data["batch"] == 4
        assert sorted(n for seg in data["segments"] for n in seg) == sorted(layer.name for layer in cnn_ref(4))
