"""nn_dataflow's networks in kapla: the same layers, shapes and work as the tool's own runs."""

from __future__ import annotations

import pytest

from kapla.errors import InteropError
from kapla.interop.nn_dataflow.networks import INPUT, NETWORKS, network_of_run, nn_dataflow_network, nn_dataflow_ops
from kapla.interop.nn_dataflow.reader import parse_nn_dataflow, read_nn_dataflow
from kapla.workload.layer import Op
from tests.interop.nn_dataflow.conftest import ALEXNET, MLP_S, REFERENCES, reference_data


@pytest.mark.parametrize("path", REFERENCES, ids=lambda p: p.stem)
def test_every_layer_does_the_work_nn_dataflow_counted(path):
    run = read_nn_dataflow(path)
    net = nn_dataflow_network(run.net, run.batch)
    assert [layer.name for layer in net.layers if layer.name not in run.schedules] == []
    assert sorted(run.schedules) == sorted(layer.name for layer in net.layers)
    for name, sched in run.schedules.items():
        assert nn_dataflow_ops(net[name]) * run.batch == pytest.approx(sched.ops, rel=1e-12), name
    assert sum(nn_dataflow_ops(layer) for layer in net.layers) * run.batch == pytest.approx(run.total_ops, rel=1e-12)


def test_alex_net_is_nn_dataflows_two_towers_on_a_224_input():
    net = nn_dataflow_network("alex_net", 64)
    assert net.inputs == {INPUT: net.inputs[INPUT]} and str(net.inputs[INPUT]) == "3x224x224"
    conv1 = net["conv1_a"]
    # nn_dataflow reads (55 - 1) * 4 + 11 = 227 rows: 3 rows of zero padding
    assert (conv1.h, conv1.yo, sum(conv1.pad[::2])) == (224, 55, 3)
    assert net["conv2_b"].pad == (2, 2, 2, 2) and net["conv3_a"].pad == (1, 1, 1, 1)
    assert net.producers("conv3_a") == ("pool2_a", "pool2_b") == net.producers("conv3_b")
    assert net.producers("conv4_a") == ("conv3_a",) and net.producers("fc1") == ("pool3_a", "pool3_b")
    assert net["fc1"].op == Op.FC and (net["fc1"].c, net["fc1"].s) == (256, 6)
    assert net["pool1_a"].op == Op.POOL and net["pool1_a"].ofmap.h == 27


@pytest.mark.parametrize(("name", "sizes"), [("mlp_s", [500, 250, 10]), ("mlp_m", [1000, 500, 250, 10]),
                                              ("mlp_l", [1500, 1000, 500, 10])])
def test_the_mlps_are_fc_chains_on_784_inputs(name, sizes):
    net = nn_dataflow_network(name, 8)
    assert [layer.name for layer in net.layers] == [f"fc{i}" for i in range(1, len(sizes) + 1)]
    assert [layer.k for layer in net.layers] == sizes and net.layers[0].c == 784 and net.batch == 8


def test_an_unknown_network_is_one_line_listing_every_known_one():
    known = ("alex_net, googlenet, lstm_gnmt, lstm_phoneme, lstm_showtell, mlp_l, mlp_m, mlp_s, resnet152, "
             "resnet50, vgg19_net, vgg_net, zfnet")
    with pytest.raises(InteropError) as err:
        nn_dataflow_network("resnet18", 64)
    assert str(err.value) == f"unknown nn_dataflow network 'resnet18' (kapla knows {known})"
    data = reference_data()
    data["net"] = "resnet18"
    with pytest.raises(InteropError) as err:
        network_of_run(parse_nn_dataflow(data, "run.json"))
    assert str(err.value) == f"run.json: net: unknown nn_dataflow network 'resnet18' (kapla knows {known})"
    assert "\n" not in str(err.value)
    # every network of nn_dataflow's nns/ package
    assert set(NETWORKS) == {"alex_net", "googlenet", "lstm_gnmt", "lstm_phoneme", "lstm_showtell",
                                         "mlp_l", "mlp_m", "mlp_s", "resnet152", "resnet50", "vgg19_net", "vgg_net",
                                         "zfnet"}


def test_a_scheduled_layer_the_network_lacks_is_named():
    data = reference_data()
    data["schedules"]["fc4"] = data["schedules"].pop("fc3")
    with pytest.raises(InteropError, match=r"^run\.json: schedules\.fc4: no layer 'fc4' in nn_dataflow's mlp_s "
                                           r"\(its layers: fc1, fc2, fc3\)$"):
        network_of_run(parse_nn_dataflow(data, "run.json"))


def test_an_unscheduled_layer_is_named():
    data = reference_data()
    dropped = data["schedules"].pop("fc3")[0]
    data["total_ops"] -= dropped["ops"]
    for i, row in enumerate(dropped["access"]):
        data["total_accesses"][i] -= sum(row) + (sum(dropped["remote_gbuf_access"]) if i == 1 else 0)
    data["total_noc_hops"] -= sum(dropped["total_nhops"])
    with pytest.raises(InteropError, match=r"^run\.json: schedules: no schedule for fc3 of mlp_s$"):
        network_of_run(parse_nn_dataflow(data, "run.json"))


def test_a_file_made_for_another_network_shape_is_caught_by_its_ops():
    data = reference_data(ALEXNET)
    data["batch"] = 32  # the schedules did twice the work
    with pytest.raises(InteropError, match=r"schedules\.conv1_a\.ops: 3,373,286,400 but layer conv1_a of alex_net "
                                           r"performs 1,686,643,200 at batch 32"):
        network_of_run(parse_nn_dataflow(data, "run.json"))


def test_the_reference_runs_resolve_to_their_networks():
    for path, name in ((ALEXNET, "alex_net"), (MLP_S, "mlp_s")):
        net = network_of_run(read_nn_dataflow(path))
        assert (net.name, net.batch) == (name, 64)

