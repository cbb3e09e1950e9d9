"""Transformers: BERT-base, GPT-2 small, a Llama-3-8B-style decoder and ViT-B/16.

Every layer is a MATMUL or a vector layer (see :mod:`kapla.workload.layer`):
a token sequence is ``hidden`` channels by ``tokens`` rows; projections are
matmuls by weights, ``Q x K^T`` and ``scores x V`` matmuls of two fmaps (no
weights), and softmax, norms, activations, scaling, masks, rotary embedding
and residual adds are vector layers that cost their operations.

Decoders come in two modes: *prefill* of ``tokens`` tokens (causal mask,
the whole prompt at once) and *decode* of one token against a KV cache of
``cache`` past tokens per layer, which the network reads as inputs (from
DRAM) beside the new token's K and V.

Token embeddings are looked up, not computed: the embedded tokens are the
network's input, and the tables are not weights of any layer (a decoder's
output projection to the vocabulary is, tied or not). Biases and the norms'
scales are left out, as for every kapla layer, and so is the count of
parameters they hold (under 0.2 % of each model's).
"""

from __future__ import annotations

from dataclasses import dataclass

from kapla.workload.layer import Layer, Op, Operand
from kapla.workload.network import Edge, Network, NetworkBuilder


@dataclass(frozen=True)
class Config:
    """The dimensions of a transformer stack."""

    hidden: int
    heads: int
    ffn: int
    layers: int
    kv_heads: int = 0  # 0: as many as the query heads
    norm: str = "layernorm"
    act: str = "gelu"  # gelu: one FFN matmul in, one out; silu: SwiGLU (gate, up, down)
    rotary: bool = False
    causal: bool = False
    post_norm: bool = False  # BERT: the norm after each residual add; the others before each branch

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv(self) -> int:
        return self.kv_heads or self.heads


BERT_BASE = Config(hidden=768, heads=12, ffn=3072, layers=12, post_norm=True)
GPT2_SMALL = Config(hidden=768, heads=12, ffn=3072, layers=12, causal=True)
VIT_B16 = Config(hidden=768, heads=12, ffn=3072, layers=12)
LLAMA3_8B = Config(hidden=4096, heads=32, ffn=14336, layers=32, kv_heads=8, norm="rmsnorm", act="silu",
                   rotary=True, causal=True)
GPT2_VOCAB, LLAMA3_VOCAB = 50257, 128256


def _block(b: NetworkBuilder, cfg: Config, x: str, tokens: int, p: str, cache: int = 0) -> str:
    """One pre- or post-norm block on ``x`` (``tokens`` new tokens); returns its output.

    BERT is post-norm (norm after each residual add), GPT-2, ViT and Llama
    pre-norm. With ``cache`` > 0 the keys and values of ``cache`` past
    tokens are read as inputs beside the new ones.
    """
    d, kv, r = cfg.head_dim, cfg.kv, cfg.heads // cfg.kv
    pre = not cfg.post_norm
    h = b.eltwise(f"{p}.norm1", [x], cfg.norm) if pre else x
    q = b.matmul(f"{p}.q", h, cfg.hidden)
    k = b.matmul(f"{p}.k", h, kv * d)
    v = b.matmul(f"{p}.v", h, kv * d)
    if cfg.rotary:
        q, k = b.eltwise(f"{p}.q_rot", [q], "rotary"), b.eltwise(f"{p}.k_rot", [k], "rotary")
    keys, values = [k], [v]
    if cache:
        keys.insert(0, b.input(f"{p}.k_cache", kv * d, cache, 1))
        values.insert(0, b.input(f"{p}.v_cache", kv * d, cache, 1))
    length = tokens + cache
    s = _product(b, f"{p}.qk", q, keys, heads=kv, inner=d, rows=r * tokens, out=length)
    s = b.eltwise(f"{p}.scale", [s], "scale")  # 1 / sqrt(head dim)
    if cfg.causal and tokens > 1:
        s = b.eltwise(f"{p}.mask", [s], "scale")  # the causal mask added
    s = b.eltwise(f"{p}.softmax", [s], "softmax")
    a = _product(b, f"{p}.av", s, values, heads=kv, inner=length, rows=r * tokens, out=d)
    o = b.matmul(f"{p}.o", a, cfg.hidden, inner=cfg.hidden, rows=tokens)
    x = b.eltwise(f"{p}.res1", [x, o], "add")
    if not pre:
        x = b.eltwise(f"{p}.norm1", [x], cfg.norm)
    h = b.eltwise(f"{p}.norm2", [x], cfg.norm) if pre else x
    if cfg.act == "silu":
        gate = b.eltwise(f"{p}.silu", [b.matmul(f"{p}.gate", h, cfg.ffn)], "silu")
        f = b.eltwise(f"{p}.gated", [gate, b.matmul(f"{p}.up", h, cfg.ffn)], "mul")
    else:
        f = b.eltwise(f"{p}.gelu", [b.matmul(f"{p}.ffn_in", h, cfg.ffn)], "gelu")
    x = b.eltwise(f"{p}.res2", [x, b.matmul(f"{p}.ffn_out", f, cfg.hidden)], "add")
    return x if pre else b.eltwise(f"{p}.norm2", [x], cfg.norm)


def _product(b: NetworkBuilder, name: str, a: str, operand: list[str], heads: int, inner: int, rows: int,
             out: int) -> str:
    """A matmul of two fmaps whose operand may be several producers (a KV cache and the new tokens)."""
    layer = Layer(name, Op.MATMUL, heads * inner, heads * out, rows, 1, groups=heads, operand=Operand.FMAP)
    return b.add_layer(layer, [Edge(a, name)] + [Edge(s, name, "b") for s in operand])


def _stack(b: NetworkBuilder, cfg: Config, x: str, tokens: int, cache: int = 0, layers: int | None = None) -> str:
    for i in range(cfg.layers if layers is None else layers):
        x = _block(b, cfg, x, tokens, f"l{i}", cache)
    return x


def decoder(name: str, cfg: Config, batch: int, tokens: int, cache: int = 0, layers: int | None = None,
            vocab: int = 0) -> Network:
    """A decoder of ``cfg``'s dimensions: prefill of ``tokens`` tokens, or with a KV ``cache`` of that many
    past tokens, decode of ``tokens`` (1) new ones; ``layers`` blocks (None: ``cfg.layers``), then the
    final norm and the projection to a ``vocab`` of that many tokens (0: none)."""
    b = NetworkBuilder(name, batch)
    x = _stack(b, cfg, b.input("tokens", cfg.hidden, tokens, 1), tokens, cache, layers)  # embedded tokens
    if vocab:  # the final norm and the projection to the vocabulary (of every token, as in training)
        b.matmul("lm_head", b.eltwise("norm_f", [x], cfg.norm), vocab)
    return b.build()


def bert_base(batch: int = 64, tokens: int = 128) -> Network:
    """BERT-base (Devlin et al., 2019): 12 post-norm encoder layers, hidden 768, 12 heads, and the
    pooler (a projection and a tanh) on the class token."""
    b = NetworkBuilder("bert_base" if tokens == 128 else f"bert_base_{tokens}", batch)
    x = _stack(b, BERT_BASE, b.input("tokens", BERT_BASE.hidden, tokens, 1), tokens)
    pooler = Layer("pooler", Op.MATMUL, BERT_BASE.hidden, BERT_BASE.hidden, 1, 1, operand=Operand.WEIGHT)
    b.add_layer(pooler, [Edge(x, "pooler", rows=(0, 1))])  # the class token's row
    b.eltwise("pooler_tanh", ["pooler"], "unary")
    return b.build()


def gpt2(batch: int = 64, tokens: int = 128) -> Network:
    """GPT-2 small (Radford et al., 2019): prefill of ``tokens`` tokens through 12 blocks and the
    (tied) projection to the vocabulary of every token."""
    return decoder("gpt2", GPT2_SMALL, batch, tokens, vocab=GPT2_VOCAB)


def gpt2_decode(batch: int = 64, cache: int = 1023) -> Network:
    """GPT-2 small decoding one token against a KV cache of ``cache`` past tokens."""
    return decoder("gpt2_decode", GPT2_SMALL, batch, 1, cache=cache, vocab=GPT2_VOCAB)


def llama3_8b(batch: int = 64, tokens: int = 128, layers: int = 1) -> Network:
    """Llama-3-8B-style decoder blocks (Grattafiori et al., 2024): hidden 4096, 32 query and 8 K/V
    heads (grouped-query attention), SwiGLU FFN of 14336, RMSNorm, rotary embedding; prefill of
    ``tokens`` tokens through ``layers`` blocks (the model has 32)."""
    return decoder("llama3_8b_block" if layers == 1 else f"llama3_8b_{layers}", LLAMA3_8B, batch, tokens,
                    layers=layers)


def llama3_8b_decode(batch: int = 64, cache: int = 2047, layers: int = 1) -> Network:
    """Llama-3-8B-style blocks decoding one token against a KV cache of ``cache`` past tokens."""
    name = "llama3_8b_decode" if layers == 1 else f"llama3_8b_decode_{layers}"
    return decoder(name, LLAMA3_8B, batch, 1, cache=cache, layers=layers)


def vit_b16(batch: int = 64, image: int = 224) -> Network:
    """ViT-B/16 (Dosovitskiy et al., 2021): 16 x 16 patches embedded by a convolution, a class token,
    position embeddings added, 12 pre-norm blocks, the head on the class token."""
    cfg, patches = VIT_B16, (image // 16) ** 2
    b = NetworkBuilder("vit_b16", batch)
    pixels = b.input("image", 3, image)
    embed = b.conv("patch_embed", pixels, cfg.hidden, 16, stride=16)
    cls = b.input("class_token", cfg.hidden, 1)
    tokens = patches + 1
    pos = Layer("pos_embed", Op.ELTWISE, cfg.hidden, cfg.hidden, tokens, 1, mode="add")  # + position embeddings
    x = b.add_layer(pos, [Edge(cls, "pos_embed"), Edge(embed, "pos_embed")])
    norm = b.eltwise("norm_f", [_stack(b, cfg, x, tokens)], cfg.norm)
    head = Layer("head", Op.MATMUL, cfg.hidden, 1000, 1, 1, operand=Operand.WEIGHT)
    b.add_layer(head, [Edge(norm, "head", rows=(0, 1))])  # the class token's row
    return b.build()


__all__ = ["BERT_BASE", "GPT2_SMALL", "LLAMA3_8B", "VIT_B16", "Config", "bert_base", "decoder", "gpt2", "gpt2_decode",
           "llama3_8b", "llama3_8b_decode", "vit_b16"]
