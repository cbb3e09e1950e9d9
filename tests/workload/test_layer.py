import pytest

from kapla.errors import NetworkError
from kapla.workload.layer import Layer, Op, Phase


def test_conv_geometry_and_work():
    # 3x3 stride-2 padded conv: out = floor((32 + 2 - 3) / 2) + 1 = 16
    layer = Layer("c", Op.CONV, c=8, k=16, h=32, w=32, s=3, r=3, stride=(2, 2), pad=(1, 1, 1, 1))
    assert (layer.yo, layer.xo) == (16, 16)
    assert layer.macs == 16 * 16 * 16 * 8 * 9
    assert layer.weight_elems == 16 * 8 * 9
    assert layer.loops == {"G": 1, "C": 8, "K": 16, "Y": 16, "X": 16, "S": 3, "R": 3}


def test_grouped_and_depthwise():
    grouped = Layer("g", Op.CONV, c=8, k=16, h=8, w=8, s=3, r=3, pad=(1, 1, 1, 1), groups=4)
    assert grouped.loops["G"] == 4 and grouped.loops["C"] == 2 and grouped.loops["K"] == 4
    assert grouped.macs == 16 * 8 * 8 * 2 * 9
    dw = Layer("d", Op.CONV, c=8, k=8, h=8, w=8, s=3, r=3, pad=(1, 1, 1, 1), groups=8)
    assert dw.is_depthwise and dw.weight_elems == 8 * 9 and dw.macs == 8 * 64 * 9


def test_fc_is_a_conv_over_its_whole_input():
    fc = Layer("f", Op.FC, c=256, k=4096, h=6, w=6, s=6, r=6)
    assert (fc.yo, fc.xo) == (1, 1)
    assert fc.weight_elems == 256 * 36 * 4096 == fc.macs


def test_pool_and_eltwise_have_no_macs_or_weights():
    pool = Layer("p", Op.POOL, c=4, k=4, h=55, w=55, s=3, r=3, stride=(2, 2), mode="max")
    assert (pool.yo, pool.macs, pool.weight_elems) == (27, 0, 0)
    assert pool.loop_ops == 4 * 27 * 27 * 9
    ceil = Layer("p", Op.POOL, c=4, k=4, h=112, w=112, s=3, r=3, stride=(2, 2), mode="max", ceil_mode=True)
    assert ceil.yo == 56
    add = Layer("a", Op.ELTWISE, c=4, k=4, h=7, w=7, mode="add", n_inputs=2)
    assert add.macs == 0 and add.ofmap == add.ifmap


def test_backward_phases_swap_shapes_and_keep_the_loop_nest():
    fwd = Layer("c", Op.CONV, c=8, k=16, h=32, w=32, s=3, r=3, stride=(2, 2), pad=(1, 1, 1, 1))
    bwd = fwd.with_phase(Phase.BWD_DATA, "c.bwd")
    wg = fwd.with_phase(Phase.WGRAD, "c.wgrad")
    assert bwd.out_shape == fwd.ifmap and bwd.port("dy").shape == fwd.ofmap
    assert wg.out_shape is None and {p.name for p in wg.ports} == {"x", "dy"}
    assert bwd.macs == wg.macs == fwd.macs
    assert bwd.forward == wg.forward == "c"


@pytest.mark.parametrize("kwargs, message", [
    (dict(c=0), "input channels must be a positive integer"),
    (dict(s=0), "filter height must be a positive integer"),
    (dict(k=1 << 21), "output channels is 2,097,152; kapla handles sizes up to 1,048,576"),
    (dict(groups=3), "groups=3 must divide"),
    (dict(s=40, r=40), "does not fit"),
    (dict(pad=(-1, 0, 0, 0)), "padding must be non-negative"),
])
def test_invalid_layers_are_rejected_with_a_reason(kwargs, message):
    base = dict(c=8, k=16, h=32, w=32, s=3, r=3)
    base.update(kwargs)
    with pytest.raises(NetworkError, match=message):
        Layer("bad", Op.CONV, **base)


def test_layers_are_immutable():
    layer = Layer("c", Op.CONV, c=8, k=16, h=32, w=32)
    with pytest.raises(AttributeError):
        layer.c = 4  # type: ignore[misc]


def test_a_layers_shape_key_is_the_layer_without_its_identity():
    from dataclasses import replace

    from kapla.workload.layer import shape_key
    from kapla.workload.training import training_network
    from kapla.workload.zoo import get_network

    net = training_network(get_network("googlenet", 4))
    keys = {}
    for layer in net:
        key = shape_key(layer)
        plain = replace(layer, name="_", forward=None)
        assert key == plain and hash(key) == hash(plain) and vars(key).keys() == vars(plain).keys()
        assert key.name == "_" and key.forward is None and layer.name != "_"  # the layer itself kept its own
        keys.setdefault(key, []).append(layer.name)
    # layers of one shape and phase share a key; the others do not
    assert len(keys) < len(net)
    for key, names in keys.items():
        assert {(net[n].phase, replace(net[n], name="_", forward=None)) for n in names} == {(key.phase, key)}
