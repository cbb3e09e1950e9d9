"""Network files: the example loads; every kind of bad input gives one clear line."""

import json
from pathlib import Path

import pytest
import yaml

from kapla.errors import KaplaError, SpecError
from kapla.workload.load import load_network
from kapla.workload.network import NetworkBuilder
from kapla.workload.spec import load_network_file, network_spec, parse_network
from kapla.workload.stats import network_stats

EXAMPLE = Path(__file__).parents[2] / "examples" / "tiny_cnn.yaml"


def hand_written_tiny_cnn(batch=8):
    b = NetworkBuilder("tiny_cnn", batch)
    b.input("data", 3, 32)
    b.conv("conv1", "data", 16, 3, pad=1)
    b.conv("conv2", "conv1", 16, 3, pad=1)
    b.eltwise("res", ["conv1", "conv2"])
    b.conv("branch_a", "res", 8, 1)
    b.depthwise("branch_b", "res", 3, pad=1)
    b.pool("pool", ["branch_a", "branch_b"], 2, stride=2)
    b.fc("fc", "pool", 10)
    return b.build()


def test_example_file_equals_the_hand_written_network():
    net = load_network_file(EXAMPLE)
    assert net == hand_written_tiny_cnn()
    assert network_stats(net) == network_stats(hand_written_tiny_cnn())


def test_json_and_batch_override(tmp_path):
    data = yaml.safe_load(EXAMPLE.read_text())
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data))
    net = load_network(str(path), batch=3)
    assert net.batch == 3 and net.layers == hand_written_tiny_cnn().layers


def test_layers_may_be_listed_in_any_order():
    data = yaml.safe_load(EXAMPLE.read_text())
    data["layers"] = list(reversed(data["layers"]))
    net = parse_network(data)
    assert {layer.name: layer for layer in net} == {layer.name: layer for layer in hand_written_tiny_cnn()}


def base():
    return {"name": "n", "batch": 2, "inputs": {"x": [3, 8, 8]},
            "layers": [{"name": "a", "type": "conv", "inputs": "x", "out_channels": 4, "kernel": 3}]}


def with_layers(*layers):
    data = base()
    data["layers"] = list(layers)
    return data


@pytest.mark.parametrize("data, message", [
    (with_layers({"name": "a", "type": "conv", "inputs": "b", "out_channels": 4, "kernel": 1},
                 {"name": "b", "type": "conv", "inputs": "a", "out_channels": 3, "kernel": 1}),
     r"net.yaml: cycle between layers a -> b -> a"),
    (with_layers({"name": "a", "type": "conv", "inputs": "ghost", "out_channels": 4, "kernel": 1}),
     r"net.yaml: layers\[0\] \('a'\): input 'ghost' is neither a layer nor a network input"),
    (with_layers({"name": "a", "type": "conv", "inputs": "x", "out_channels": 4, "kernel": 1},
                 {"name": "e", "type": "eltwise", "inputs": ["a", "x"]}),
     r"net.yaml: layers\[1\]: layer 'e': input 'x' is 3x8x8 but 'a' is 4x8x8"),
    (with_layers({"name": "a", "type": "lstm", "inputs": "x"}),
     r"net.yaml: layers\[0\] \('a'\): unknown layer type 'lstm'; known types: conv, depthwise"),
    (with_layers({"name": "a", "type": "conv", "inputs": "x", "kernel": 3}),
     r"net.yaml: layers\[0\] \('a'\).out_channels: Field required"),
    (with_layers({"name": "a", "type": "conv", "inputs": "x", "out_channels": -4, "kernel": 3}),
     r"net.yaml: layers\[0\] \('a'\).out_channels: Input should be greater than 0"),
    (with_layers({"name": "a", "type": "conv", "inputs": "x", "out_channels": 4, "kernel": 3, "colour": 1}),
     r"net.yaml: layers\[0\] \('a'\).colour: Extra inputs are not permitted"),
    (with_layers({"name": "a", "type": "conv", "inputs": "x", "out_channels": 4, "kernel": 9}),
     r"net.yaml: layers\[0\]: layer 'a': a 9x9 window does not fit the 8x8 input"),
    (with_layers({"name": "a", "type": "conv", "inputs": "x", "out_channels": 4, "kernel": 0}),
     r"net.yaml: layers\[0\] \('a'\).kernel: Input should be greater than 0$"),
    (with_layers({"name": "a", "type": "conv", "inputs": "x", "out_channels": True, "kernel": 3}),
     r"net.yaml: layers\[0\] \('a'\).out_channels: Input should be a valid integer"),
    (with_layers({"name": "a", "type": "conv", "inputs": "x", "out_channels": 10**30, "kernel": 3}),
     r"net.yaml: layers\[0\] \('a'\).out_channels: Input should be less than or equal to 1048576"),
    (with_layers({"name": "a", "type": "conv", "inputs": "x", "out_channels": 4, "kernel": 3, "padding": -1}),
     r"net.yaml: layers\[0\] \('a'\).padding: Input should be greater than or equal to 0"),
    ({**base(), "inputs": {"x": [0, 8, 8]}}, r"net.yaml: inputs.x\[0\]: Input should be greater than 0"),
    ({**base(), "inputs": {"x": [3, 8]}},
     r"net.yaml: inputs: input 'x': a shape is \[channels\] or \[channels, height, width\] \(got 2 numbers\)"),
    ({**base(), "batch": 10**9}, r"net.yaml: batch: Input should be less than or equal to 1048576"),
    ({"name": "n", "layers": []}, r"net.yaml: inputs: Field required"),
    ([1, 2], r"net.yaml: expected a mapping"),
])
def test_bad_network_files_give_one_line(data, message):
    with pytest.raises(SpecError, match=message) as info:
        parse_network(data, "net.yaml")
    assert "\n" not in str(info.value)


def test_malformed_yaml_names_the_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: n\nlayers: [\n  {name: a\n")
    with pytest.raises(SpecError, match=r"bad.yaml: malformed file at line \d+, column \d+"):
        load_network_file(path)


def test_a_file_that_is_not_text_is_one_error(tmp_path):
    path = tmp_path / "net.yaml"
    path.write_bytes(b"name: n\nbatch: 1\n\xff\xfe garbage\n")
    with pytest.raises(SpecError, match=r"net.yaml: not a text file \(byte 0xff at offset 17 is not UTF-8\)"):
        load_network_file(path)


def test_sizes_beyond_the_model_are_refused_up_front():
    with pytest.raises(KaplaError, match="batch is 1,000,000,000; kapla handles batches up to 1,048,576"):
        load_network("mlp_s", batch=10**9)
    with pytest.raises(KaplaError, match="batch must be a positive integer \\(got 0\\)"):
        load_network("mlp_s", batch=0)  # not the zoo's default 64
    wide = with_layers({"name": "a", "type": "fc", "inputs": "x", "out_features": 1 << 20})
    wide["inputs"] = {"x": [1 << 20]}
    with pytest.raises(KaplaError, match="layer 'a' performs 2.25e\\+15 multiply-accumulates at batch 2048"):
        parse_network(wide, "net.yaml", batch=2048)


def test_missing_file_and_unknown_name():
    with pytest.raises(SpecError, match="cannot read network file"):
        load_network_file("/nonexistent/net.yaml")
    with pytest.raises(KaplaError, match="unknown network 'nonet'"):
        load_network("nonet")


def test_a_transformer_block_from_a_file():
    from tests.workload.test_transformer_layers import attention

    net = load_network_file(EXAMPLE.parent / "tiny_attention.yaml")
    ref = attention(tokens=16, hidden=64, heads=4, kv_heads=2, norm="rmsnorm")
    assert net["qk"] == ref["qk"] and net["av"] == ref["av"] and net["o"] == ref["o"]
    assert net.producers("qk") == ("q", "k") and net["softmax"].mode == "softmax"
    assert net.macs == ref.macs  # the reference also has rotary and scale layers, which do no MACs


def test_an_unknown_vector_mode_is_one_line():
    data = with_layers({"name": "a", "type": "eltwise", "inputs": "x", "mode": "swish"})
    with pytest.raises(SpecError, match=r"net.yaml: layers\[0\] \('a'\).mode: mode must be one of "
                                        r"add, mul, unary, softmax"):
        parse_network(data, "net.yaml")


@pytest.mark.parametrize("name", ["alexnet", "googlenet", "inception_v3", "resnet50", "mobilenet", "mlp_m", "lstm_m"])
def test_a_network_written_as_a_file_reads_back_the_same(name, tmp_path):
    """network_spec is parse_network's inverse for the layers a file can hold: the same
    layers (concatenations, groups, padding, pooling modes), edges, inputs and batch."""
    from kapla.workload.zoo import get_network

    net = get_network(name, 3)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(network_spec(net), sort_keys=False))
    back = load_network_file(path)
    assert {layer.name: layer for layer in back} == {layer.name: layer for layer in net}
    assert set(back.edges) == set(net.edges) and back.inputs == net.inputs and back.batch == 3


def test_what_a_network_file_cannot_hold_is_one_error_naming_the_layer():
    from kapla.workload.zoo import get_network

    with pytest.raises(SpecError, match="layer 'l0.q'"):
        network_spec(get_network("bert_base", 1))
    with pytest.raises(SpecError, match="training network"):
        network_spec(get_network("mlp_s", 1).to_training())
