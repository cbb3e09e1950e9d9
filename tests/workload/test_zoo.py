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
    # He et al. 2016, Table 1 ("FLOPs", counted as multiply-adds)
    "resnet18": (1.8e9, 0.02),
    "resnet34": (3.6e9, 0.02),
    "resnet50": (3.86e9, 0.02),
    "resnet101": (7.6e9, 0.02),
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


# ----------------------------------------------------------------- transformers
# Weights are the layers' (biases and norm scales excluded); the published
# parameter counts also hold the embedding tables (looked up, so network inputs here).

D, F = 768, 3072
BLOCK_WEIGHTS = 4 * D * D + 2 * D * F  # one BERT / GPT-2 / ViT-B block: 7,077,888


def test_bert_base_matches_its_published_size_and_work():
    net = get_network("bert_base", batch=1)
    embeddings = (30522 + 512 + 2) * D  # word, position and segment tables
    weights = sum(layer.weight_elems for layer in net)
    assert weights == 12 * BLOCK_WEIGHTS + D * D  # and the pooler
    assert (weights + embeddings) == pytest.approx(109.48e6, rel=0.002)  # "110M" (Devlin et al.)
    # 11.2 G multiply-accumulates at 128 tokens (22.4 GFLOPs)
    assert net.macs == 12 * (128 * BLOCK_WEIGHTS + 2 * 12 * 128 * 128 * 64) + D * D
    assert net.macs == pytest.approx(11.2e9, rel=0.005)
    long = get_network("bert_base_512", batch=1)  # attention grows with the square of the length
    assert long["l0.qk"].macs == 16 * net["l0.qk"].macs and long["l0.q"].macs == 4 * net["l0.q"].macs


def test_gpt2_small_matches_its_published_size():
    net = get_network("gpt2", batch=1)
    weights = sum(layer.weight_elems for layer in net)
    assert weights == 12 * BLOCK_WEIGHTS + D * 50257  # the vocabulary projection, tied to the token table
    assert weights + 1024 * D == pytest.approx(124.44e6, rel=0.002)  # "124M", with the position table
    tokens = 128
    assert net.macs == tokens * weights + 12 * 2 * 12 * tokens * tokens * 64


def test_gpt2_decode_reads_its_kv_cache_and_does_one_token_of_work():
    net = get_network("gpt2_decode", batch=1)
    qk = net["l0.qk"]
    assert (qk.h, qk.loops["K"], qk.macs) == (1, 1024, 12 * 1024 * 64)  # one query against 1023 + 1 keys
    assert net.producers("l0.qk") == ("l0.q", "l0.k_cache", "l0.k") and "l0.v_cache" in net.inputs
    assert net.macs == sum(layer.weight_elems for layer in net) + 12 * 2 * 12 * 1024 * 64
    assert "l0.mask" not in net and "l0.mask" in get_network("gpt2", batch=1)  # no causal mask for one token


def test_llama3_8b_block_matches_the_published_model():
    net = get_network("llama3_8b_block", batch=1)
    h, kv, f, vocab = 4096, 8 * 128, 14336, 128256
    block = 2 * h * h + 2 * h * kv + 3 * h * f
    assert sum(layer.weight_elems for layer in net) == block
    assert 32 * block + 2 * vocab * h == pytest.approx(8.03e9, rel=0.002)  # "8B": 32 blocks, embeddings, head
    qk = net["l0.qk"]
    assert qk.groups == 8 and qk.h == 4 * 128  # 8 K/V heads, each shared by 4 query heads
    assert {net[n].mode for n in ("l0.norm1", "l0.q_rot", "l0.silu", "l0.gated")} == {
        "rmsnorm", "rotary", "silu", "mul"}
    decode = get_network("llama3_8b_decode", batch=1)
    assert decode["l0.qk"].macs == 32 * 2048 * 128 and decode["l0.q"].macs == h * h


def test_vit_b16_matches_its_published_size_and_work():
    net = get_network("vit_b16", batch=1)
    assert sum(layer.weight_elems for layer in net) + 197 * D + D == pytest.approx(86.57e6, rel=0.002)
    assert net.macs == pytest.approx(17.56e9, rel=0.002)  # "17.6 GFLOPs" (Dosovitskiy et al.)
    assert net.producers("pos_embed") == ("class_token", "patch_embed")
    assert [e.rows for e in net.in_edges("head")] == [(0, 1)]


@pytest.mark.parametrize("name", ["bert_base", "gpt2", "gpt2_decode", "llama3_8b_block", "llama3_8b_decode",
                                  "vit_b16"])
def test_transformers_count_every_op_class(name):
    net = get_network(name, batch=1)
    classes = {layer.op_class for layer in net}
    assert {"projection", "attention", "softmax", "norm", "eltwise", "scale"} <= classes
    assert all(layer.ops > 0 for layer in net)
    products = [layer for layer in net if layer.op_class == "attention"]
    assert len(products) == 2 * sum(1 for layer in net if layer.name.endswith(".softmax"))
    assert all(not layer.has_weights and layer.macs > 0 for layer in products)
