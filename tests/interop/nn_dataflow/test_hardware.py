"""The hardware of an nn_dataflow run as a kapla ArchSpec."""

from __future__ import annotations

import pytest

from kapla.arch import load_arch
from kapla.errors import ArchError, InteropError
from kapla.interop.nn_dataflow.hardware import BASE_PRESET, arch_from_run
from kapla.interop.nn_dataflow.reader import parse_nn_dataflow, read_nn_dataflow
from tests.interop.nn_dataflow.conftest import ALEXNET, MLP_S, REFERENCES, reference_data


@pytest.mark.parametrize("path", REFERENCES, ids=lambda p: p.stem)
def test_the_references_ran_on_the_multinode_accelerator(path):
    multinode = load_arch("multinode")
    arch = arch_from_run(read_nn_dataflow(path), multinode)
    assert (arch.node_array, arch.pe_array) == ((16, 16), (8, 8))
    assert arch.capacity_bytes("GBUF") == 32 * 1024 and arch.capacity_bytes("REGF") == 64
    assert arch.array_bus.width_bits == 128 and arch.dram_bandwidth == pytest.approx(51.2)
    assert arch.dram_channels is None and arch.dram_channel_nodes == multinode.dram_channel_nodes
    assert (arch.clock_mhz, arch.word_bits, arch.pe_mapping) == (500, 16, "row_stationary")
    # the file's energies are the preset's before rounding to 4-5 digits
    for got, want in ((arch.mac_pj, multinode.mac_pj), (arch.hop_pj, multinode.hop_pj),
                      (arch.static_pj, multinode.static_pj), (arch.array_bus.access_pj, multinode.array_bus.access_pj),
                      *((arch.level(n).access_pj, multinode.level(n).access_pj) for n in ("REGF", "GBUF", "DRAM"))):
        assert got == pytest.approx(want, rel=2e-4)
    # ... and exactly the file's
    assert arch.level("REGF").access_pj == pytest.approx(0.0940885, rel=1e-12)
    assert arch.static_pj == pytest.approx(1272.8688055044508, rel=1e-12)


def test_the_options_follow_the_run():
    per_layer = arch_from_run(read_nn_dataflow(ALEXNET)).options
    tangram = arch_from_run(read_nn_dataflow(MLP_S)).options
    assert (per_layer.buffer_sharing, per_layer.spatial_layer_pipe, per_layer.temporal_layer_pipe) == (False,) * 3
    assert (tangram.buffer_sharing, tangram.spatial_layer_pipe, tangram.temporal_layer_pipe) == (True,) * 3
    data = reference_data()
    data["resource"]["no_time_mux"] = True
    assert not arch_from_run(parse_nn_dataflow(data)).options.temporal_layer_pipe


def test_the_default_base_is_the_named_preset():
    run = read_nn_dataflow(MLP_S)
    assert arch_from_run(run) == arch_from_run(run, load_arch(BASE_PRESET))
    assert arch_from_run(run).name == f"{BASE_PRESET} as in {MLP_S.name}"


def test_another_resource_changes_the_spec():
    data = reference_data()
    res = data["resource"]
    res["proc_region"] = [[4, 8], [0, 0], [1, 1], 0, 8, 8]
    res["dram_region"] = [[1, 2], [0, 0], [1, 7], 1, 2, 2]  # two channels on the top row
    res.update(dim_array=[16, 12], size_gbuf=65536, size_regf=256, array_bus_width=16, dram_bandwidth=6.4)
    for sched in data["schedules"].values():  # keep the layers on the smaller chip
        sched[0]["num_nodes"] = 32
        sched[0]["part"][1] = [[1, 1], [1, 1], [4, 8], [1, 1]]
    data["cost"]["idl_unit"] = 2e-9
    arch = arch_from_run(parse_nn_dataflow(data), load_arch("multinode"))
    assert (arch.node_array, arch.pe_array) == ((4, 8), (16, 12))
    assert (arch.capacity_bytes("GBUF"), arch.capacity_bytes("REGF")) == (128 * 1024, 512)
    assert arch.array_bus.width_bits == 256 and arch.dram_bandwidth == pytest.approx(12.8)
    assert arch.dram_channel_nodes == ((0, 0), (0, 7)) and arch.static_pj == pytest.approx(2000)


def test_dram_nodes_outside_the_array_move_onto_its_nearest_node():
    data = reference_data()
    data["resource"]["dram_region"] = [[2, 1], [-1, 3], [18, 1], 1, 1, 1]  # above and below column 3
    assert arch_from_run(parse_nn_dataflow(data)).dram_channel_nodes == ((0, 3), (15, 3))


def test_a_base_with_read_write_energies_takes_the_files_single_energy():
    base = load_arch("multinode").with_level("GBUF", read_pj=1.0, write_pj=2.0)
    arch = arch_from_run(read_nn_dataflow(MLP_S), base)
    assert arch.read_pj_of("GBUF", "ifm") == arch.write_pj_of("GBUF", "ifm") == pytest.approx(2.832545)


def test_what_kapla_cannot_model_is_one_line():
    data = reference_data()
    data["resource"]["array_bus_width"] = float("inf")
    with pytest.raises(InteropError, match=r"^run\.json: resource\.array_bus_width: the run had no array-bus limit"):
        arch_from_run(parse_nn_dataflow(data, "run.json"))
    data = reference_data()
    data["resource"]["proc_region"] = [[16, 16], [0, 0], [1, 1], 0, 8, 8]
    with pytest.raises(InteropError, match=r"^run\.json: resource\.proc_region: a folded \(zig-zag\) node region"):
        arch_from_run(parse_nn_dataflow(data, "run.json"))
    with pytest.raises(ArchError, match="three memory levels"):
        arch_from_run(read_nn_dataflow(MLP_S), load_arch("simba"))
