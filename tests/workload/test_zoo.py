"""The zoo reproduces TANGRAM Table 2 (batch 64, 16-bit words, MB = MiB)."""

from decimal import Decimal

import pytest

from kapla.workload.layer import Op
from kapla.workload.stats import network_stats
from kapla.workload.zoo import ZOO, get_network

KIB, MIB = 2**10, 2**20

# name, CONVs, FCs, fmap largest/total, weight largest/total (strings keep the table's precision)
TABLE2 = [
    ("alexnet", 10, 3, ("17.7", "95.4", MIB), ("72", "116", MIB)),
    ("vgg16", 13, 3, ("392.0", "1841.7", MIB), ("196", "264", MIB)),
    ("googlenet", 57, 1, ("98.0", "453.4", MIB), ("2", "13", MIB)),
    ("resnet152", 155, 1, ("98.0", "4318.5", MIB), ("5", "115", MIB)),
    ("mlp_m", 0, 4, ("125", "220", KIB), ("1.5", "2.7", MIB)),
    ("mlp_l", 0, 4, ("188", "376", KIB), ("2.9", "6.1", MIB)),
    ("lstm_m", 0, 4, ("64", "576", KIB), ("1", "4", MIB)),
    ("lstm_l", 0, 16, ("125", "4125", KIB), ("4", "61", MIB)),
]


def matches(value_bytes: int, printed: str, unit: int) -> bool:
    """True if ``value_bytes`` rounds to the figure as printed in the table."""
    digits = -Decimal(printed).as_tuple().exponent
    half_ulp = Decimal(5) / Decimal(10) ** (digits + 1)
    return abs(Decimal(value_bytes) / unit - Decimal(printed)) <= half_ulp


@pytest.mark.parametrize("name, convs, fcs, fmap, weight", TABLE2, ids=[row[0] for row in TABLE2])
def test_table2(name, convs, fcs, fmap, weight):
    st = network_stats(get_network(name, batch=64))
    assert (st.conv_layers, st.fc_layers) == (convs, fcs)
    largest, total, unit = fmap
    assert matches(st.fmap_largest_bytes, largest, unit), st.fmap_largest_bytes / unit
    assert matches(st.fmap_total_bytes, total, unit), st.fmap_total_bytes / unit
    largest, total, unit = weight
    assert matches(st.weight_largest_bytes, largest, unit), st.weight_largest_bytes / unit
    assert matches(st.weight_total_bytes, total, unit), st.weight_total_bytes / unit


def test_matches_rejects_a_wrong_figure():
    assert matches(int(95.4 * MIB), "95.4", MIB)
    assert not matches(int(95.6 * MIB), "95.4", MIB)


# Published MAC counts per sample (multiply-accumulates of CONV/FC layers).
MACS = {
    "alexnet": (724e6, 0.01),
    "vgg16": (15.47e9, 0.01),
    "resnet50": (3.86e9, 0.02),
    "resnet152": (11.3e9, 0.02),
    "mobilenet": (569e6, 0.01),
    "mlp_s": ((784 * 500 + 500 * 250 + 250 * 10), 0.0),
}


@pytest.mark.parametrize("name", sorted(MACS))
def test_mac_counts(name):
    expected, tol = MACS[name]
    got = get_network(name, batch=1).macs
    assert abs(got - expected) <= tol * expected


def test_alexnet_matches_the_reference_tool_op_count():
    # nn_dataflow reports 4.64326e10 "MACs" for AlexNet at batch 64; it counts
    # every loop iteration, pooling included, which is our ``loop_ops``.
    net = get_network("alexnet", 64)
    assert round(net.batch * sum(layer.loop_ops for layer in net) / 1e5) == 464326
    assert net.macs < 4.64326e10


def test_every_zoo_network_builds_and_is_topologically_ordered():
    for name in ZOO:
        net = get_network(name, batch=2)
        seen = set(net.inputs)
        for layer in net:
            assert set(net.producers(layer.name)) <= seen
            seen.add(layer.name)


def test_mobilenet_uses_depthwise_convolutions():
    net = get_network("mobilenet")
    dw = [layer for layer in net if layer.is_depthwise]
    assert len(dw) == 13
    assert all(layer.weight_elems == layer.c * 9 for layer in dw)


def test_lstm_cell_structure():
    net = get_network("lstm_l")
    assert sum(1 for layer in net if layer.op == Op.FC) == 16
    gate = net["cell1_igate"]
    assert (gate.c, gate.k) == (2000, 1000)  # [h_{t-1}, x_t] -> one gate
    assert net.producers("cell1_igate") == ("cell1_hinit", "cell0_hout")


def test_aliases_and_unknown_names():
    assert get_network("ResNet-152").name == "resnet152"
    assert get_network("MLP-L").name == "mlp_l"
    with pytest.raises(Exception, match="unknown network 'nope'"):
        get_network("nope")
