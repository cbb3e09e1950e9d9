"""The channel-wise scaling layer (squeeze-and-excitation): a C x H x W fmap times a C x 1 x 1 vector."""

import numpy as np
import pytest

from kapla.dataflow.tensors import Kind, footprints, layer_dims, tensor_roles
from kapla.errors import NetworkError
from kapla.workload.layer import FmapShape, Layer, Op, Operand, Phase
from kapla.workload.network import Edge, NetworkBuilder


def se_net(batch: int = 1, channels: int = 16, size: int = 6, squeeze: int = 4):
    """A convolution, squeeze-and-excitation on its output, a 1x1 projection."""
    b = NetworkBuilder("se", batch)
    b.input("x", 8, size)
    c1 = b.conv("c1", "x", channels, 3, pad=1)
    gap = b.global_pool("gap", c1, mode="avg")
    red = b.conv("red", gap, squeeze, 1)
    exp = b.conv("exp", red, channels, 1)
    se = b.scale("se", c1, exp)
    b.conv("proj", se, 8, 1)
    return b.build()


def test_the_builder_makes_an_eltwise_mul_by_a_vector_on_port_b():
    net = se_net(channels=16, size=6)
    se = net["se"]
    assert se.op == Op.ELTWISE and se.mode == "mul" and se.operand == Operand.FMAP and se.is_scale
    assert se.n_inputs == 1 and se.ifmap == se.ofmap == FmapShape(16, 6, 6)
    assert se.operand_shape == FmapShape(16, 1, 1)
    assert [(p.name, p.shape) for p in se.ports] == [("in", FmapShape(16, 6, 6)), ("b", FmapShape(16, 1, 1))]
    assert {(e.src, e.port) for e in net.in_edges("se")} == {("c1", "in"), ("exp", "b")}
    assert "exp" in net.kept  # the vector is read from DRAM like a matmul's fmap operand
    assert se.describe() == "eltwise-mul 16x6x6 by 16x1x1 per channel"


def test_no_macs_and_one_operation_per_element():
    se = se_net(channels=16, size=6)["se"]
    assert se.macs == 0 and se.weight_elems == 0 and not se.has_weights
    # a 1x1 depthwise convolution's nest: one group per channel, the plane in Y x X
    assert se.loops == {"G": 16, "C": 1, "K": 1, "Y": 6, "X": 6, "S": 1, "R": 1}
    assert se.ops == se.loop_ops == 16 * 6 * 6 and se.ops_per_point == 1
    assert se.op_class == "eltwise"
    assert se_net(batch=4).macs == se_net(batch=4).batch * sum(
        layer.macs for layer in se_net() if layer.op == Op.CONV)  # the scaling adds none


def test_the_vector_is_a_per_sample_operand_read_once_per_channel():
    se = se_net(batch=3, channels=16, size=6)["se"]
    dims = layer_dims(se, 3)
    assert dims["N"] == 1 and dims["G"] == 16 * 3  # the vector differs per sample: the batch folds into G
    assert [(r.kind, r.name, r.written) for r in tensor_roles(se)] == [
        (Kind.IFM, "se.in", False), (Kind.WGT, "se.b", False), (Kind.OFM, "se", True)]
    whole = footprints(np.array([dims[d] for d in "NGCKYXSR"]), se)
    assert whole[Kind.WGT] == 3 * 16  # C words per sample: not a weight tensor, not a full fmap
    assert whole[Kind.IFM] == whole[Kind.OFM] == 3 * 16 * 6 * 6


def test_a_vector_of_the_wrong_shape_is_one_error_naming_both_shapes():
    b = NetworkBuilder("bad", 1)
    b.input("x", 16, 6)
    b.input("v", 8, 1)  # 8x1x1 where 16x1x1 is needed
    b.input("plane", 16, 2)  # 16x2x2: not a vector
    with pytest.raises(NetworkError) as info:
        b.scale("se", "x", "v")
    message = str(info.value)
    assert message == ("layer 'se': scaling the 16x6x6 input of ['x'] needs a 16x1x1 vector but 'v' is 8x1x1")
    with pytest.raises(NetworkError, match=r"layer 'se': .* 16x6x6 .* needs a 16x1x1 vector but 'plane' is 16x2x2"):
        b.scale("se", "x", "plane")
    with pytest.raises(NetworkError, match="has no layers"):  # nothing was added
        b.build()


def test_a_hand_built_network_checks_the_vector_port():
    b = NetworkBuilder("bad", 1)
    x = b.input("x", 16, 6)
    row = b.input("row", 1, 16, 1)  # 16 elements, but in one channel
    b.add_layer(Layer("se", Op.ELTWISE, c=16, k=16, h=6, w=6, mode="mul", operand="fmap"),
                [Edge(x, "se"), Edge(row, "se", "b")])
    with pytest.raises(NetworkError, match=r"layer 'se' port 'b': inputs 'row' 1x16x1 do not match the "
                                           r"expected 16x1x1"):
        b.build()


@pytest.mark.parametrize("kwargs, message", [
    (dict(mode="add", operand="fmap"), "only a matmul or a one-input eltwise 'mul'"),
    (dict(mode="mul", n_inputs=2, operand="fmap"), "only a matmul or a one-input eltwise 'mul'"),
    (dict(mode="mul", operand="weight"), "channel-wise scaling's second operand must be an fmap"),
])
def test_only_a_one_input_mul_takes_a_vector(kwargs, message):
    with pytest.raises(NetworkError, match=message):
        Layer("e", Op.ELTWISE, c=8, k=8, h=4, w=4, **kwargs)


def test_backward_phases_read_the_vector_and_write_its_gradient():
    se = se_net(channels=16, size=6)["se"]
    bwd, wgrad = se.with_phase(Phase.BWD_DATA, "se.bwd"), se.with_phase(Phase.WGRAD, "se.wgrad")
    # dx = dy * b
    assert [(p.name, p.shape) for p in bwd.ports] == [("dy", se.ofmap), ("b", se.operand_shape)]
    assert bwd.out_shape == se.ifmap
    assert [(r.kind, r.name) for r in tensor_roles(bwd)] == [(Kind.OFM, "se.grad"), (Kind.WGT, "se.b"),
                                                              (Kind.IFM, "se.bwd")]
    # db = sum over H x W of dy * x: one value per channel
    assert [(p.name, p.shape) for p in wgrad.ports] == [("x", se.ifmap), ("dy", se.ofmap)]
    assert wgrad.out_shape == FmapShape(16, 1, 1)
    assert bwd.ops == wgrad.ops == 16 * 6 * 6 and bwd.macs == wgrad.macs == 0
