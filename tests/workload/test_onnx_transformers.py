"""Transformer graphs from ONNX: MACs against hand counts, attention products without weights,
every vector op a layer, one error line for what kapla cannot cost."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from kapla.errors import NetworkError, UnsupportedOpError
from kapla.workload.layer import Op, Operand
from kapla.workload.onnx_import import load_onnx
from tests.workload.onnx_transformers import Graph, bert_layer, gpt2_block, gqa_block, vit


def products(net):
    """The matrix products of two fmaps (Q x K^T and scores x V)."""
    return [layer for layer in net if layer.op == Op.MATMUL and layer.operand == Operand.FMAP]


def assert_attention(net, heads, kv_heads, queries, keys, d, blocks=1):
    """Every Q x K^T and scores x V is a layer with its MACs and no weights."""
    found = products(net)
    assert len(found) == 2 * blocks
    for layer in found:
        assert not layer.has_weights and layer.weight_elems == 0
        assert layer.macs == heads * queries * keys * d
        assert layer.groups == kv_heads and layer.h == heads // kv_heads * queries
        assert {e.port for e in net.in_edges(layer.name)} == {"in", "b"}


def by_class(net):
    out: dict[str, list[str]] = {}
    for layer in net:
        out.setdefault(layer.op_class, []).append(layer.name)
    return out


def test_bert_layer_with_int64_mask(tmp_path):
    s, h, f, heads = 128, 768, 3072, 12
    net = load_onnx(bert_layer(tmp_path), seq=s)
    assert net.batch == 1 and set(net.inputs) == {"hidden_states"}  # the mask is no feature map
    projections = 4 * s * h * h + 2 * s * h * f
    attention = 2 * heads * s * s * (h // heads)
    assert net.macs == projections + attention == 931_135_488
    assert sum(layer.weight_elems for layer in net) == 4 * h * h + 2 * h * f  # biases excluded
    assert_attention(net, heads, heads, s, s, h // heads)
    assert by_class(net) == {
        "projection": ["query", "key", "value", "attn_out", "ffn_in", "ffn_out"],
        "attention": ["scores", "context_mm"],
        "scale": ["scaled", "masked"],  # 1/sqrt(d), then the mask added
        "softmax": ["softmax"], "eltwise": ["res1", "res2"], "norm": ["ln1", "ln2"], "activation": ["gelu"],
    }
    assert net["gelu"].mode == "gelu" and net["gelu"].ops == 5 * s * f  # the Erf form, one layer
    assert net["softmax"].ops == 5 * heads * s * s
    assert net.producers("context_mm") == ("softmax", "value")


def test_batch_and_sequence_bind_the_symbolic_dims(tmp_path):
    path = bert_layer(tmp_path, hidden=64, heads=4, ffn=128)
    short, long = load_onnx(path, seq=16, batch=8), load_onnx(path, seq=32)
    assert short.batch == 8 and long.batch == 1
    # projections grow with the sequence, attention with its square
    assert long["query"].macs == 2 * short["query"].macs
    assert long["scores"].macs == 4 * short["scores"].macs
    with pytest.raises(NetworkError, match=r"graph input 'hidden_states' has shape \[1, \?, 64\];.*--seq") as info:
        load_onnx(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("mask", ["where", "add"])
def test_gpt2_block_with_fused_qkv_split_and_causal_mask(tmp_path, mask):
    s, h, heads = 64, 768, 12
    net = load_onnx(gpt2_block(tmp_path, mask), seq=s, batch=2)
    assert net.batch == 2
    assert net.macs == 2 * (12 * s * h * h + 2 * heads * s * s * (h // heads))
    assert_attention(net, heads, heads, s, s, h // heads)
    # The Gemm over the [batch * tokens, features] view is one projection of every token,
    # and the Split hands Q, K and V their thirds of its channels.
    assert net["c_attn"].op == Op.MATMUL and net["c_attn"].h == s and net["c_attn"].k == 3 * h
    edges = {(e.port, e.channels) for e in net.in_edges("attn_weights")}
    assert edges == {("in", (0, h)), ("b", (h, 2 * h))}
    assert [(e.src, e.channels) for e in net.in_edges("attn_output") if e.port == "b"] == [("c_attn", (2 * h, 3 * h))]
    assert net["masked"].mode == "scale" and net["gelu"].mode == "gelu"  # the Tanh form
    assert by_class(net)["norm"] == ["ln_1", "ln_2"]


def test_vit_with_class_token_and_gelu(tmp_path):
    h, f, heads, tokens = 768, 3072, 12, 197
    net = load_onnx(vit(tmp_path))
    patch = h * 3 * 16 * 16 * 196
    block = 4 * tokens * h * h + 2 * tokens * h * f + 2 * heads * tokens * tokens * (h // heads)
    assert net.macs == patch + block + h * 1000
    assert_attention(net, heads, heads, tokens, tokens, h // heads)
    assert net.inputs["tokens.0"].elems == h  # the class token, read with each sample
    assert net.producers("pos_embed") == ("tokens.0", "patch_embed")
    assert [(e.src, e.rows) for e in net.in_edges("classifier")] == [("ln_final", (0, 1))]  # the class token's row
    assert net["l0.gelu"].mode == "gelu"


def test_vit_base_16_has_its_published_macs(tmp_path):
    """ViT-B/16 at 224 x 224: 17.6 G multiply-accumulates (Dosovitskiy et al.'s 'FLOPs')."""
    net = load_onnx(vit(tmp_path, layers=12))
    assert net.macs == pytest.approx(17.56e9, rel=0.01)
    assert len(products(net)) == 24
    assert sum(layer.weight_elems for layer in net) == pytest.approx(86.0e6, rel=0.01)


def test_odd_sized_gqa_block_with_decomposed_layernorm(tmp_path):
    s, h, heads, kv, d, f = 10, 96, 6, 2, 16, 160
    net = load_onnx(gqa_block(tmp_path), seq=s)
    assert set(net.inputs) == {"x"}  # position ids only look up the rotary tables
    assert net.macs == 2 * s * h * h + 2 * s * h * kv * d + 2 * heads * s * s * d + 3 * s * h * f
    assert_attention(net, heads, kv, s, s, d)
    # each K/V head is read once for its 3 query heads: K^T of 2 heads, not 6
    assert net["qk"].loops["G"] == 2 and net["qk"].operand_shape.elems == kv * d * s
    assert net.producers("qk") == ("q_rot", "k_rot") and net.producers("av") == ("softmax", "v_proj")
    # ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add: one layer norm each
    assert [(layer.name, layer.mode) for layer in net if layer.op_class == "norm"] == [
        ("norm1", "layernorm"), ("norm2", "layernorm")]
    assert net["q_rot"].mode == net["k_rot"].mode == "rotary"
    assert net["silu"].mode == "silu" and net["gated"].mode == "mul"


def test_every_vector_op_of_the_graphs_is_a_layer_that_does_work(tmp_path):
    for path, seq in ((bert_layer(tmp_path), 32), (gpt2_block(tmp_path), 32), (gqa_block(tmp_path), 10)):
        net = load_onnx(path, seq=seq)
        for layer in net:
            assert layer.ops > 0
            assert layer.macs > 0 or layer.op == Op.ELTWISE


def _save_unchecked(tmp_path, nodes, inputs, outputs, inits=(), opsets=(("", 17),)):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    path = tmp_path / "bad.onnx"
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("op, domain", [("Loop", ""), ("If", ""), ("Scan", ""),
                                        ("FusedAttention", "com.example")])
def test_an_op_kapla_cannot_cost_is_one_error_naming_it(tmp_path, op, domain):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    soft = helper.make_node("Softmax", ["x"], ["s"], name="soft")
    node = helper.make_node(op, ["s"], ["y"], name="the_node", domain=domain)
    opsets = (("", 17),) + (((domain, 1),) if domain else ())
    with pytest.raises(UnsupportedOpError) as info:
        load_onnx(_save_unchecked(tmp_path, [soft, node], [x], [y], opsets=opsets))
    shown = f"{domain}.{op}" if domain else op
    assert f"node 'the_node' (op {shown}) is not supported" in str(info.value)
    assert "\n" not in str(info.value)


def test_a_slice_kapla_cannot_map_is_named(tmp_path):
    g = Graph()
    x = g.input("x", 1, 4, 8, 16)  # [batch, heads, tokens, head dim] straight from a graph input
    half = g.node("Slice", "half", [x, g.ints("s", [0]), g.ints("e", [8]), g.ints("a", [-1])])
    out = g.node("MatMul", "mm", [half, g.const("w", 8, 8)])
    with pytest.raises(UnsupportedOpError, match=r"'t_half' is a slice of \['x'\] that is no channel or row range"):
        load_onnx(g.save(tmp_path, [out]))


def test_an_embedding_lookup_is_a_network_input(tmp_path):
    g = Graph()
    ids = g.input("input_ids", "batch", "sequence", dtype=TensorProto.INT64)
    e = g.node("Gather", "embed", [g.const("table", 100, 32), ids], axis=0)
    out = g.node("Softmax", "sm", [g.node("MatMul", "proj", [e, g.const("w", 32, 32)])], axis=-1)
    net = load_onnx(g.save(tmp_path, [out]), seq=12)
    assert net.inputs == {"t_embed": net.inputs["t_embed"]} and net.inputs["t_embed"].elems == 12 * 32
    assert net["proj"].macs == 12 * 32 * 32 and net["sm"].ops == 5 * 12 * 32


def test_grouped_value_products_read_the_unrepeated_heads_only(tmp_path):
    net = load_onnx(gqa_block(tmp_path, hidden=64, heads=8, kv_heads=1, ffn=32), seq=5)
    assert net["av"].groups == 1 and net["av"].h == 8 * 5  # multi-query attention: one K/V head
    assert np.prod([net["av"].loops[d] for d in "GCK"]) == 5 * 8  # V: one head of 5 tokens x 8


def test_an_imported_block_schedules_with_every_vector_layer_costed(tmp_path):
    import kapla
    from kapla.model.hardware import MAC

    path = gqa_block(tmp_path, hidden=32, heads=4, kv_heads=2, ffn=48)
    result = kapla.schedule(str(path), "edge", seq=8, jobs=1)
    assert result.valid and len(result.layers) == 20
    for lr in result.layers:
        assert lr.cost.energy[MAC] > 0 and lr.cost.time > 0


def test_training_of_imported_blocks(tmp_path):
    gpt2 = load_onnx(gpt2_block(tmp_path, hidden=64, heads=4), seq=8)
    train = gpt2.to_training()
    assert train.macs == 3 * gpt2.macs  # every product has both gradients: the block starts with a norm
    # The gradients of Q, K and V (the Split's thirds) are put back together in channel order.
    assert [e.src for e in train.in_edges("c_attn.wgrad") if e.port == "dy"] == [
        "attn_weights.bwd", "attn_weights.wgrad", "attn_output.wgrad"]
    vit_net = load_onnx(vit(tmp_path, hidden=64, heads=4, ffn=128, patch=16, image=64, classes=10))
    train = vit_net.to_training()
    # Only the class token's row reaches the classifier: the other 16 rows' gradient is zero, read from DRAM.
    assert train.inputs["ln_final.grad1"].elems == 16 * 64
    assert [(e.src, e.rows) for e in train.in_edges("patch_embed.wgrad") if e.port == "dy"] == [
        ("pos_embed.bwd", (1, 17))]
    gqa = load_onnx(gqa_block(tmp_path), seq=6)
    assert gqa.to_training().macs == 3 * gqa.macs


def test_shared_element_wise_steps_become_layers_once(tmp_path):
    g = Graph()
    x = g.input("x", 1, 4, 8, 16)  # [batch, heads, tokens, keys]: scores from elsewhere
    mask = g.input("mask", 1, 1, 1, 16, dtype=TensorProto.INT64)
    s = g.node("Mul", "scaled", [x, g.scalar("half", 0.5)])
    bias = g.node("Cast", "bias", [mask], to=TensorProto.FLOAT)
    a = g.node("Softmax", "masked_softmax", [g.node("Add", "masked", [s, bias])], axis=-1)
    b = g.node("Softmax", "plain_softmax", [s], axis=-1)  # the scaled scores read a second time
    halves = g.node("Split", "halves", [x, g.ints("sizes", [8, 8])], outputs=2, axis=-1)
    back = g.node("Concat", "back", list(halves), axis=-1)  # cut and put back as it was: no work
    c = g.node("Softmax", "again", [back], axis=-1)
    net = load_onnx(g.save(tmp_path, [a, b, c]))
    assert [(layer.name, layer.mode) for layer in net] == [
        ("scaled", "scale"), ("masked", "scale"), ("masked_softmax", "softmax"), ("plain_softmax", "softmax"),
        ("again", "softmax")]
    assert net.producers("plain_softmax") == ("scaled",) and net.producers("again") == ("x",)


def test_bert_embeddings_summed_from_three_tables_are_the_input(tmp_path):
    g = Graph()
    ids = g.input("input_ids", "batch", "sequence", dtype=TensorProto.INT64)
    types = g.input("token_type_ids", "batch", "sequence", dtype=TensorProto.INT64)
    length = g.node("Gather", "len", [g.node("Shape", "ids_shape", [ids]), g.ints("one", [1])], axis=0)
    positions = g.node("Slice", "position_ids", [g.const("position_buffer", 1, 512, dtype=np.int64),
                                                 g.ints("zero", [0]), length, g.ints("axis1", [1])])
    words = g.node("Gather", "words", [g.const("word_embeddings", 1000, 64), ids], axis=0)
    kinds = g.node("Gather", "kinds", [g.const("type_embeddings", 2, 64), types], axis=0)
    where = g.node("Gather", "where", [g.const("position_embeddings", 512, 64), positions], axis=0)
    summed = g.node("Add", "embeddings", [g.node("Add", "words_kinds", [words, kinds]), where])
    out = g.node("MatMul", "proj", [g.layernorm("emb_ln", summed, 64), g.const("w", 64, 64)])
    net = load_onnx(g.save(tmp_path, [out]), seq=12)
    assert list(net.inputs) == ["t_embeddings"] and net.inputs["t_embeddings"].elems == 12 * 64
    assert [layer.name for layer in net] == ["emb_ln", "proj"]


def test_decode_with_a_kv_cache_concatenated_to_the_new_token(tmp_path):
    """GPT-2 style decode: past keys and values [batch, heads, past, dim] are graph inputs,
    the new token's K and V are concatenated to them along the tokens."""
    h, heads, past = 64, 4, 20
    g, d = Graph(), h // heads
    x = g.input("hidden_states", "batch", 1, h)
    past_k, past_v = g.input("past_key", "batch", heads, past, d), g.input("past_value", "batch", heads, past, d)
    q = g.heads("q", g.linear("query", x, h, h), heads, d)
    k = g.node("Concat", "present_key", [past_k, g.heads("k", g.linear("key", x, h, h), heads, d)], axis=2)
    v = g.node("Concat", "present_value", [past_v, g.heads("v", g.linear("value", x, h, h), heads, d)], axis=2)
    kt = g.node("Transpose", "k_t", [k], perm=[0, 1, 3, 2])
    p = g.node("Softmax", "softmax", [g.node("MatMul", "scores", [q, kt])], axis=-1)
    out = g.linear("out", g.merge("context", g.node("MatMul", "context_mm", [p, v]), h, x), h, h)
    net = load_onnx(g.save(tmp_path, [out, k, v]))
    assert_attention(net, heads, heads, 1, past + 1, d)
    assert net.producers("scores") == ("query", "past_key", "key")
    assert net.producers("context_mm") == ("softmax", "past_value", "value")
    assert net.macs == 4 * h * h + 2 * heads * (past + 1) * d
