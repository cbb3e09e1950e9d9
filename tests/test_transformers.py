"""Transformer zoo networks scheduled on every preset kind: valid, every vector layer costed, and
never faster than the floors (decode: weights and KV cache over the DRAM bandwidth; prefill: the
operations over the PEs)."""

import pytest

import kapla
from kapla.arch import load_arch
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
    ops = sum(layer.ops for layer in net) * net.batch
    assert result.time >= ops / spec.num_pes


@pytest.mark.parametrize("arch", PRESETS)
@pytest.mark.parametrize("cache", [64, 512])
def test_decode_is_never_below_its_bandwidth_floor(arch, cache):
    net = llama3_8b_decode(batch=1, cache=cache)
    result = kapla.schedule(net, arch, jobs=1)
    check_costed(result)
    assert not result.pinned  # 218 M weights: no preset keeps them on chip
    spec = load_arch(arch)
    words = sum(layer.weight_elems for layer in net) + net.batch * sum(
        shape.elems for name, shape in net.inputs.items() if name.endswith("_cache"))
    assert result.time >= words * spec.word_bytes / spec.dram_bandwidth
