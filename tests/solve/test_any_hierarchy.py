"""Whole networks on any hierarchy: every preset and the 4-level example schedule,
nothing is reported valid without a scheme for every layer, small layers leave
nodes idle, and strips / partial filters rescue buffers too small for whole
rows or filters."""

from pathlib import Path

import pytest

import kapla
from kapla.arch import list_presets, load_arch, parse_arch
from kapla.model import evaluate
from kapla.solve.kapla_intra import KaplaIntraSolver
from kapla.workload.layer import Layer, Op
from kapla.workload.network import NetworkBuilder

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ARCHS = list_presets() + [str(EXAMPLES / "four_level.yaml")]


def _check(result, net):
    assert result.valid
    assert [lr.name for lr in result.layers] == [layer.name for layer in net]
    assert result.energy_j > 0 and result.time > 0
    for lr in result.layers:
        assert lr.cost.valid and lr.cost.total_energy > 0


@pytest.mark.parametrize("arch", ARCHS, ids=lambda a: Path(a).stem)
def test_tiny_cnn_schedules_on_every_hardware(arch):
    result = kapla.schedule(EXAMPLES / "tiny_cnn.yaml", arch, batch=2, jobs=1)
    _check(result, kapla.workload.load.load_network(str(EXAMPLES / "tiny_cnn.yaml"), batch=2))


def test_registers_straight_under_dram_is_no_empty_schedule():
    two_level = parse_arch({
        "name": "regs", "word_bits": 16, "clock_mhz": 500,
        "levels": [{"name": "REGF", "capacity": "256 B", "access_pj": 0.5, "array": [4, 4]},
                   {"name": "DRAM", "access_pj": 200.0, "bandwidth": 16.0}],
        "array_bus": {"width_bits": 64, "access_pj": 1.0}, "mac_pj": 1.0, "hop_pj": 0.0, "static_pj": 1.0,
        "pe_mapping": "C|K"})
    result = kapla.schedule("mlp_s", two_level, batch=2, jobs=1)
    _check(result, kapla.workload.zoo.get_network("mlp_s", 2))
    assert result.energy["DRAM"] > 0


def test_a_small_layer_leaves_nodes_idle():
    result = kapla.schedule("mlp_s", "multinode", batch=1, jobs=1)
    _check(result, kapla.workload.zoo.get_network("mlp_s", 1))
    fc3 = result.layer("fc3")
    nodes = 1
    for st in fc3.scheme.levels[-1].stacks:
        nodes *= st.count
    assert nodes < 256


def _resnet18_like():
    """ResNet-18 / MobileNetV2 layer shapes (torchvision), batch 1: the 7x7/2 stem on a
    224x224 input, a 3x3 basic-block conv, an inverted-residual expansion and its
    depthwise 3x3/2."""
    b = NetworkBuilder("resnet18_like", 1)
    b.input("data", 3, 224)
    b.conv("conv1", "data", 64, 7, stride=2, pad=3)
    b.pool("pool1", "conv1", 3, stride=2, pad=1)
    b.conv("layer1", "pool1", 64, 3, pad=1)
    b.conv("expand", "layer1", 144, 1)
    b.depthwise("dw", "expand", 3, stride=2, pad=1)
    return b.build()


def test_eyeriss_processes_strips_of_a_large_plane():
    net = _resnet18_like()
    result = kapla.schedule(net, "eyeriss", jobs=1)
    _check(result, net)


def test_a_systolic_array_with_small_registers_splits_the_filter():
    arch = load_arch("edge").with_level("REGF", capacity=144)
    conv1 = Layer("conv1_a", Op.CONV, c=3, k=48, h=227, w=227, s=11, r=11, stride=(4, 4))
    result = KaplaIntraSolver().solve(conv1, 1, arch)
    assert result.cost.valid and evaluate(result.scheme, arch).valid
    # the whole 11x11 filter no longer sits in one PE
    unit = dict(result.scheme.unit)
    assert unit.get("S", 1) * unit.get("R", 1) < 121


def test_a_schedule_missing_a_layer_is_not_valid():
    from kapla.solve.network import _complete

    net = kapla.workload.zoo.get_network("mlp_s", 2)
    result = kapla.schedule(net, "multinode_4x4", jobs=1)
    assert _complete(net, list(result.layers))
    assert not _complete(net, list(result.layers[:-1]))
    assert not _complete(net, [])
