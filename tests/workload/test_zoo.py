"""The zoo reproduces TANGRAM Table 2 (batch 64, 16-bit words, MB = MiB)."""

from decimal import Decimal

import pytest

from kapla.workload.layer import FmapShape, Op
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
    # He et al. 2016, Figure 3: "VGG-19 (19.6 billion FLOPs)", multiply-adds; 1% covers the rounding (19.632e9 here)
    "vgg19": (19.6e9, 0.01),
    # torchvision's Inception_V3_Weights "5.71 GFLOPS" (multiply-adds of CONV/FC at 299x299, without the
    # auxiliary classifier, which only runs in training); 1% covers the rounding (5.713e9 here)
    "inception_v3": (5.71e9, 0.01),
    # He et al. 2016, Table 1 ("FLOPs", counted as multiply-adds)
    "resnet18": (1.8e9, 0.02),
    "resnet34": (3.6e9, 0.02),
    "resnet50": (3.86e9, 0.02),
    "resnet101": (7.6e9, 0.02),
    "resnet152": (11.3e9, 0.02),
    "mobilenet": (569e6, 0.01),
    # Tan and Le 2019, Table 2: 0.39B FLOPS (multiply-adds), printed to 0.01B: 1.3% covers the rounding
    # (385.8M here; test_efficientnet_b0_matches_its_published_size_and_work checks the rounding itself)
    "efficientnet_b0": (0.39e9, 0.013),
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


# ------------------------------------------------- the Atomic Dataflow networks
# (Atomic Dataflow, Table I: VGG-19, ResNet-50/-152, ResNet-1001, Inception-v3, NASNet, PNASNet, EfficientNet.)
# kapla counts weights without biases and batch-norm scales/shifts (Layer.weight_elems), so published parameter
# counts are compared after taking those out. EfficientNet-B0 is not in the zoo: kapla's element-wise layers
# cannot multiply a CxHxW fmap by the Cx1x1 vector of squeeze-and-excitation (the ONNX importer refuses the
# same Mul, test_onnx_import); NASNet-A and PNASNet-5 are left out.


def weights(net):
    return sum(layer.weight_elems for layer in net)


def test_vgg19_matches_its_published_parameter_count():
    net = get_network("vgg19", batch=1)
    convs = [layer for layer in net if layer.op == Op.CONV]
    fcs = [layer for layer in net if layer.op == Op.FC]
    assert (len(convs), len(fcs)) == (16, 3)  # configuration E
    assert all((layer.s, layer.r) == (3, 3) for layer in convs)
    assert net["pool5"].ofmap.elems == net["fc6"].c * net["fc6"].h * net["fc6"].w == 512 * 7 * 7
    # torchvision's vgg19: 143,667,240 parameters (Simonyan and Zisserman, Table 2: "144"M), exactly the
    # weights plus one bias per output channel of each CONV and FC layer
    biases = sum(layer.k for layer in convs + fcs)
    assert weights(net) + biases == 143_667_240
    # VGG-19 is VGG-16 with one more 3x3 convolution in each of stages 3-5 (at 56x56, 28x28 and 14x14)
    extra = 9 * (256 * 256 * 56 * 56 + 512 * 512 * 28 * 28 + 512 * 512 * 14 * 14)
    assert net.macs - get_network("vgg16", batch=1).macs == extra
    assert [layer.name for layer in convs if layer.name.endswith("_4")] == ["conv3_4", "conv4_4", "conv5_4"]


# Inception-v3 modules: CONV layers, pool layers and branches concatenated into the module's output
INCEPTION_V3_MODULES = {
    "5b": (7, 1, 4, 256), "5c": (7, 1, 4, 288), "5d": (7, 1, 4, 288),  # Inception-A (Figure 5)
    "6a": (4, 1, 3, 768),  # grid reduction 35 -> 17
    "6b": (10, 1, 4, 768), "6c": (10, 1, 4, 768), "6d": (10, 1, 4, 768), "6e": (10, 1, 4, 768),  # Figure 6
    "7a": (6, 1, 3, 1280),  # grid reduction 17 -> 8
    "7b": (9, 1, 6, 2048), "7c": (9, 1, 6, 2048),  # Figure 7: two branches end in a 1x3 and a 3x1 side by side
}


def test_inception_v3_modules_branches_and_concatenations():
    net = get_network("inception_v3", batch=1)
    tags = list(INCEPTION_V3_MODULES)
    # what reads each module's output: the next module's branches, or the final pool
    readers = {tag: f"mixed_{after}_" for tag, after in zip(tags, tags[1:], strict=False)} | {"7c": "pool"}
    for tag, (convs, pools, branches, channels) in INCEPTION_V3_MODULES.items():
        layers = [layer for layer in net if layer.name.startswith(f"mixed_{tag}_")]
        assert sum(layer.op == Op.CONV for layer in layers) == convs, tag
        assert sum(layer.op == Op.POOL for layer in layers) == pools, tag
        reader = next(layer for layer in net if layer.name.startswith(readers[tag]))
        concatenated = net.producers(reader.name)
        assert len(concatenated) == branches and all(p.startswith(f"mixed_{tag}_") for p in concatenated), tag
        assert reader.c == channels, tag
    assert [net[f"mixed_{tag}_1x1"].h for tag in ("5b", "6b", "7b")] == [35, 17, 8]
    # every pooling branch is there: an average pool and its 1x1 projection, or a reduction's max pool
    assert net["mixed_5b_pool"].mode == "avg" and net.producers("mixed_5b_pool_proj") == ("mixed_5b_pool",)
    assert net["mixed_7a_pool"].mode == "max" and "mixed_7a_pool" in net.producers("mixed_7b_1x1")
    assert net["mixed_6b_7x7_2"].describe().startswith("conv 1x7/1")
    assert net["mixed_7b_3x3_2b"].describe().startswith("conv 3x1/1")
    assert sum(layer.op == Op.CONV for layer in net) == 94 and sum(layer.op == Op.FC for layer in net) == 1
    assert not any("aux" in layer.name for layer in net)  # the auxiliary classifier is left out


def test_inception_v3_matches_its_published_parameter_count():
    net = get_network("inception_v3", batch=1)
    # torchvision's inception_v3 has 27,161,264 parameters (Atomic Dataflow, Table I: "27M"), 3,326,696 of
    # them in the auxiliary classifier (1x1 768->128 and 5x5 128->768 convolutions with batch norm, FC
    # 768->1000 with bias). The rest is exactly the weights here plus a batch-norm scale and shift for every
    # CONV output channel (torchvision's convolutions have no bias) and the FC's 1000 biases.
    aux = 768 * 128 + 2 * 128 + 128 * 768 * 25 + 2 * 768 + 768 * 1000 + 1000
    assert aux == 3_326_696
    batch_norm = 2 * sum(layer.k for layer in net if layer.op == Op.CONV)
    assert weights(net) + batch_norm + 1000 == 27_161_264 - aux  # 23,834,568
    assert weights(net) == pytest.approx(23.8e6, rel=0.002)


def test_resnet1001_is_the_preactivation_cifar_network():
    net = get_network("resnet1001", batch=1)
    assert net.inputs["data"].h == 32 and net["fc"].k == 10
    blocks = [layer for layer in net if layer.op == Op.ELTWISE]
    assert len(blocks) == 333 and all(layer.mode == "add" for layer in blocks)  # 9 x 111 + 2 = 1001
    for stage, shape in ((2, "64x32x32"), (3, "128x16x16"), (4, "256x8x8")):
        stage_blocks = [layer for layer in blocks if layer.name.startswith(f"conv{stage}_")]
        assert len(stage_blocks) == 111 and {str(layer.ofmap) for layer in stage_blocks} == {shape}
    projections = [layer.name for layer in net if layer.name.endswith("_br")]
    assert projections == ["conv2_0_br", "conv3_0_br", "conv4_0_br"]  # only where the width changes
    # 1001 weighted layers on the longest path: conv1, 3 per block, the FC
    assert sum(layer.has_weights for layer in net) - len(projections) == 1001


def test_resnet1001_matches_its_published_size_and_counted_work():
    net = get_network("resnet1001", batch=1)
    # He et al. 2016 ("Identity Mappings"), Tables 3 and 4: 10.2M parameters. That figure leaves out batch
    # norm (its 2 x 74,608 scales and shifts would make 10.33M), so it is conv + FC weights, rounded to 0.1M:
    # 0.5% covers the rounding (10,178,480 here).
    assert weights(net) == pytest.approx(10.2e6, rel=0.005)
    # They publish no operation count; this is its arithmetic. Every block but the first of a stage does
    # 17 w^2 MACs per output position (1x1 4w->w, 3x3 w->w, 1x1 w->4w), and width x fmap side is 16 x 32 in
    # every stage, so each of those 330 blocks does 17 x 512^2 MACs. First blocks (with projection), conv1, FC:
    first = ((16 * 16 + 9 * 16 * 16 + 16 * 64 + 16 * 64) * 32 * 32
             + (64 * 32 + 9 * 32 * 32 + 32 * 128 + 64 * 128) * 16 * 16
             + (128 * 64 + 9 * 64 * 64 + 64 * 256 + 128 * 256) * 8 * 8)
    assert net.macs == 330 * 17 * 512**2 + first + 3 * 16 * 9 * 32 * 32 + 256 * 10 == 1_487_849_984


def test_efficientnet_b0_is_table_1_with_squeeze_excitation_in_every_block():
    net = get_network("efficientnet_b0", batch=1)
    assert net.inputs["data"].h == 224 and net["stem"].ofmap == net["mb1_0_dw"].ifmap  # 32x112x112
    blocks = sorted({"_".join(layer.name.split("_")[:2]) for layer in net if layer.name.startswith("mb")})
    assert len(blocks) == 16  # 1 + 2 + 2 + 3 + 3 + 4 + 1 MBConv blocks
    for block in blocks:
        layers = [layer for layer in net if layer.name.startswith(block + "_")]
        scales = [layer for layer in layers if layer.is_scale]
        assert len(scales) == 1, block  # one squeeze-and-excitation each
        dw = net[block + "_dw"]
        assert dw.is_depthwise and net.producers(scales[0].name) == (dw.name, block + "_se_expand")
        reduce = net[block + "_se_reduce"]
        assert net.producers(reduce.name) == (block + "_se_pool",) and reduce.ifmap.elems == dw.k
        block_in = net[block + "_expand"].c if block + "_expand" in net else dw.c
        assert reduce.k == max(1, block_in // 4)  # a quarter of the block's input channels
    # Table 1: per stage the kernel, the channels out and the output resolution
    stages = {1: (3, 16, 112), 2: (3, 24, 56), 3: (5, 40, 28), 4: (3, 80, 14), 5: (5, 112, 14), 6: (5, 192, 7),
              7: (3, 320, 7)}
    for stage, (kernel, channels, size) in stages.items():
        last = max(b for b in blocks if b.startswith(f"mb{stage}_"))
        assert net[last + "_dw"].s == kernel and net[last + "_project"].ofmap == FmapShape(channels, size, size)
    assert "mb1_0_expand" not in net and net["mb2_0_expand"].k == 6 * 16  # expansion 1, then 6
    # a residual add where a block keeps its size and channels: all but the first of each stage
    assert sorted(layer.name for layer in net if layer.op == Op.ELTWISE and layer.mode == "add") == [
        f"{b}_res" for b in blocks if not b.endswith("_0")]
    assert net["head"].ofmap == FmapShape(1280, 7, 7) and net["fc"].k == 1000 and net["fc"].c == 1280


def test_efficientnet_b0_matches_its_published_size_and_work():
    net = get_network("efficientnet_b0", batch=1)
    convs = [layer for layer in net if layer.op == Op.CONV]
    # torchvision's efficientnet_b0 has 5,288,548 parameters (Tan and Le, Table 2: "5.3M"): the weights here,
    # a batch-norm scale and shift per output channel of every CONV but the squeeze-and-excitation ones, the
    # biases of those (torchvision's other convolutions have none) and the FC's 1000 biases.
    batch_norm = 2 * sum(layer.k for layer in convs if "_se_" not in layer.name)
    se_biases = sum(layer.k for layer in convs if "_se_" in layer.name)
    assert weights(net) + batch_norm + se_biases + 1000 == 5_288_548
    assert weights(net) == 5_236_192 and round(weights(net) / 1e6, 1) == 5.2  # excluding biases and batch norm
    # Tan and Le, Table 2: 0.39B FLOPS (multiply-adds of the CONV/FC layers); the printed figure exactly
    assert round(net.macs / 1e9, 2) == 0.39
    # and the arithmetic of Table 1, block by block: (expansion, kernel, stride, channels, blocks)
    macs, c, size = 3 * 32 * 9 * 112 * 112 + 1280 * 1000, 32, 112
    for e, k, s, out, n in ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                            (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)):
        for i in range(n):
            mid, after = c * e, size // (s if i == 0 else 1)
            macs += (c * mid * size**2 if e > 1 else 0) + mid * k * k * after**2  # expansion, depthwise
            macs += 2 * mid * max(1, c // 4) + mid * out * after**2  # squeeze-and-excitation, projection
            c, size = out, after
    macs += 320 * 1280 * 7 * 7  # head
    assert net.macs == macs == 385_814_752
    # the scalings do no MACs but one operation per element of the depthwise output
    scales = [layer for layer in net if layer.is_scale]
    assert sum(layer.macs for layer in scales) == 0
    assert all(layer.ops == net[net.producers(layer.name)[0]].ofmap.elems for layer in scales)
