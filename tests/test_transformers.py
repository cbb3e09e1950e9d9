"""Transformer zoo networks scheduled on every preset kind: valid, every vector layer costed, and
never faster than the floors (decode: weights and KV cache over the DRAM bandwidth; prefill: the
operations over the PEs)."""

import pytest

import kapla
from kapla.arch import load_arch
from kapla.model.floors import compute_floor, memory_floor
from kapla.model.hardware import MAC
from kapla.workload.zoo.transformers import llama3_8b, llama3_8b_decode

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


@pytest.mark.parametrize("name", ["bert_base", "bert_base_512", "gpt2", "gpt2_decode", "llama3_8b_block",
                                  "llama3_8b_decode", "vit_b16"])
def test_every_transformer_of_the_zoo_schedules(name):
    """On one single-node preset here (each also schedules validly on all seven presets at batch 1:
    docs/transformers.md)."""
    check_costed(kapla.schedule(name, "interstellar", batch=1, jobs=1))
