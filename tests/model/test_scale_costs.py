"""The channel-wise scaling (squeeze-and-excitation) on the cost model and the solvers."""

import pytest

import kapla
from kapla.arch import load_arch
from kapla.model.evaluate import evaluate
from kapla.model.hardware import MAC
from tests.workload.test_scale import se_net


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_a_squeeze_excitation_network_schedules_and_its_scaling_costs_energy(training):
    batch, channels, size = 2, 16, 8
    net = se_net(batch=batch, channels=channels, size=size)
    result = kapla.schedule(net, "edge", training=training, jobs=1)
    assert result.valid
    spec = load_arch("edge")
    layers = {lr.name: lr for lr in result.layers}
    assert set(layers) == {layer.name for layer in (net.to_training() if training else net)}
    scalings = ["se", "se.bwd", "se.wgrad"] if training else ["se"]
    for name in scalings:
        lr = layers[name]
        cost = evaluate(lr.scheme, spec)
        assert cost.valid and lr.cost.total_energy > 0
        # one operation per element of every sample, at the PE's operation energy
        assert lr.cost.energy[MAC] == pytest.approx(batch * channels * size * size * spec.mac_energy)
    # the vector crosses DRAM once: one word per channel and sample (neither a weight tensor shared by
    # the samples nor a whole fmap); its gradient is written the same way
    dram = layers["se"].cost.accesses["DRAM"]
    assert dram["se.b"] == batch * channels
    if training:
        assert layers["se.bwd"].cost.accesses["DRAM"]["se.b"] == batch * channels
        # and the vector's gradient is written so too, unless every reader of it runs in its segment
        # (then it is forwarded on chip, beside what those readers fetch from DRAM)
        written = layers["se.wgrad"].cost.accesses["DRAM"].get("se.wgrad")
        segment = next(seg for seg in result.segments if "se.wgrad" in seg)
        readers = net.to_training().consumers("se.wgrad")
        assert written == batch * channels or (written is None and set(readers) <= set(segment))
