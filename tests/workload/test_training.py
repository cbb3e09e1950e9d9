"""The training DAG: structure, validity and the MAC rule stated in kapla.workload.training."""

import pytest

from kapla.workload.layer import Op, Phase
from kapla.workload.zoo import ZOO, get_network

CNNS = ["alexnet", "vgg16", "googlenet", "resnet50", "resnet152", "mobilenet", "efficientnet_b0"]


def first_layer_macs(net):
    """MACs of CONV/FC layers fed only by network inputs (they need no backward-data layer)."""
    return sum(layer.macs for layer in net
               if layer.has_weights and all(p in net.inputs for p in net.producers(layer.name)))


@pytest.mark.parametrize("name", list(ZOO))
def test_training_dag_builds_validates_and_follows_the_mac_rule(name):
    net = get_network(name, batch=8)
    train = net.to_training()  # the Network constructor validates the DAG
    assert train.training and train.batch == 8
    assert train.macs == 3 * net.macs - net.batch * first_layer_macs(net)
    # every forward layer is still there, first and unchanged
    assert train.layers[: len(net)] == net.layers


@pytest.mark.parametrize("name", CNNS)
def test_cnn_training_is_about_three_times_inference(name):
    net = get_network(name, batch=8)
    assert 2.8 <= net.to_training().macs / net.macs <= 3.0


def test_every_conv_and_fc_has_a_weight_gradient_layer():
    net = get_network("googlenet", batch=2)
    train = net.to_training()
    for layer in net:
        if layer.has_weights:
            wg = train[f"{layer.name}.wgrad"]
            assert wg.phase == Phase.WGRAD and wg.weight_elems == layer.weight_elems
            assert wg.port("x").shape == layer.ifmap and wg.port("dy").shape == layer.ofmap


def test_forward_outputs_read_by_backward_layers_are_kept_in_dram():
    net = get_network("alexnet", batch=2)
    train = net.to_training()
    # conv2_a's weight gradient reads pool1_a's output again
    assert "pool1_a" in train.kept
    assert ("pool1_a", "conv2_a.wgrad") in {(e.src, e.dst) for e in train.edges}
    # the network input is not a layer output and is not listed
    assert "data" not in train.kept


def test_concatenation_is_split_back_by_channel_slices():
    train = get_network("googlenet", batch=2).to_training()
    slices = {e.channels for e in train.out_edges("pool3.bwd")}
    # pool3 concatenates inception 3b's four branches: 128 + 192 + 96 + 64 channels
    assert sorted(slices) == [(0, 128), (128, 320), (320, 416), (416, 480)]


def test_residual_gradients_are_summed():
    train = get_network("resnet50", batch=2).to_training()
    total = train["conv2_0_res.gradsum"]
    assert total.op == Op.ELTWISE and total.mode == "add" and total.n_inputs == 2


def test_first_layers_have_no_backward_data_layer():
    train = get_network("alexnet", batch=2).to_training()
    assert "conv1_a.bwd" not in train and "conv1_a.wgrad" in train and "conv2_a.bwd" in train


def test_loss_gradient_enters_as_an_input():
    train = get_network("mlp_s", batch=2).to_training()
    assert train.inputs["fc3.grad"] == train["fc3"].ofmap


def test_training_twice_is_refused():
    train = get_network("mlp_s", batch=2).to_training()
    with pytest.raises(Exception, match="already a training network"):
        train.to_training()


def test_a_channel_wise_scaling_passes_gradients_to_the_fmap_and_the_vector():
    from tests.workload.test_scale import se_net

    net = se_net(batch=2, channels=16, size=6, squeeze=4)
    train = net.to_training()
    assert train.macs == 3 * net.macs - net.batch * first_layer_macs(net)  # the scaling adds no MACs
    # the vector's gradient, sum over H x W of dY * X: one value per channel, for the excitation conv
    vec = train["se.wgrad"]
    assert vec.phase == Phase.WGRAD and vec.out_shape == net["se"].operand_shape == net["exp"].ofmap
    assert vec.ops == 16 * 6 * 6 and vec.macs == 0
    assert {(e.src, e.port) for e in train.in_edges("se.wgrad")} == {("c1", "x"), ("proj.bwd", "dy")}
    assert {e.src for e in train.in_edges("exp.wgrad") if e.port == "dy"} == {"se.wgrad"}
    assert {e.src for e in train.in_edges("exp.bwd") if e.port == "dy"} == {"se.wgrad"}
    # dX = dY * the vector, summed with the gradient through the pool for the conv that feeds both
    assert {(e.src, e.port) for e in train.in_edges("se.bwd")} == {("proj.bwd", "dy"), ("exp", "b")}
    assert train["se.bwd"].out_shape == net["c1"].ofmap
    assert set(train.producers("c1.gradsum")) == {"se.bwd", "gap.bwd"}
    assert {"c1", "exp"} <= train.kept  # read again by se.wgrad and se.bwd


def test_a_vector_from_a_network_input_gets_no_gradient():
    from kapla.workload.network import NetworkBuilder

    b = NetworkBuilder("scaled", 2)
    b.input("x", 8, 4)
    b.input("v", 16, 1)
    b.scale("se", b.conv("c1", "x", 16, 3, pad=1), "v")
    train = b.build().to_training()
    assert "se.wgrad" not in train and "se.bwd" in train and "c1.wgrad" in train
