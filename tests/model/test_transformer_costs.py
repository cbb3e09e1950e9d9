"""Transformer layers on the cost model: every operation costed, fmap operands read per sample."""

import pytest

import kapla
from kapla.arch import load_arch
from kapla.model.evaluate import evaluate
from kapla.model.hardware import MAC
from tests.workload.test_transformer_layers import attention


@pytest.mark.parametrize("arch, batch, training", [("edge", 1, False), ("multinode_4x4", 4, False),
                                                   ("edge", 2, True)])
def test_attention_schedules_and_every_vector_layer_costs_energy_and_time(arch, batch, training):
    net = attention(batch=batch, tokens=16, hidden=64, heads=4, kv_heads=2)
    result = kapla.schedule(net, arch, training=training, jobs=1)
    assert result.valid
    spec = load_arch(arch)
    layers = {lr.name: lr for lr in result.layers}
    assert set(layers) == {layer.name for layer in (net.to_training() if training else net)}
    for lr in result.layers:
        layer, cost = lr.scheme.layer, lr.cost
        assert evaluate(lr.scheme, spec).valid
        assert cost.energy[MAC] == pytest.approx(layer.ops * batch * spec.mac_energy) and cost.energy[MAC] > 0
        # one operation per PE per cycle, however the layer is spread
        pes = spec.node_array[0] * spec.node_array[1] * spec.pe_array[0] * spec.pe_array[1]
        assert cost.time >= layer.ops * batch / pes
    if not training:
        for name in ("qk", "av"):  # K and V come from DRAM, once per sample and K/V head
            words = sum(v for t, v in layers[name].cost.accesses["DRAM"].items() if t.endswith(".b"))
            assert words == batch * 2 * 16 * 16


def test_a_batch_group_loop_of_an_fmap_product_runs_over_its_groups():
    """TANGRAM's batch groups repeat a layer's scheme; a product of fmaps has its samples in G."""
    from kapla.space.network.inter import scheme_in_segment

    one = kapla.schedule(attention(batch=1), "edge", jobs=1)
    net = attention(batch=4)
    qk = next(lr for lr in one.layers if lr.name == "qk").scheme
    four = scheme_in_segment(net, "qk", qk, groups=4)
    assert four.batch == 4 and four.levels[-1].updates[0].dim == "G"
    cost = evaluate(four, load_arch("edge"))
    assert cost.valid and cost.ops == 4 * net["qk"].macs


def test_the_floors_by_hand():
    from kapla.model.floors import compute_floor, memory_floor

    net = attention(batch=2, tokens=16, hidden=64, heads=4)
    edge = load_arch("edge")  # 16 x 16 PEs, 12.8 B/cycle, 16-bit words
    ops = 7 * 64 * 16 + 4 * 16 * 64 * 64 + 2 * 3 * 64 * 16 + 2 * 4 * 16 * 16 * 16 + (1 + 5) * 4 * 16 * 16 + 64 * 16
    assert compute_floor(net, edge) == 2 * ops / 256
    words = 4 * 64 * 64 + 2 * (64 * 16 + 64 * 16)  # weights; the input and the output of each sample
    assert memory_floor(net, edge) == words * 2 / 12.8
