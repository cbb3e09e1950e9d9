"""Matrix products with head loops, fmap operands and vector work: the transformer's layers."""

import numpy as np
import pytest

from kapla.dataflow.tensors import Kind, footprints, layer_dims, tensor_roles
from kapla.errors import NetworkError
from kapla.workload.layer import VECTOR_MODES, Layer, Op, Operand, Phase
from kapla.workload.network import Edge, NetworkBuilder


def attention(batch=1, tokens=16, hidden=64, heads=4, kv_heads=None, norm="layernorm"):
    """One pre-norm attention block; ``kv_heads`` < ``heads``: grouped-query attention."""
    kv_heads = kv_heads or heads
    d, r = hidden // heads, heads // kv_heads
    b = NetworkBuilder("attention", batch)
    x = b.input("x", hidden, tokens, 1)
    ln = b.eltwise("ln", [x], norm)
    q = b.matmul("q", ln, hidden)
    k = b.matmul("k", ln, kv_heads * d)
    v = b.matmul("v", ln, kv_heads * d)
    qr, kr = b.eltwise("q_rot", [q], "rotary"), b.eltwise("k_rot", [k], "rotary")
    s = b.matmul("qk", qr, tokens, operand=kr, heads=kv_heads, inner=d, rows=r * tokens)
    p = b.eltwise("softmax", [b.eltwise("scale", [s], "scale")], "softmax")
    a = b.matmul("av", p, d, operand=v, heads=kv_heads, inner=tokens, rows=r * tokens)
    o = b.matmul("o", a, hidden, inner=hidden, rows=tokens)  # heads back in the channels
    b.eltwise("res", [x, o], "add")
    return b.build()


def test_a_projection_is_a_matmul_by_weights_over_the_token_rows():
    net = attention(tokens=16, hidden=64)
    q = net["q"]
    assert q.op == Op.MATMUL and q.operand == Operand.WEIGHT and q.has_weights
    assert q.loops == {"G": 1, "C": 64, "K": 64, "Y": 16, "X": 1, "S": 1, "R": 1}
    assert q.macs == 16 * 64 * 64 and q.weight_elems == 64 * 64
    assert q.op_class == "projection" and not q.folds_batch


def test_attention_products_have_macs_and_no_weights():
    net = attention(tokens=16, hidden=64, heads=4)
    for name in ("qk", "av"):
        layer = net[name]
        assert layer.operand == Operand.FMAP and not layer.has_weights
        assert layer.weight_elems == 0 and layer.op_class == "attention"
        assert layer.macs == 4 * 16 * 16 * 16  # heads x query rows x key columns x head dim
    # Q x K^T: C = head dim, K = key positions, Y = query positions, G = heads.
    assert net["qk"].loops == {"G": 4, "C": 16, "K": 16, "Y": 16, "X": 1, "S": 1, "R": 1}
    assert net.macs == 4 * 16 * 64 * 64 + 2 * 4 * 16 * 16 * 16


def test_an_fmap_operand_folds_the_batch_into_the_groups():
    layer = attention(batch=3, tokens=8, hidden=32, heads=2)["qk"]
    dims = layer_dims(layer, 3)
    assert dims["N"] == 1 and dims["G"] == 2 * 3
    whole = footprints(np.array([dims[d] for d in "NGCKYXSR"]), layer)
    # Every sample has its own K: the "weight" tensor holds batch x heads x tokens x head dim words.
    assert whole[Kind.WGT] == 3 * 2 * 8 * 16
    assert whole[Kind.IFM] == 3 * 32 * 8 and whole[Kind.OFM] == 3 * 2 * 8 * 8
    assert [r.name for r in tensor_roles(layer)] == ["qk.in", "qk.b", "qk"]
    # Projections keep the batch as N and their weights shared by every sample.
    assert layer_dims(attention(batch=3)["q"], 3)["N"] == 3


def test_grouped_query_attention_reads_each_kv_head_once_for_its_query_heads():
    net = attention(tokens=8, hidden=64, heads=8, kv_heads=2)
    qk = net["qk"]
    assert qk.loops["G"] == 2 and qk.loops["Y"] == 4 * 8  # 4 query heads per K/V head, 8 tokens each
    assert qk.macs == 8 * 8 * 8 * 8  # the same MACs as 8 full heads
    dims = layer_dims(qk, 1)
    whole = footprints(np.array([dims[d] for d in "NGCKYXSR"]), qk)
    assert whole[Kind.WGT] == 2 * 8 * 8  # K of 2 heads, not 8
    assert net["k"].k == 2 * 8 and net["k"].weight_elems == 64 * 16


def test_vector_layers_count_their_operations_and_never_are_free():
    net = attention(tokens=16, hidden=64)
    counts = {"ln": 7, "q_rot": 3, "scale": 1, "softmax": 5, "res": 1}
    for name, per_element in counts.items():
        layer = net[name]
        assert layer.macs == 0 and layer.ops_per_point == per_element
        assert layer.ops == per_element * layer.ofmap.elems > 0
    assert net["softmax"].ofmap.elems == 4 * 16 * 16
    assert {net[n].op_class for n in counts} == {"norm", "rotary", "scale", "softmax", "eltwise"}
    assert all(m.ops >= 1 and m.bwd_ops >= 0 for m in VECTOR_MODES.values())


def test_the_operand_producers_are_written_to_dram():
    net = attention()
    assert {"k_rot", "v"} <= net.kept  # read as the "weights" of qk and av


@pytest.mark.parametrize("kwargs, message", [
    (dict(operand=None), "second operand must be one of"),
    (dict(operand="bias"), "second operand must be one of"),
    (dict(operand="fmap", s=3), "no filter window"),
])
def test_bad_matmuls_are_refused(kwargs, message):
    with pytest.raises(NetworkError, match=message):
        Layer("m", Op.MATMUL, c=8, k=8, h=4, w=1, **kwargs)


def test_only_a_matmul_has_a_second_operand():
    with pytest.raises(NetworkError, match="only a matmul"):
        Layer("c", Op.CONV, c=8, k=8, h=4, w=4, operand="weight")


def test_operands_of_another_layout_must_hold_as_many_elements():
    b = NetworkBuilder("bad", 1)
    q = b.input("q", 32, 8, 1)
    k = b.input("k", 32, 4, 1)  # 4 key positions where 8 are declared
    b.add_layer(Layer("qk", Op.MATMUL, c=32, k=2 * 8, h=8, w=1, groups=2, operand="fmap"),
                [Edge(q, "qk"), Edge(k, "qk", "b")])
    with pytest.raises(NetworkError, match=r"layer 'qk' port 'b': input 'k' 32x4x1 holds 128 elements but "
                                           r"32x8x1 \(256\) are expected"):
        b.build()


def test_training_of_attention_is_matmuls_and_vector_backward_layers():
    net = attention(tokens=16, hidden=64, heads=4, kv_heads=2)
    train = net.to_training()
    # dA = dY x B^T and dB = A^T x dY for every product: 3x the forward MACs
    # (q, k, v read the norm's output, a layer, so every product has both).
    assert train.macs == 3 * net.macs
    qk_b = train["qk.wgrad"]  # the gradient of K
    assert qk_b.phase == Phase.WGRAD and qk_b.out_shape == net["qk"].operand_shape
    assert {e.src for e in train.in_edges("k_rot.bwd")} == {"qk.wgrad", "k"}
    assert {e.src for e in train.in_edges("v.wgrad")} == {"ln", "av.wgrad"}
    assert {(e.src, e.port) for e in train.in_edges("av.bwd")} == {("o.bwd", "dy"), ("v", "b")}
    for name, mode in (("softmax.bwd", "softmax"), ("ln.gradsum", "add")):
        assert train[name].mode == mode
    assert train["softmax.bwd"].ops_per_point == VECTOR_MODES["softmax"].bwd_ops
    assert {"v", "softmax"} <= train.kept and "res" not in train.kept  # dV = P^T x dY reads the softmax


def test_describe_names_the_product():
    net = attention(tokens=16, hidden=64, heads=4)
    assert net["qk"].describe() == "matmul 4x [16x16] x [16x16] of fmaps"
    assert net["q"].describe() == "matmul [16x64] x [64x64] by weights"
    assert net["softmax"].describe() == "eltwise-softmax 1x 64x16x1"


def test_row_ranges_of_a_producer_are_checked():
    b = NetworkBuilder("rows", 1)
    x = b.input("x", 8, 5, 1)
    b.add_layer(Layer("first", Op.MATMUL, c=8, k=4, h=1, w=1, operand="weight"), [Edge(x, "first", rows=(0, 1))])
    assert b.build()["first"].macs == 8 * 4
    bad = NetworkBuilder("rows", 1)
    bad.input("x", 8, 5, 1)
    bad.add_layer(Layer("first", Op.MATMUL, c=8, k=4, h=1, w=1, operand="weight"), [Edge("x", "first", rows=(5, 6))])
    with pytest.raises(NetworkError, match=r"layer 'first': row range \[5, 6\) of 'x' is outside its 5 rows"):
        bad.build()


def test_a_convolution_reads_tokens_as_its_plane_but_no_other_reshape():
    def build(h, w):
        b = NetworkBuilder("plane", 1)
        b.input("x", 4, h, w)
        b.add_layer(Layer("c", Op.CONV, c=4, k=4, h=7, w=8), [Edge("x", "c")])
        return b.build()

    assert build(56, 1)["c"].ifmap.elems == 4 * 56  # 56 tokens: the 7 x 8 plane, flattened
    with pytest.raises(NetworkError, match=r"layer 'c': inputs 'x' 4x8x7 do not match the expected 4x7x8"):
        build(8, 7)
