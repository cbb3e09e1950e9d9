"""Transformer graphs built with onnx.helper the way exporters write them.

The node patterns follow what ``torch.onnx.export`` gives for Hugging Face's
BERT, GPT-2, ViT and Llama-style layers (opset 17, and 20 where ``Gelu`` is
native): biases as separate ``Add``s (BERT) or ``Gemm`` over a ``[batch *
tokens, features]`` view (GPT-2's Conv1D), heads split by ``Reshape`` +
``Transpose`` with the target computed from ``Shape``, an int64 attention mask
turned into an additive bias, causal masks by ``Where`` or ``Add``, GELU in
its ``Erf`` and ``Tanh`` forms, LayerNorm decomposed, rotary embedding by
``rotate_half`` (``Slice``/``Neg``/``Concat``) and grouped-query attention's
``repeat_kv`` (``Unsqueeze``/``Expand``/``Reshape``). Values are zeros: the
importer reads shapes, never values.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Graph:
    """Nodes, initializers and inputs of a test model; each node's output is ``t_<name>``."""

    def __init__(self, opset: int = 17) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.opset = opset

    def input(self, name: str, *shape: int | str, dtype=TensorProto.FLOAT) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, dtype, list(shape)))
        return name

    def const(self, name: str, *shape: int, dtype=np.float32) -> str:
        self.inits.append(numpy_helper.from_array(np.zeros(shape, dtype), name))
        return name

    def ints(self, name: str, values: list[int]) -> str:
        self.inits.append(numpy_helper.from_array(np.array(values, np.int64), name))
        return name

    def scalar(self, name: str, value: float) -> str:
        self.inits.append(numpy_helper.from_array(np.array(value, np.float32), name))
        return name

    def node(self, op: str, name: str, inputs: list[str], outputs: int = 1, **attrs):
        outs = [f"t_{name}" if outputs == 1 else f"t_{name}_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs

    # -- patterns exporters write

    def linear(self, name: str, x: str, cin: int, cout: int) -> str:
        """nn.Linear on a [batch, tokens, features] tensor: MatMul + bias Add."""
        y = self.node("MatMul", name, [x, self.const(f"{name}.w", cin, cout)])
        return self.node("Add", f"{name}.bias", [y, self.const(f"{name}.b", cout)])

    def conv1d(self, name: str, x: str, cin: int, cout: int, tokens: str) -> str:
        """GPT-2's Conv1D: view(-1, features), addmm (a Gemm), view back."""
        flat = self.node("Reshape", f"{name}.flat", [x, self.ints(f"{name}.flat_shape", [-1, cin])])
        y = self.node("Gemm", name, [flat, self.const(f"{name}.w", cin, cout), self.const(f"{name}.b", cout)])
        return self.node("Reshape", f"{name}.view", [y, self.shape_like(f"{name}.target", tokens, [cout])])

    def shape_like(self, name: str, x: str, tail: list[int]) -> str:
        """Concat(batch, tokens of ``x``, *tail): a reshape target from Shape arithmetic."""
        shape = self.node("Shape", f"{name}.shape", [x])
        dims = [self.node("Gather", f"{name}.g{i}", [shape, self.ints(f"{name}.i{i}", [i])], axis=0) for i in (0, 1)]
        return self.node("Concat", name, dims + [self.ints(f"{name}.tail", tail)], axis=0)

    def heads(self, name: str, x: str, heads: int, d: int, perm=(0, 2, 1, 3)) -> str:
        """[b, s, h*d] -> [b, h, s, d] (or [b, h, d, s] for K^T)."""
        r = self.node("Reshape", f"{name}.split", [x, self.shape_like(f"{name}.target", x, [heads, d])])
        return self.node("Transpose", f"{name}.t", [r], perm=list(perm))

    def merge(self, name: str, x: str, hidden: int, like: str) -> str:
        t = self.node("Transpose", f"{name}.t", [x], perm=[0, 2, 1, 3])
        return self.node("Reshape", name, [t, self.shape_like(f"{name}.target", like, [hidden])])

    def layernorm(self, name: str, x: str, hidden: int) -> str:
        return self.node("LayerNormalization", name, [x, self.const(f"{name}.g", hidden),
                                                       self.const(f"{name}.b", hidden)], axis=-1, epsilon=1e-5)

    def decomposed_layernorm(self, name: str, x: str, hidden: int) -> str:
        mean = self.node("ReduceMean", f"{name}.mean", [x], axes=[-1])
        d = self.node("Sub", f"{name}.sub", [x, mean])
        var = self.node("ReduceMean", f"{name}.var", [self.node("Pow", f"{name}.pow", [d, self.scalar(
            f"{name}.two", 2.0)])], axes=[-1])
        std = self.node("Sqrt", f"{name}.sqrt", [self.node("Add", f"{name}.eps", [var, self.scalar(
            f"{name}.e", 1e-5)])])
        n = self.node("Div", f"{name}.div", [d, std])
        return self.node("Add", name, [self.node("Mul", f"{name}.gamma", [n, self.const(f"{name}.g", hidden)]),
                                      self.const(f"{name}.b", hidden)])

    def gelu_erf(self, name: str, x: str) -> str:
        e = self.node("Erf", f"{name}.erf", [self.node("Div", f"{name}.div", [x, self.scalar(f"{name}.r2", 1.41)])])
        h = self.node("Mul", f"{name}.mul", [x, self.node("Add", f"{name}.one", [e, self.scalar(f"{name}.1", 1.0)])])
        return self.node("Mul", name, [h, self.scalar(f"{name}.half", 0.5)])

    def gelu_tanh(self, name: str, x: str) -> str:
        cube = self.node("Pow", f"{name}.cube", [x, self.scalar(f"{name}.3", 3.0)])
        inner = self.node("Add", f"{name}.add", [x, self.node("Mul", f"{name}.c", [cube, self.scalar(
            f"{name}.k", 0.044715)])])
        t = self.node("Tanh", f"{name}.tanh", [self.node("Mul", f"{name}.s", [inner, self.scalar(f"{name}.r", 0.79)])])
        h = self.node("Mul", f"{name}.half", [self.scalar(f"{name}.h", 0.5), x])
        return self.node("Mul", name, [h, self.node("Add", f"{name}.one", [t, self.scalar(f"{name}.1", 1.0)])])

    def save(self, tmp_path, outputs: list[str], filename: str = "model.onnx"):
        graph = helper.make_graph(self.nodes, "main_graph", self.inputs, [], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        inferred = onnx.shape_inference.infer_shapes(model).graph.value_info
        for out in outputs:
            model.graph.output.extend(v for v in inferred if v.name == out)
        onnx.checker.check_model(model)
        path = tmp_path / filename
        onnx.save(model, path)
        return path


def bert_layer(tmp_path, hidden=768, heads=12, ffn=3072):
    """One BERT encoder layer (Hugging Face BertLayer), int64 attention mask, symbolic batch and sequence."""
    g, d = Graph(), hidden // heads
    x = g.input("hidden_states", "batch", "sequence", hidden)
    mask = g.input("attention_mask", "batch", "sequence", dtype=TensorProto.INT64)
    m = g.node("Unsqueeze", "mask_unsqueeze", [mask, g.ints("mask_axes", [1, 2])])
    m = g.node("Cast", "mask_cast", [m], to=TensorProto.FLOAT)
    m = g.node("Sub", "mask_invert", [g.scalar("one", 1.0), m])
    bias = g.node("Mul", "mask_scale", [m, g.scalar("big", -10000.0)])
    q = g.heads("q", g.linear("query", x, hidden, hidden), heads, d)
    kt = g.heads("k", g.linear("key", x, hidden, hidden), heads, d, perm=(0, 2, 3, 1))
    v = g.heads("v", g.linear("value", x, hidden, hidden), heads, d)
    s = g.node("MatMul", "scores", [q, kt])
    s = g.node("Add", "masked", [g.node("Div", "scaled", [s, g.scalar("sqrt_d", 8.0)]), bias])
    p = g.node("Dropout", "drop", [g.node("Softmax", "softmax", [s], axis=-1)])
    ctx = g.merge("context", g.node("MatMul", "context_mm", [p, v]), hidden, x)
    h = g.layernorm("ln1", g.node("Add", "res1", [g.linear("attn_out", ctx, hidden, hidden), x]), hidden)
    f = g.linear("ffn_out", g.gelu_erf("gelu", g.linear("ffn_in", h, hidden, ffn)), ffn, hidden)
    out = g.layernorm("ln2", g.node("Add", "res2", [f, h]), hidden)
    return g.save(tmp_path, [out], "bert_layer.onnx")


def gpt2_block(tmp_path, mask="where", hidden=768, heads=12, positions=1024):
    """One GPT-2 block: fused QKV Conv1D split in three, causal mask by Where (or Add), GELU tanh form."""
    g, d = Graph(), hidden // heads
    x = g.input("hidden_states", "batch", "sequence", hidden)
    h = g.layernorm("ln_1", x, hidden)
    qkv = g.conv1d("c_attn", h, hidden, 3 * hidden, x)
    q, k, v = g.node("Split", "split_qkv", [qkv, g.ints("qkv_sizes", [hidden] * 3)], outputs=3, axis=2)
    q, kt, v = g.heads("q", q, heads, d), g.heads("k", k, heads, d, perm=(0, 2, 3, 1)), g.heads("v", v, heads, d)
    s = g.node("Div", "scaled", [g.node("MatMul", "attn_weights", [q, kt]), g.scalar("sqrt_d", 8.0)])
    # The causal mask: a slice of the registered bias buffer, sized by the key length.
    shape = g.node("Shape", "s_shape", [s])
    n = g.node("Gather", "s_len", [shape, g.ints("last", [3])], axis=0)
    if mask == "where":
        causal = g.node("Slice", "causal", [g.const("bias", 1, 1, positions, positions, dtype=np.bool_),
                                            g.ints("zero2", [0, 0]), g.node("Concat", "ends", [n, n], axis=0),
                                            g.ints("axes23", [2, 3])])
        s = g.node("Where", "masked", [causal, s, g.scalar("min_value", -3.4e38)])
    else:
        causal = g.node("Slice", "causal", [g.const("bias", 1, 1, positions, positions),
                                            g.ints("zero2", [0, 0]), g.node("Concat", "ends", [n, n], axis=0),
                                            g.ints("axes23", [2, 3])])
        s = g.node("Add", "masked", [s, causal])
    p = g.node("Softmax", "softmax", [s], axis=-1)
    a = g.merge("merge", g.node("MatMul", "attn_output", [p, v]), hidden, x)
    r = g.node("Add", "res1", [g.conv1d("c_proj", a, hidden, hidden, x), x])
    f = g.conv1d("mlp_c_fc", g.layernorm("ln_2", r, hidden), hidden, 4 * hidden, x)
    out = g.node("Add", "res2", [g.conv1d("mlp_c_proj", g.gelu_tanh("gelu", f), 4 * hidden, hidden, x), r])
    return g.save(tmp_path, [out], f"gpt2_{mask}.onnx")


def vit(tmp_path, hidden=768, heads=12, ffn=3072, patch=16, image=224, classes=1000, layers=1):
    """ViT-B/16 (Hugging Face ViTModel): patch convolution, class token, position embedding, native Gelu."""
    g, d = Graph(opset=20), hidden // heads
    tokens = (image // patch) ** 2 + 1
    pixels = g.input("pixel_values", "batch", 3, image, image)
    e = g.node("Conv", "patch_embed", [pixels, g.const("patch.w", hidden, 3, patch, patch), g.const("patch.b", hidden)],
               kernel_shape=[patch, patch], strides=[patch, patch])
    e = g.node("Transpose", "patches", [g.node("Reshape", "flat", [e, g.ints("flat_shape", [0, hidden, -1])])],
               perm=[0, 2, 1])
    batch = g.node("Gather", "batch", [g.node("Shape", "pix_shape", [pixels]), g.ints("i0", [0])], axis=0)
    cls = g.node("Expand", "cls_expand", [g.const("cls_token", 1, 1, hidden), g.node(
        "Concat", "cls_shape", [batch, g.ints("one_hidden", [1, hidden])], axis=0)])
    x = g.node("Add", "pos_embed", [g.node("Concat", "tokens", [cls, e], axis=1),
                                    g.const("position_embeddings", 1, tokens, hidden)])
    for i in range(layers):
        h = g.layernorm(f"l{i}.ln_before", x, hidden)
        q = g.heads(f"l{i}.q", g.linear(f"l{i}.query", h, hidden, hidden), heads, d)
        kt = g.heads(f"l{i}.k", g.linear(f"l{i}.key", h, hidden, hidden), heads, d, perm=(0, 2, 3, 1))
        v = g.heads(f"l{i}.v", g.linear(f"l{i}.value", h, hidden, hidden), heads, d)
        s = g.node("Div", f"l{i}.scaled", [g.node("MatMul", f"l{i}.scores", [q, kt]), g.scalar(f"l{i}.sd", 8.0)])
        p = g.node("Softmax", f"l{i}.softmax", [s], axis=-1)
        ctx = g.merge(f"l{i}.context", g.node("MatMul", f"l{i}.context_mm", [p, v]), hidden, x)
        x = g.node("Add", f"l{i}.res1", [g.linear(f"l{i}.attn_out", ctx, hidden, hidden), x])
        f = g.node("Gelu", f"l{i}.gelu", [g.linear(f"l{i}.ffn_in", g.layernorm(f"l{i}.ln_after", x, hidden),
                                                   hidden, ffn)])
        x = g.node("Add", f"l{i}.res2", [g.linear(f"l{i}.ffn_out", f, ffn, hidden), x])
    cls_out = g.node("Gather", "cls_out", [g.layernorm("ln_final", x, hidden), g.ints("first", [0])], axis=1)
    logits = g.node("Gemm", "classifier", [g.node("Squeeze", "squeeze", [cls_out, g.ints("ax1", [1])]),
                                           g.const("head.w", classes, hidden), g.const("head.b", classes)], transB=1)
    return g.save(tmp_path, [logits], "vit.onnx")


def gqa_block(tmp_path, hidden=96, heads=6, kv_heads=2, ffn=160):
    """An odd-sized Llama-style block: decomposed LayerNorm, rotary embedding, grouped-query attention
    with repeat_kv, a causal mask added, SwiGLU."""
    g, d, r = Graph(), hidden // heads, heads // kv_heads
    x = g.input("x", "batch", "sequence", hidden)
    pos = g.input("position_ids", "batch", "sequence", dtype=TensorProto.INT64)
    cos = g.node("Unsqueeze", "cos", [g.node("Gather", "cos_rows", [g.const("cos_cached", 64, d), pos], axis=0),
                                      g.ints("ax_1", [1])])
    sin = g.node("Unsqueeze", "sin", [g.node("Gather", "sin_rows", [g.const("sin_cached", 64, d), pos], axis=0),
                                      "ax_1"])
    h = g.decomposed_layernorm("norm1", x, hidden)

    def rotary(name: str, t: str) -> str:
        half1 = g.node("Slice", f"{name}.x1", [t, g.ints(f"{name}.s1", [0]), g.ints(f"{name}.e1", [d // 2]),
                                               g.ints(f"{name}.a", [-1])])
        half2 = g.node("Slice", f"{name}.x2", [t, g.ints(f"{name}.s2", [d // 2]), g.ints(f"{name}.e2", [d]),
                                               f"{name}.a"])
        rot = g.node("Concat", f"{name}.rot", [g.node("Neg", f"{name}.neg", [half2]), half1], axis=-1)
        return g.node("Add", name, [g.node("Mul", f"{name}.cos", [t, cos]), g.node("Mul", f"{name}.sin", [rot, sin])])

    def repeat_kv(name: str, t: str) -> str:  # [b, kv, s, d] -> [b, kv * r, s, d]
        u = g.node("Unsqueeze", f"{name}.u", [t, g.ints(f"{name}.ax", [2])])
        shape = g.node("Shape", f"{name}.shape", [u])
        bs = g.node("Gather", f"{name}.b", [shape, g.ints(f"{name}.i0", [0])], axis=0)
        ss = g.node("Gather", f"{name}.s", [shape, g.ints(f"{name}.i3", [3])], axis=0)
        e = g.node("Expand", f"{name}.expand", [u, g.node("Concat", f"{name}.to", [
            bs, g.ints(f"{name}.kvr", [kv_heads, r]), ss, g.ints(f"{name}.d", [d])], axis=0)])
        return g.node("Reshape", name, [e, g.node("Concat", f"{name}.flat", [
            bs, g.ints(f"{name}.h", [heads]), ss, g.ints(f"{name}.dd", [d])], axis=0)])

    q = rotary("q_rot", g.heads("q", g.node("MatMul", "q_proj", [h, g.const("wq", hidden, hidden)]), heads, d))
    k = rotary("k_rot", g.heads("k", g.node("MatMul", "k_proj", [h, g.const("wk", hidden, kv_heads * d)]), kv_heads, d))
    v = g.heads("v", g.node("MatMul", "v_proj", [h, g.const("wv", hidden, kv_heads * d)]), kv_heads, d)
    kt = g.node("Transpose", "k_t", [repeat_kv("k_rep", k)], perm=[0, 1, 3, 2])
    s = g.node("Mul", "scaled", [g.node("MatMul", "qk", [q, kt]), g.scalar("inv_sqrt_d", 0.25)])
    shape = g.node("Shape", "s_shape", [s])
    n = g.node("Gather", "s_len", [shape, g.ints("last", [3])], axis=0)
    causal = g.node("Slice", "causal", [g.const("mask_cached", 1, 1, 64, 64), g.ints("zero2", [0, 0]),
                                        g.node("Concat", "ends", [n, n], axis=0), g.ints("axes23", [2, 3])])
    p = g.node("Softmax", "softmax", [g.node("Add", "masked", [s, causal])], axis=-1)
    a = g.merge("merge", g.node("MatMul", "av", [p, repeat_kv("v_rep", v)]), hidden, x)
    r1 = g.node("Add", "res1", [g.node("MatMul", "o_proj", [a, g.const("wo", hidden, hidden)]), x])
    h2 = g.decomposed_layernorm("norm2", r1, hidden)
    gate = g.node("MatMul", "gate_proj", [h2, g.const("wg", hidden, ffn)])
    act = g.node("Mul", "silu", [gate, g.node("Sigmoid", "sigmoid", [gate])])
    up = g.node("Mul", "gated", [act, g.node("MatMul", "up_proj", [h2, g.const("wu", hidden, ffn)])])
    out = g.node("Add", "res2", [g.node("MatMul", "down_proj", [up, g.const("wd", ffn, hidden)]), r1])
    return g.save(tmp_path, [out], "gqa.onnx")
