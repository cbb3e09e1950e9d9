"""Transformer zoo networks scheduled on every preset kind: valid, every vector layer costed, and
never faster than the floors (decode: weights and KV cache over the DRAM bandwidth; prefill: the
operations over the PEs)."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kapla
from kapla.arch import load_arch
from kapla.arch.loader import list_presets
from kapla.model.floors import compute_floor, memory_floor
from kapla.model.hardware import MAC
from kapla.workload.zoo import TRANSFORMERS
from kapla.workload.zoo.transformers import Config, decoder, llama3_8b, llama3_8b_decode

PRESETS = ["edge", "multinode", "simba"]


def check_costed(result):
    assert result.valid
    for lr in result.layers:  # softmax, norms, activations, scaling, rotary: never free
        assert lr.cost.energy[MAC] > 0 and sum(lr.cost.energy.values()) > 0 and lr.cost.time > 0


@pytest.mark.parametrize("arch", PRESETS)
@pytest.mark.parametrize("tokens", [16, 64])
def test_prefill_is_never_below_its_compute_floor(arch, tokens):
    net = llama3_8b(batch=1, tokens=tokens)
    result = kapla.schedule(net, arch, jobs=1)
    check_costed(result)
    spec = load_arch(arch)
    assert compute_floor(net, spec) == sum(layer.ops for layer in net) / spec.num_pes  # every op, not only MACs
    assert result.time >= compute_floor(net, spec)


@pytest.mark.parametrize("arch", PRESETS)
@pytest.mark.parametrize("cache", [64, 512])
def test_decode_is_never_below_its_bandwidth_floor(arch, cache):
    net = llama3_8b_decode(batch=1, cache=cache)
    result = kapla.schedule(net, arch, jobs=1)
    check_costed(result)
    assert not result.pinned  # 218 M weights: no preset keeps them on chip
    spec = load_arch(arch)
    cache = 2 * cache * 8 * 128  # K and V of 8 heads of 128
    assert memory_floor(net, spec) * spec.dram_bandwidth / spec.word_bytes >= 218.1e6 + cache
    assert result.time >= memory_floor(net, spec)


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_every_transformer_of_the_zoo_schedules(name):
    """On one single-node preset here (every preset, batch 1 and 16, inference and training:
    ``benchmarks/transformer_zoo.py``, docs/benchmarks/transformer_zoo.txt)."""
    check_costed(kapla.schedule(name, "interstellar", batch=1, jobs=1))


@st.composite
def decoders(draw):
    """A small Llama-style decoder block (grouped-query attention, RMSNorm, SwiGLU, rotary), in prefill
    of 1 to 512 tokens or in decode of one token against a KV cache of 1 to 4096, at batch 1 to 16."""
    kv = draw(st.sampled_from([1, 2, 4]))
    heads = kv * draw(st.sampled_from([1, 2, 4]))
    head_dim = draw(st.sampled_from([16, 32, 64]))
    cfg = Config(hidden=heads * head_dim, heads=heads, kv_heads=kv, ffn=draw(st.sampled_from([2, 3, 4])) * heads
                 * head_dim, layers=1, norm="rmsnorm", act="silu", rotary=True, causal=True)
    batch = draw(st.sampled_from([1, 3, 16]))
    if draw(st.booleans()):
        return decoder("decode", cfg, batch, 1, cache=draw(st.integers(1, 4096)))
    return decoder("prefill", cfg, batch, draw(st.integers(1, 512)))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# atomic_yx is atomic's chip with another PE mapping: one of them stands for both
@given(net=decoders(), arch=st.sampled_from([p for p in list_presets() if p != "atomic_yx"]))
def test_no_schedule_beats_its_floors(net, arch):
    """Prefill and decode of any sequence length on any preset: the time is never below the operations
    over the PEs, nor below the weights (unless pinned), KV cache, inputs and outputs over the DRAM
    bandwidth; every layer, vector work included, costs energy."""
    result = kapla.schedule(net, arch, jobs=1)
    check_costed(result)
    spec = load_arch(arch)
    assert result.time >= compute_floor(net, spec)
    # weights pinned on chip are loaded before the run, outside its time
    assert result.time >= memory_floor(net, spec, weights=not result.pinned)
