import pytest

from kapla.errors import NetworkError
from kapla.workload.layer import Layer, Op
from kapla.workload.network import Edge, Network, NetworkBuilder


def small_net(batch=4) -> Network:
    b = NetworkBuilder("small", batch)
    b.input("data", 3, 16)
    b.conv("c1", "data", 8, 3, pad=1)
    b.conv("c2", "c1", 8, 3, pad=1)
    b.eltwise("res", ["c1", "c2"])
    b.conv("b1", "res", 4, 1)
    b.conv("b2", "res", 4, 1)
    b.pool("p", ["b1", "b2"], 2)
    b.fc("fc", "p", 10)
    return b.build()


def test_builder_infers_shapes_and_concatenates():
    net = small_net()
    assert net["p"].ifmap.c == 8 and net["p"].ofmap.h == 8
    assert net["fc"].weight_elems == 8 * 8 * 8 * 10
    assert net.producers("p") == ("b1", "b2")
    assert net.consumers("res") == ("b1", "b2")
    assert net.macs == 4 * sum(layer.macs for layer in net)


def test_graph_view():
    g = small_net().graph
    assert g.nodes["data"]["input"] and not g.nodes["fc"]["input"]
    assert g.has_edge("c1", "res")


def test_with_batch_keeps_layers():
    net = small_net(4)
    other = net.with_batch(32)
    assert other.batch == 32 and other.layers == net.layers
    with pytest.raises(NetworkError, match="batch must be a positive integer"):
        net.with_batch(0)


def test_cycle_is_reported_with_its_path():
    conv = Layer("a", Op.CONV, 8, 8, 4, 4)
    conv_b = Layer("b", Op.CONV, 8, 8, 4, 4)
    with pytest.raises(NetworkError, match=r"cycle a -> b -> a"):
        Network("cyc", 1, {"x": conv.ifmap}, (conv, conv_b), (Edge("b", "a"), Edge("a", "b")))


def test_dangling_input_names_the_layer():
    conv = Layer("a", Op.CONV, 8, 8, 4, 4)
    with pytest.raises(NetworkError, match="layer 'a': input 'ghost' is neither a layer nor a network input"):
        Network("n", 1, {"x": conv.ifmap}, (conv,), (Edge("ghost", "a"),))


def test_shape_mismatch_names_the_layer_and_shapes():
    b = NetworkBuilder("n", 1)
    b.input("x", 3, 8)
    b.conv("a", "x", 8, 3, pad=1)
    b.conv("b", "x", 4, 3, pad=1)
    with pytest.raises(NetworkError, match=r"layer 'add': input 'b' is 4x8x8 but 'a' is 8x8x8"):
        b.eltwise("add", ["a", "b"])
    with pytest.raises(NetworkError, match=r"layer 'c': inputs \['a'\] provide 8 channels but in_channels=5"):
        b.conv("c", "a", 4, 3, in_channels=5)


def test_hand_built_network_is_checked_independently_of_the_builder():
    a = Layer("a", Op.CONV, 3, 8, 8, 8)
    wrong = Layer("b", Op.CONV, 6, 8, 8, 8)  # expects 6 channels, gets 8
    with pytest.raises(NetworkError, match=r"layer 'b': inputs \['a'\] provide 8 channels but 6 are expected"):
        Network("n", 1, {"x": a.ifmap}, (a, wrong), (Edge("x", "a"), Edge("a", "b")))


def test_duplicate_names_and_order():
    b = NetworkBuilder("n", 1)
    b.input("x", 3, 8)
    b.conv("a", "x", 8, 3)
    with pytest.raises(NetworkError, match="name 'a' is used twice"):
        b.conv("a", "x", 8, 3)
    a = Layer("a", Op.CONV, 3, 8, 8, 8)
    c = Layer("c", Op.CONV, 8, 8, 8, 8)
    with pytest.raises(NetworkError, match="'c' is listed before its input"):
        Network("n", 1, {"x": a.ifmap}, (c, a), (Edge("x", "a"), Edge("a", "c")))


def test_unfed_port_is_an_error():
    a = Layer("a", Op.CONV, 3, 8, 8, 8)
    with pytest.raises(NetworkError, match="input port 'in' has no producer"):
        Network("n", 1, {"x": a.ifmap}, (a,), ())


def test_the_share_of_a_layers_input_from_some_sources_counts_words_edge_by_edge():
    """A concatenation of a 3-channel input and an 8-channel layer: their words, and a
    channel slice of a producer counted as the slice; the LSTM's cell_cout_f half each."""
    b = NetworkBuilder("n", batch=2)
    x = b.input("x", 3, 4)
    a = b.conv("a", x, 8, 3, pad=1)
    b.conv("cat", [x, a], 4, 1)
    net = b.build()
    assert net.input_share("cat", ["a"]) == pytest.approx(8 / 11)
    assert net.input_share("cat", ["x"]) == pytest.approx(3 / 11)
    assert net.input_share("cat", ["x", "a"]) == 1.0 and net.input_share("cat", []) == 0.0
    sliced = Network("s", 1, {"x": net.inputs["x"]}, (net["a"], Layer("u", Op.CONV, c=2, k=1, h=4, w=4)),
                     (Edge("x", "a"), Edge("a", "u", channels=(0, 2))))
    assert sliced.input_share("u", ["a"]) == 1.0
    from kapla.workload.zoo import get_network

    assert get_network("lstm_m", 64).input_share("cell_cout_f", ["cell_fgate"]) == 0.5
