"""nn_dataflow's own schedules evaluated by kapla under nn_dataflow's counting (``multinode_nndataflow``).

Where the figures agree the tests say so within 5 %; where they do not, the
difference is pinned here and explained in docs/nn_dataflow.md.
"""

from pathlib import Path

import pytest

from kapla.interop.nn_dataflow import import_schedule

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def alexnet():
    return import_schedule(DATA / "nn_dataflow_alexnet_per_layer.json")


@pytest.fixture(scope="module")
def mlp_s():
    return import_schedule(DATA / "nn_dataflow_mlp_s_tangram.json")


def ratios(result, name):
    ours, theirs = result.kapla.layers[name], result.nn_dataflow.layers[name]
    out = {"energy": ours.energy_j / theirs.energy_j, "time": ours.time_cycles / theirs.time_cycles,
           "hops": ours.noc_hops / theirs.noc_hops}
    for level, words in theirs.accesses.items():
        out[level] = ours.accesses[level] / words if words else float(ours.accesses[level] == 0)
    return out


FC_AND_POOL = ("fc1", "fc2", "fc3", "pool1_a", "pool1_b", "pool3_a", "pool3_b")


@pytest.mark.parametrize("name", FC_AND_POOL)
def test_fc_and_pool_layers_match_within_5_percent_except_noc(alexnet, name):
    r = ratios(alexnet, name)
    for figure in ("time", "DRAM", "GBUF", "ITCN", "REGF"):
        assert abs(r[figure] - 1) <= 0.05, (name, figure, r[figure])
    assert abs(r["energy"] - 1) <= 0.075, (name, r["energy"])


def test_every_layer_does_the_same_work(alexnet, mlp_s):
    for result in (alexnet, mlp_s):
        for name in result.nn_dataflow.layers:
            assert ratios(result, name)["REGF"] == pytest.approx(1, rel=1e-9), name


@pytest.mark.parametrize("name", ["fc1", "fc2", "fc3"])
def test_mlp_s_layers_match_but_for_noc_and_time(mlp_s, name):
    """Pinned weights and forwarded inputs are read from the node buffers and
    delivered over the array bus, as nn_dataflow counts them (its remote
    buffer reads are kapla's reads of the producer's buffers)."""
    r = ratios(mlp_s, name)
    for figure in ("DRAM", "GBUF", "ITCN"):
        assert abs(r[figure] - 1) <= 0.05, (name, figure, r[figure])


def test_mlp_s_fc1_pays_bus_time_for_its_pinned_weights(mlp_s):
    """nn_dataflow's bus time counts only what its global buffer serves, and its
    pinned weights bypass that buffer; kapla's array bus carries every word
    into the PEs: fc1's 33,792 weight words per node over an 8-word bus."""
    ours, theirs = mlp_s.kapla.layers["fc1"], mlp_s.nn_dataflow.layers["fc1"]
    assert theirs.time_cycles == 2112 and ours.time_cycles == 33_792 // 8
    assert mlp_s.kapla.total.time_cycles == 4224 and mlp_s.nn_dataflow.total.time_cycles == 2688


@pytest.mark.parametrize("name", ["pool2_a", "conv3_a", "conv4_a", "conv5_a", "conv3_b"])
def test_later_convolutions_match_though_one_pe_is_idle(alexnet, name):
    """13 output rows on 2 x 7 PEs leave one PE idle: it gets no data (and kapla's check objects)."""
    r = ratios(alexnet, name)
    for figure in ("time", "DRAM", "GBUF", "ITCN", "REGF"):
        assert abs(r[figure] - 1) <= 0.01, (name, figure, r[figure])
    assert any("idle iterations" in n for n in alexnet.kapla.layers[name].notes)


def test_conv1_is_the_one_layer_kapla_cannot_reproduce(alexnet):
    """conv1 folds 11 filter rows over 8 PE rows and bypasses the buffer for its
    input; kapla's PE unit holding both folds reads the input rows once where
    nn_dataflow streams them once per fold (pinned: docs/nn_dataflow.md)."""
    r = ratios(alexnet, "conv1_a")
    assert r["DRAM"] == pytest.approx(0.637, abs=0.01)
    assert r["REGF"] == pytest.approx(1.0, abs=1e-9)


def test_conv2_reads_its_input_once_where_nn_dataflow_reads_it_per_fold(alexnet):
    """conv2's 14 output rows per node fold into two passes of 7; nn_dataflow
    reads each pass's 11 input rows, kapla's unit the node's 18 rows once."""
    r = ratios(alexnet, "conv2_a")
    assert r["GBUF"] == pytest.approx(18 / 22, rel=1e-9)
    for figure in ("time", "DRAM", "ITCN", "REGF"):
        assert abs(r[figure] - 1) <= 0.05, (figure, r[figure])


def test_network_totals(alexnet, mlp_s):
    a = alexnet.kapla.total.energy_j / alexnet.nn_dataflow.total.energy_j
    assert a == pytest.approx(0.937, abs=0.01)
    m = mlp_s.kapla.total
    assert m.accesses["DRAM"] == mlp_s.nn_dataflow.total.accesses["DRAM"] == 51456
    assert m.accesses["REGF"] == pytest.approx(mlp_s.nn_dataflow.total.accesses["REGF"], rel=1e-9)


def test_kapla_objections_are_kept_with_the_layer_and_written(alexnet, mlp_s):
    notes = {name: f.notes for name, f in alexnet.kapla.layers.items()}
    # counted by its sliding window, a pass fits the 64 B register file (conv2), but
    # conv1's unit holds both folds of its 11 filter rows, where nn_dataflow holds one
    assert any("REGF needs 90 B per unit but holds 64 B" in n for n in notes["conv1_a"])
    assert notes["conv2_a"] == ()
    # 13 output rows over 14 PE rows leave one idle
    assert any("idle iterations" in n for n in notes["conv3_a"])
    assert notes["fc1"] == ()  # kapla's check accepts nn_dataflow's fc1
    doc = alexnet.to_dict()
    assert doc["kapla"]["layers"]["conv1_a"]["notes"] == list(notes["conv1_a"])
    assert "notes" not in doc["kapla"]["layers"]["fc1"] and "notes" not in doc["nn_dataflow"]["layers"]["conv1_a"]
    # MLP-S: the pinned weights nn_dataflow keeps in each layer's own block
    assert any("pinned weights would be reloaded" in n for n in mlp_s.kapla.layers["fc1"].notes)


def test_kaplas_own_alexnet_schedule_uses_less_energy_than_nn_dataflows(alexnet):
    """Done-when of issue 11: on nn_dataflow's hardware and counting, with its
    options (layer by layer, no buffer sharing), KAPLA's schedule costs less
    than nn_dataflow's own exhaustive optimum (0.931x when measured)."""
    import kapla
    from kapla.arch.loader import load_preset
    from kapla.interop.nn_dataflow.hardware import arch_from_run

    arch = arch_from_run(alexnet.run, load_preset("multinode_nndataflow"))
    ours = kapla.schedule(alexnet.network, arch, batch=alexnet.run.batch, jobs=1, pipelining=False,
                          buffer_sharing=False)
    assert ours.valid and ours.complete
    assert ours.energy_j < 0.96 * alexnet.nn_dataflow.total.energy_j


def _energies_without_noc(result):
    """Per layer, kapla's energy less its NoC's over nn_dataflow's less its NoC's."""
    from kapla.interop.nn_dataflow.evaluate import imported_layers

    out = {}
    for im in imported_layers(result.run, result.network, result.arch):
        theirs = result.run.schedules[im.name]
        ours = result.kapla.layers[im.name].energy_j - im.cost.energy.get("NoC", 0.0)
        out[im.name] = ours / (theirs.cost - theirs.cost_noc)
    return out


def test_energy_apart_from_the_noc_agrees_on_every_layer_but_conv1(alexnet, mlp_s):
    """The hop models differ (docs/nn_dataflow.md, "In short"); everything else
    nn_dataflow charges, kapla charges within 5 % on every layer but conv1,
    whose folds re-read the input per fold in nn_dataflow (pinned above)."""
    for result in (alexnet, mlp_s):
        energies = _energies_without_noc(result)
        assert energies.keys() == result.nn_dataflow.layers.keys()
        for name, ratio in energies.items():
            if name.startswith("conv1"):
                assert ratio == pytest.approx(0.681, abs=0.005), name
            else:
                assert abs(ratio - 1) <= 0.05, (name, ratio)


@pytest.mark.parametrize(("run", "name", "ratio"), [
    ("alexnet", "pool2_a", 0.488), ("alexnet", "conv3_a", 1.501), ("alexnet", "fc1", 1.236),
    ("mlp_s", "fc1", 0.516), ("mlp_s", "fc2", 0.050), ("mlp_s", "fc3", 0.089)])
def test_noc_hops_differ_by_the_hop_model(alexnet, mlp_s, run, name, ratio):
    """kapla charges DRAM traffic its mean distance to the nearest channel and
    forwarded data the distance between regions; nn_dataflow sums distances
    from each data range's home, set by the producer's partition."""
    result = {"alexnet": alexnet, "mlp_s": mlp_s}[run]
    assert ratios(result, name)["hops"] == pytest.approx(ratio, abs=0.005)


def test_conv1_differs_by_its_folds_alone(alexnet):
    r = ratios(alexnet, "conv1_a")
    assert (round(r["time"], 3), round(r["GBUF"], 3), round(r["ITCN"], 3)) == (0.637, 0.5, 0.591)


def test_kaplas_own_mlp_s_schedule_uses_less_energy_than_nn_dataflows(mlp_s):
    """Done-when of issue 11 on the other reference, with all of TANGRAM's
    options: KAPLA descending 32 skeletons (0.984x when measured; the
    exhaustive search's 0.949x is in benchmarks/nn_dataflow.py)."""
    import kapla
    from kapla.arch.loader import load_preset
    from kapla.interop.nn_dataflow.hardware import arch_from_run

    arch = arch_from_run(mlp_s.run, load_preset("multinode_nndataflow"))
    ours = kapla.schedule(mlp_s.network, arch, batch=mlp_s.run.batch, jobs=1, solver_options={"top": 32})
    assert ours.valid and ours.complete
    assert ours.energy_j < mlp_s.nn_dataflow.total.energy_j


@pytest.fixture(scope="module")
def mlp_m():
    return import_schedule(DATA / "nn_dataflow_mlp_m_tangram.json")


def test_mlp_m_on_its_folded_regions_agrees_but_for_the_bus_and_the_noc(mlp_m):
    """The shared MLP-M run: four layers in one segment on folded regions of 142, 90, 22 and 2 nodes.
    Placed where nn_dataflow put them, with fc1's input (which bypasses the buffers) fetched once per
    sharing group as nn_dataflow's access forwarding does, time and DRAM agree exactly, GBUF and REGF
    within 5 %. ITCN: fc1 0.908, nn_dataflow's Eyeriss passes re-read the input per fold inside the
    pass (as conv1 of AlexNet, docs/nn_dataflow.md). NoC: kapla's hop model (distance to the nearest
    channel, neighbours one hop apart) against nn_dataflow's per-node distances to each datum's home."""
    ours, theirs = mlp_m.kapla.total, mlp_m.nn_dataflow.total
    assert ours.time_cycles == theirs.time_cycles == 6400
    assert ours.accesses["DRAM"] == theirs.accesses["DRAM"] == 50816
    assert ours.accesses["REGF"] == pytest.approx(theirs.accesses["REGF"], rel=1e-9)
    assert ours.accesses["GBUF"] / theirs.accesses["GBUF"] == pytest.approx(0.971, abs=0.005)
    assert ours.accesses["ITCN"] / theirs.accesses["ITCN"] == pytest.approx(0.933, abs=0.005)
    assert ours.noc_hops / theirs.noc_hops == pytest.approx(0.541, abs=0.01)
    assert ours.energy_j / theirs.energy_j == pytest.approx(0.891, abs=0.01)
    fc1 = ratios(mlp_m, "fc1")
    assert fc1["DRAM"] == pytest.approx(1.0) and fc1["time"] == pytest.approx(1.0)  # not 63x: one copy per group
    assert any("cannot both share and bypass ifm" in n for n in mlp_m.kapla.layers["fc1"].notes)


@pytest.mark.parametrize("run", ["mlp_s", "mlp_m"])
def test_kaplas_own_mlp_schedules_use_no_more_energy_than_nn_dataflows_optimum(run, request):
    """Full TANGRAM on nn_dataflow's hardware and counting at batch 64: KAPLA's schedule (its default
    search) costs no more than nn_dataflow's own exhaustive optimum (MLP-S 0.978x, MLP-M 0.762x when
    measured)."""
    import kapla
    from kapla.arch.loader import load_preset
    from kapla.interop.nn_dataflow.hardware import arch_from_run

    reference = request.getfixturevalue(run)
    arch = arch_from_run(reference.run, load_preset("multinode_nndataflow"))
    ours = kapla.schedule(reference.network, arch, batch=reference.run.batch, jobs=1)
    assert ours.valid and ours.complete
    assert ours.energy_j <= reference.nn_dataflow.total.energy_j


def test_mlp_l_agrees_within_5_percent_but_for_the_noc():
    """nn_dataflow's MLP-L run (full TANGRAM, one segment on folded regions of 94, 120, 40 and 2 nodes;
    made for kapla with nn_dataflow 2.1 as the shared runs were): every figure within 5 % but the NoC's
    word-hops (kapla's hop model, docs/nn_dataflow.md)."""
    result = import_schedule(DATA / "nn_dataflow_mlp_l_tangram.json")
    ours, theirs = result.kapla.total, result.nn_dataflow.total
    assert ours.time_cycles == theirs.time_cycles == 12800
    assert ours.accesses["DRAM"] == theirs.accesses["DRAM"] == 50816
    for level in ("GBUF", "ITCN", "REGF"):
        assert ours.accesses[level] == pytest.approx(theirs.accesses[level], rel=0.05)
    assert ours.energy_j == pytest.approx(theirs.energy_j, rel=0.05)
    assert ours.noc_hops / theirs.noc_hops == pytest.approx(0.481, abs=0.01)


# nn_dataflow's own per-layer runs of two LSTMs (nn_dataflow 2.1-3-g198a527, lstm_phoneme and
# lstm_showtell, batch 64, 16x16 nodes of 8x8 PEs, 64 B REGF, 32 KiB GBUF, 128-bit bus, 51.2 B/cycle
# DRAM, AlexNet's unit costs, hybrid/batch/ifmap partitioning, analytical loop blocking)
@pytest.fixture(scope="module")
def lstms():
    return {name: import_schedule(DATA / f"nn_dataflow_{name}_per_layer.json")
            for name in ("lstm_phoneme", "lstm_showtell")}


def test_an_lstm_run_imports_with_its_eltwise_layers(lstms):
    for name, result in lstms.items():
        assert result.network.name == name and result.run.batch == 64
        # in nn_dataflow's scheduling order
        assert list(result.kapla.layers) == list(result.run.schedules)
        assert sorted(result.run.schedules) == sorted(layer.name for layer in result.network)
        assert {str(layer.op) for layer in result.network} == {"fc", "eltwise"}
    assert set(lstms["lstm_showtell"].network.inputs) == {"__INPUT__", "cell_cinit", "cell_hinit"}


@pytest.mark.parametrize("name", ["cell_cand", "cell_igate", "cell_fgate", "cell_ogate"])
def test_lstm_gates_match_but_for_the_noc(lstms, name):
    r = ratios(lstms["lstm_showtell"], name)
    for figure in ("time", "DRAM", "GBUF", "ITCN", "REGF"):
        assert r[figure] == pytest.approx(1.0, rel=1e-9), (figure, r[figure])
    assert ratios(lstms["lstm_phoneme"], name)["REGF"] == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize("run", ["lstm_phoneme", "lstm_showtell"])
@pytest.mark.parametrize("name", ["cell_cout_f", "cell_cout_i", "cell_cout", "cell_hout"])
def test_a_two_operand_eltwise_layer_reads_both_operands_where_nn_dataflow_sizes_one(lstms, run, name):
    """nn_dataflow sizes an eltwise layer's input as one fmap of its output's
    channels and counts an input read and an output read and write per operand
    in the register file; kapla reads each operand once and writes the output
    (convert.py's notes): 3 words for 2 outside the PEs, 4 for 6 inside them.
    Both bypass the node buffers."""
    assert lstms[run].network[name].n_inputs == 2
    r = ratios(lstms[run], name)
    for figure in ("time", "DRAM", "ITCN"):
        assert r[figure] == pytest.approx(1.5, rel=1e-9), (figure, r[figure])
    assert lstms[run].kapla.layers[name].accesses["GBUF"] == lstms[run].nn_dataflow.layers[name].accesses["GBUF"] == 0
    assert r["REGF"] == pytest.approx(2 / 3, rel=1e-9)
    assert lstms[run].kapla.layers[name].notes == ()


def test_a_one_operand_eltwise_layer_agrees(lstms):
    r = ratios(lstms["lstm_showtell"], "Wd")
    for figure in ("time", "DRAM", "GBUF", "ITCN", "REGF"):
        assert r[figure] == pytest.approx(1.0, rel=1e-9), (figure, r[figure])
    assert abs(r["energy"] - 1) <= 0.01


def test_lstm_showtell_pipelined_figures_are_pinned():
    """nn_dataflow's full-TANGRAM run of lstm_showtell (kapla's lstm_m: one LSTM cell of 512), one segment
    of four spatial stages. Energy 0.964, DRAM exact, ITCN and REGF within 0.3 %. Pinned here, not yet
    explained in full (docs/nn_dataflow.md): time 1.64 (each gate 2x, the ratio of MLP-S's fc1, whose bus
    time is explained), GBUF 0.852 (the gates 0.75, cell_cand 0.5), NoC 0.379 (the hop model). Its gates
    share data their buffers bypass, which kapla's own space does not allow. cell_cout_f reads the cell's
    C from DRAM and its forget gate's output on chip (nn_dataflow marks its input as from DRAM; its DRAM
    count is C's alone): before kapla forwarded part of an input, it read both from DRAM (DRAM 1.25,
    energy 1.007)."""
    result = import_schedule(DATA / "nn_dataflow_lstm_showtell_tangram.json")
    ours, theirs = result.kapla.total, result.nn_dataflow.total
    assert ours.energy_j / theirs.energy_j == pytest.approx(0.964, abs=0.005)
    assert ours.accesses["REGF"] == pytest.approx(theirs.accesses["REGF"], rel=0.003)
    assert ours.accesses["ITCN"] / theirs.accesses["ITCN"] == pytest.approx(1.002, abs=0.005)
    assert ours.time_cycles / theirs.time_cycles == pytest.approx(1.635, abs=0.01)
    assert ours.accesses["DRAM"] == theirs.accesses["DRAM"]
    assert ours.accesses["GBUF"] / theirs.accesses["GBUF"] == pytest.approx(0.852, abs=0.005)
    cout_f = result.kapla.layers["cell_cout_f"]
    assert cout_f.accesses["DRAM"] == result.nn_dataflow.layers["cell_cout_f"].accesses["DRAM"] == 512 * 64
    gate = ratios(result, "cell_igate")
    assert gate["time"] == pytest.approx(2.0) and gate["REGF"] == pytest.approx(1.0)
    assert any("cannot both share and bypass" in n for n in result.kapla.layers["cell_igate"].notes)
