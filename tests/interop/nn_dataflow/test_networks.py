"""nn_dataflow's networks in kapla: the same layers, shapes and work as the tool's own runs."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from kapla.errors import InteropError
from kapla.interop.nn_dataflow.networks import INPUT, NETWORKS, network_of_run, nn_dataflow_network, nn_dataflow_ops
from kapla.interop.nn_dataflow.reader import parse_nn_dataflow, read_nn_dataflow
from kapla.workload.layer import FmapShape, Op
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
    assert set(NETWORKS) == set(ZOO) == {"alex_net", "googlenet", "lstm_gnmt", "lstm_phoneme", "lstm_showtell",
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


# ------------------------------------------------- nn_dataflow's zoo, as its definitions state it


@dataclass(frozen=True)
class Stated:
    """A layer as nn_dataflow's definition states it, with its work per sample
    counted from those numbers alone: MACs nofm * sofm^2 * nifm * sfil^2 of a
    convolution (an FC layer's sofm is 1); nn_dataflow's ``ops`` are the MACs,
    nofm * sofm^2 * sreg^2 window reads of a pooling layer, nofm * sofm^2 * nreg
    of an eltwise layer."""

    name: str
    prevs: tuple[str, ...]
    nofm: int
    sofm: int
    macs: int
    ops: int


@dataclass
class Definition:
    """Records a network as nn_dataflow's ``nns/`` module adds its layers
    (no ``prevs``: the layer added last)."""

    channels: int
    size: int
    ext: dict[str, int] = field(default_factory=dict)
    layers: list[Stated] = field(default_factory=list)

    def _add(self, name, prevs, nofm, sofm, macs, ops):
        last = self.layers[-1].name if self.layers else INPUT
        self.layers.append(Stated(name, tuple(prevs or (last,)), nofm, sofm, macs, ops))

    def conv(self, name, nifm, nofm, sofm, sfil, prevs=None):
        macs = nofm * sofm**2 * nifm * sfil**2
        self._add(name, prevs, nofm, sofm, macs, macs)

    def fc(self, name, nifm, nofm, sfil=1, prevs=None):
        self.conv(name, nifm, nofm, 1, sfil, prevs)

    def pool(self, name, nofm, sofm, sreg, prevs=None):
        self._add(name, prevs, nofm, sofm, 0, nofm * sofm**2 * sreg**2)

    def eltwise(self, name, nofm, sofm, nreg, prevs=None):
        self._add(name, prevs, nofm, sofm, 0, nofm * sofm**2 * nreg)

    def lstm_cell(self, name, size, x):
        """``add_lstm_cell`` with its initial C and h external."""
        c, h = f"{name}_cinit", f"{name}_hinit"
        self.ext |= {c: size, h: size}
        for part in ("cand", "igate", "fgate", "ogate"):
            self.fc(f"{name}_{part}", 2 * size, size, prevs=(h, x))
        self.eltwise(f"{name}_cout_f", size, 1, 2, prevs=(c, f"{name}_fgate"))
        self.eltwise(f"{name}_cout_i", size, 1, 2, prevs=(f"{name}_cand", f"{name}_igate"))
        self.eltwise(f"{name}_cout", size, 1, 2, prevs=(f"{name}_cout_i", f"{name}_cout_f"))
        self.eltwise(f"{name}_hout", size, 1, 2, prevs=(f"{name}_cout", f"{name}_ogate"))
        return f"{name}_hout"


def _alex_net():
    d = Definition(3, 224)
    for t in "ab":
        d.conv(f"conv1_{t}", 3, 48, 55, 11, prevs=(INPUT,))
    for t in "ab":
        d.pool(f"pool1_{t}", 48, 27, 3, prevs=(f"conv1_{t}",))
    for t in "ab":
        d.conv(f"conv2_{t}", 48, 128, 27, 5, prevs=(f"pool1_{t}",))
    for t in "ab":
        d.pool(f"pool2_{t}", 128, 13, 3, prevs=(f"conv2_{t}",))
    for t in "ab":
        d.conv(f"conv3_{t}", 256, 192, 13, 3, prevs=("pool2_a", "pool2_b"))
    for t in "ab":
        d.conv(f"conv4_{t}", 192, 192, 13, 3, prevs=(f"conv3_{t}",))
    for t in "ab":
        d.conv(f"conv5_{t}", 192, 128, 13, 3, prevs=(f"conv4_{t}",))
    for t in "ab":
        d.pool(f"pool3_{t}", 128, 6, 3, prevs=(f"conv5_{t}",))
    d.fc("fc1", 256, 4096, 6, prevs=("pool3_a", "pool3_b"))
    d.fc("fc2", 4096, 4096)
    d.fc("fc3", 4096, 1000)
    return d


def _zfnet():
    d = Definition(3, 224)
    d.conv("conv1", 3, 96, 110, 7)
    d.pool("pool1", 96, 55, 3)
    d.conv("conv2", 96, 256, 26, 5)
    d.pool("pool2", 256, 13, 3)
    for i, (nifm, nofm) in enumerate(((256, 512), (512, 1024), (1024, 512)), start=3):
        d.conv(f"conv{i}", nifm, nofm, 13, 3)
    d.pool("pool3", 512, 6, 3)
    d.fc("fc1", 512, 4096, 6)
    d.fc("fc2", 4096, 4096)
    d.fc("fc3", 4096, 1000)
    return d


def _vgg(convs_per_stage):
    d = Definition(3, 224)
    conv, nifm = 0, 3
    # stage: convolutions, their channels, their fmap size
    for stage, (n, nofm, sofm) in enumerate(zip(convs_per_stage, (64, 128, 256, 512, 512), (224, 112, 56, 28, 14),
                                                strict=True), start=1):
        for _ in range(n):
            conv += 1
            d.conv(f"conv{conv}", nifm, nofm, sofm, 3)
            nifm = nofm
        d.pool(f"pool{stage}", nofm, sofm // 2, 2)
    d.fc("fc1", 512, 4096, 7)
    d.fc("fc2", 4096, 4096)
    d.fc("fc3", 4096, 1000)
    return d


def _googlenet():
    d = Definition(3, 224)
    d.conv("conv1", 3, 64, 112, 7)
    d.pool("pool1", 64, 56, 3)
    d.conv("conv2_3x3_reduce", 64, 64, 56, 1)
    d.conv("conv2_3x3", 64, 192, 56, 3)
    d.pool("pool2", 192, 28, 3)
    prevs = ("pool2",)
    # id, sfmap, in, 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool proj; then the pool after it, if any
    for incp, s, nin, n1, n3r, n3, n5r, n5, npj, pool in (
            ("3a", 28, 192, 64, 96, 128, 16, 32, 32, None), ("3b", 28, 256, 128, 128, 192, 32, 96, 64, ("pool3", 14)),
            ("4a", 14, 480, 192, 96, 208, 16, 48, 64, None), ("4b", 14, 512, 160, 112, 224, 24, 64, 64, None),
            ("4c", 14, 512, 128, 128, 256, 24, 64, 64, None), ("4d", 14, 512, 112, 144, 288, 32, 64, 64, None),
            ("4e", 14, 528, 256, 160, 320, 32, 128, 128, ("pool4", 7)),
            ("5a", 7, 832, 256, 160, 320, 32, 128, 128, None), ("5b", 7, 832, 384, 192, 384, 48, 128, 128, None)):
        p = f"inception_{incp}_"
        d.conv(p + "1x1", nin, n1, s, 1, prevs=prevs)
        d.conv(p + "3x3_reduce", nin, n3r, s, 1, prevs=prevs)
        d.conv(p + "3x3", n3r, n3, s, 3)
        d.conv(p + "5x5_reduce", nin, n5r, s, 1, prevs=prevs)
        d.conv(p + "5x5", n5r, n5, s, 5)
        d.conv(p + "pool_proj", nin, npj, s, 1, prevs=prevs)
        prevs = (p + "1x1", p + "3x3", p + "5x5", p + "pool_proj")
        if pool:
            d.pool(pool[0], n1 + n3 + n5 + npj, pool[1], 3, prevs=prevs)
            prevs = (pool[0],)
    d.pool("pool5", 1024, 1, 7, prevs=prevs)
    d.fc("fc", 1024, 1000)
    return d


def _resnet(blocks):
    d = Definition(3, 224)
    d.conv("conv1", 3, 64, 112, 7)
    d.pool("pool1", 64, 56, 3)
    res, nin = "pool1", 64
    # stage: bottleneck width, fmap size
    for stage, n, mid, s in zip((2, 3, 4, 5), blocks, (64, 128, 256, 512), (56, 28, 14, 7), strict=True):
        for i in range(n):
            p = f"conv{stage}_{i}_"
            d.conv(p + "a", nin if i == 0 else 4 * mid, mid, s, 1)
            d.conv(p + "b", mid, mid, s, 3)
            d.conv(p + "c", mid, 4 * mid, s, 1)
            if i == 0:
                d.conv(f"conv{stage}_br", nin, 4 * mid, s, 1, prevs=(res,))
                res = f"conv{stage}_br"
            d.eltwise(p + "res", 4 * mid, s, 2, prevs=(res, p + "c"))
            res = p + "res"
        nin = 4 * mid
    d.pool("pool5", 2048, 1, 7)
    d.fc("fc", 2048, 1000)
    return d


def _mlp(sizes):
    d = Definition(784, 1)
    for i, (nifm, nofm) in enumerate(zip((784, *sizes[:-1]), sizes, strict=True), start=1):
        d.fc(f"fc{i}", nifm, nofm)
    return d


def _lstm_gnmt():
    d = Definition(1000, 1)
    x = INPUT
    for layer in range(4):
        x = d.lstm_cell(f"cell_l{layer}", 1000, x)
    d.eltwise("Wd", 1000, 1, 1, prevs=(x,))
    return d


def _lstm_phoneme():
    d = Definition(26, 1)
    d.fc("We", 26, 140, prevs=(INPUT,))
    d.fc("Wd", 140, 61, prevs=(d.lstm_cell("cell", 140, "We"),))
    return d


def _lstm_showtell():
    d = Definition(512, 1)
    d.eltwise("Wd", 512, 1, 1, prevs=(d.lstm_cell("cell", 512, INPUT),))
    return d


ZOO = {
    "alex_net": _alex_net, "zfnet": _zfnet, "vgg_net": lambda: _vgg((2, 2, 3, 3, 3)),
    "vgg19_net": lambda: _vgg((2, 2, 4, 4, 4)), "googlenet": _googlenet, "resnet50": lambda: _resnet((3, 4, 6, 3)),
    "resnet152": lambda: _resnet((3, 8, 36, 3)), "mlp_s": lambda: _mlp((500, 250, 10)),
    "mlp_m": lambda: _mlp((1000, 500, 250, 10)), "mlp_l": lambda: _mlp((1500, 1000, 500, 10)),
    "lstm_gnmt": _lstm_gnmt, "lstm_phoneme": _lstm_phoneme, "lstm_showtell": _lstm_showtell,
}

#: layers and MACs per sample, summed by hand from the definitions above (VGG-16's
#: 15.47 G and ResNet-50's 3.86 G are the figures usually quoted for them).
COUNTS = {
    "alex_net": (19, 724_406_816), "zfnet": (11, 2_476_704_896), "vgg_net": (21, 15_470_264_320),
    "vgg19_net": (24, 19_632_062_464), "googlenet": (63, 1_582_671_872), "resnet50": (72, 3_857_973_248),
    "resnet152": (208, 11_282_415_616), "mlp_s": (3, 519_500), "mlp_m": (4, 1_411_500), "mlp_l": (4, 3_181_000),
    "lstm_gnmt": (33, 32_000_000), "lstm_phoneme": (10, 168_980), "lstm_showtell": (9, 2_097_152),
}


@pytest.mark.parametrize("name", sorted(ZOO))
def test_each_network_has_nn_dataflows_layer_count_and_macs(name):
    stated, (layers, macs) = ZOO[name](), COUNTS[name]
    assert (len(stated.layers), sum(s.macs for s in stated.layers)) == (layers, macs)
    net = nn_dataflow_network(name, 4)
    assert (net.name, net.batch, len(net.layers), net.macs) == (name, 4, layers, 4 * macs)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_each_network_reads_nn_dataflows_input_and_external_inputs(name):
    stated = ZOO[name]()
    net = nn_dataflow_network(name, 1)
    want = {INPUT: FmapShape(stated.channels, stated.size, stated.size)}
    assert net.inputs == want | {ext: FmapShape(size, 1, 1) for ext, size in stated.ext.items()}


@pytest.mark.parametrize("name", sorted(ZOO))
def test_each_layer_is_nn_dataflows_in_name_order_producers_output_and_ops(name):
    stated = ZOO[name]().layers
    net = nn_dataflow_network(name, 1)
    assert [layer.name for layer in net.layers] == [s.name for s in stated]
    for layer, s in zip(net.layers, stated, strict=True):
        assert net.producers(layer.name) == s.prevs, layer.name
        assert (layer.ofmap.c, layer.ofmap.h, layer.ofmap.w) == (s.nofm, s.sofm, s.sofm), layer.name
        assert (layer.macs, nn_dataflow_ops(layer)) == (s.macs, s.ops), layer.name


def _run_of(name, batch=2):
    """A run of ``name`` as nn_dataflow would write it: MLP-S's fc1 scheme for every layer,
    with the ``ops`` nn_dataflow counts from the definition, and totals to match."""
    data = reference_data()
    template = data["schedules"]["fc1"]
    stated = ZOO[name]().layers
    data.update(net=name, batch=batch, schedules={})
    for s in stated:
        data["schedules"][s.name] = [{**template[0], "ops": float(s.ops * batch)}, *template[1:]]
    one = template[0]
    data["total_ops"] = float(sum(s.ops for s in stated) * batch)
    data["total_noc_hops"] = len(stated) * sum(one["total_nhops"])
    data["total_accesses"] = [len(stated) * (sum(row) + (sum(one["remote_gbuf_access"]) if i == 1 else 0))
                              for i, row in enumerate(one["access"])]
    return data


@pytest.mark.parametrize("name", sorted(ZOO))
def test_a_run_of_each_network_resolves_to_it(name):
    net = network_of_run(parse_nn_dataflow(_run_of(name), "run.json"))
    assert (net.name, net.batch) == (name, 2)
    assert [layer.name for layer in net.layers] == [s.name for s in ZOO[name]().layers]


@pytest.mark.parametrize(("name", "layer"), [("resnet50", "conv3_1_res"), ("lstm_phoneme", "cell_cout"),
                                             ("lstm_showtell", "Wd")])
def test_an_eltwise_layer_does_one_op_per_operand_and_element(name, layer):
    """nn_dataflow counts nreg operations per output element; kapla's nest
    iterates once per element, whatever the operand count."""
    net = nn_dataflow_network(name, 1)
    elt = net[layer]
    assert elt.op == Op.ELTWISE and elt.n_inputs == len(net.producers(layer))
    assert nn_dataflow_ops(elt) == elt.loop_ops * elt.n_inputs == elt.ofmap.elems * elt.n_inputs
    data = _run_of(name)
    data["schedules"][layer][0]["ops"] = float(elt.loop_ops * 2)
    data["total_ops"] -= (elt.n_inputs - 1) * elt.loop_ops * 2
    if elt.n_inputs == 1:
        network_of_run(parse_nn_dataflow(data, "run.json"))
    else:
        with pytest.raises(InteropError, match=rf"schedules\.{layer}\.ops: .* but layer {layer} of {name} performs "):
            network_of_run(parse_nn_dataflow(data, "run.json"))


def test_lstm_cells_mix_gates_and_state_as_nn_dataflow_does():
    net = nn_dataflow_network("lstm_gnmt", 8)
    assert net.producers("cell_l2_igate") == ("cell_l2_hinit", "cell_l1_hout")
    assert net["cell_l2_igate"].op == Op.FC and (net["cell_l2_igate"].c, net["cell_l2_igate"].k) == (2000, 1000)
    assert [net[f"cell_l0_{p}"].mode for p in ("cout_f", "cout_i", "cout", "hout")] == ["mul", "mul", "add", "mul"]
    assert net["Wd"].op == Op.ELTWISE and net["Wd"].mode == "unary" and net.producers("Wd") == ("cell_l3_hout",)


def test_cnn_padding_reads_nn_dataflows_input():
    """nn_dataflow's input of a layer is (sofm - 1) * strd + sfil: padded up
    to it from the producer's size, or read short where it is smaller."""
    res = nn_dataflow_network("resnet50", 1)
    assert res["conv1"].pad == (2, 2, 3, 3) and res["pool1"].pad == (0, 0, 1, 1)  # 229 of 224, 113 of 112
    assert res["conv3_0_a"].h == 56 and res["conv3_0_a"].pad == (0, 0, 0, 0)  # 55 of 56 rows read
    assert res.producers("conv3_br") == ("conv2_2_res",) and res.producers("conv3_0_a") == ("conv2_2_res",)
    goog = nn_dataflow_network("googlenet", 1)
    assert goog["inception_4a_5x5"].pad == (2, 2, 2, 2) and goog.producers("pool4") == tuple(
        f"inception_4e_{b}" for b in ("1x1", "3x3", "5x5", "pool_proj"))
    zf = nn_dataflow_network("zfnet", 1)
    assert zf["conv1"].pad == (0, 0, 1, 1) and zf["conv2"].pad == (0, 0, 0, 0) and zf["pool2"].pad == (0, 0, 1, 1)
