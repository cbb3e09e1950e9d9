"""The shipped presets load and carry the reference numbers of DESIGN.md."""

from __future__ import annotations

import pytest

from kapla.arch import describe_arch, list_presets, load_arch

PJ = 1e-12


def test_list_presets():
    assert list_presets() == ["atomic", "atomic_yx", "edge", "eyeriss", "interstellar", "multinode", "multinode_4x4",
                              "multinode_nndataflow", "simba"]


def test_atomic_is_the_papers_chip():
    """Atomic Dataflow's Sec. V-A: 8x8 engines of 16x16 PEs, 128 KB per engine, 500 MHz, HBM 128 GB/s at
    7 pJ/bit, NoC 0.61 pJ/bit/hop, the SRAM's 10.96 mW read power; KC- and YX-Partition engines."""
    kc, yx = load_arch("atomic"), load_arch("atomic_yx")
    assert kc.node_array == (8, 8) and kc.pe_array == (16, 16) and kc.num_pes == 16384
    assert kc.capacity_bytes("GBUF") == 128 * 1024 and kc.clock_mhz == 500
    assert kc.dram_bandwidth * kc.frequency_hz == pytest.approx(128e9)
    assert kc.read_energy("DRAM", "ifm") == pytest.approx(7e-12 * 16)
    assert kc.hop_energy == pytest.approx(0.61e-12 * 16)
    assert kc.read_energy("GBUF", "ifm") == pytest.approx(10.96e-3 / 500e6 / (64 / 16))  # a 64-bit port access
    assert kc.bus_width_words == 4
    assert (kc.pe_unroll.text, yx.pe_unroll.text) == ("C|K", "Y|X")
    assert kc.to_dict() | {"name": "", "pe_mapping": ""} == yx.to_dict() | {"name": "", "pe_mapping": ""}


def test_multinode_structure():
    spec = load_arch("multinode")
    assert spec.level_names == ("REGF", "GBUF", "DRAM")
    assert spec.node_array == (16, 16) and spec.num_nodes == 256
    assert spec.pe_array == (8, 8) and spec.num_pes == 16384 and spec.pes_per_node == 64
    assert spec.level("REGF").capacity == 64 and spec.capacity_words("REGF") == 32
    assert spec.level("GBUF").capacity == 32768 and spec.capacity_words("GBUF") == 16384
    assert spec.level("DRAM").capacity is None and spec.capacity_words("DRAM") is None
    assert spec.word_bits == 16 and spec.word_bytes == 2
    assert spec.frequency_hz == pytest.approx(500e6)
    assert spec.pe_mapping == "row_stationary"
    assert spec.units("GBUF") == 256 and spec.units("DRAM") == 1


def test_multinode_costs():
    spec = load_arch("multinode")
    assert spec.mac_energy == pytest.approx(0.9984 * PJ)
    assert spec.level("REGF").access_energy == pytest.approx(0.0941 * PJ)
    assert spec.bus_energy == pytest.approx(1.6416 * PJ)
    assert spec.level("GBUF").access_energy == pytest.approx(2.8325 * PJ)
    assert spec.level("DRAM").access_energy == pytest.approx(401.89 * PJ)
    assert spec.hop_energy == pytest.approx(9.76 * PJ)
    assert spec.static_energy == pytest.approx(1.2729e-9)
    assert spec.dram_bandwidth == pytest.approx(51.2)
    assert spec.dram_bandwidth_words == pytest.approx(25.6)
    assert spec.array_bus.width_bits == 128 and spec.bus_width_words == 8


def test_multinode_channels_and_options():
    spec = load_arch("multinode")
    assert spec.dram_channels is None
    assert spec.dram_channel_nodes == ((0, 0), (0, 15), (15, 0), (15, 15))
    assert spec.level("GBUF").same_level_transfer
    assert spec.options.temporal_layer_pipe and spec.options.spatial_layer_pipe
    assert spec.options.buffer_sharing


def test_multinode_4x4_scales_static_energy_by_nodes():
    small, big = load_arch("multinode_4x4"), load_arch("multinode")
    assert small.num_nodes == 16 and small.num_pes == 1024
    assert small.static_pj == pytest.approx(big.static_pj * 16 / 256)
    assert small.dram_bandwidth == big.dram_bandwidth
    assert small.dram_channel_nodes == ((0, 0), (0, 3), (3, 0), (3, 3))


def test_edge():
    spec = load_arch("edge")
    assert spec.num_nodes == 1 and spec.pe_array == (16, 16) and spec.num_pes == 256
    assert spec.pe_mapping == "systolic" and spec.level("REGF").same_level_transfer
    assert spec.level("REGF").capacity == 512 and spec.level("GBUF").capacity == 256 * 1024
    assert spec.dram_bandwidth == pytest.approx(12.8) and spec.array_bus.width_bits == 256
    costs = (spec.mac_pj, spec.level("REGF").access_pj, spec.array_bus.access_pj,
             spec.level("GBUF").access_pj, spec.level("DRAM").access_pj, spec.static_pj)
    assert costs == pytest.approx((0.9984, 0.2507, 3.2832, 7.4837, 401.89, 541.0))
    assert spec.dram_channel_nodes == ((0, 0),)


def test_eyeriss():
    spec = load_arch("eyeriss")
    assert spec.num_nodes == 1 and spec.pe_array == (12, 14) and spec.num_pes == 168
    assert spec.pe_mapping == "row_stationary"
    assert spec.level("REGF").capacity == 512 and spec.level("GBUF").capacity == 108 * 1024
    costs = (spec.mac_pj, spec.level("REGF").access_pj, spec.array_bus.access_pj,
             spec.level("GBUF").access_pj, spec.level("DRAM").access_pj)
    assert costs == pytest.approx((2, 1, 4, 15, 460))


@pytest.mark.parametrize("name", list_presets())
def test_describe_mentions_every_level(name):
    spec = load_arch(name)
    text = describe_arch(spec)
    assert text.startswith(f"{name}: ")
    for level in spec.level_names:
        assert f"  {level} " in text


def test_presets_are_hashable_values():
    assert load_arch("multinode") == load_arch("multinode")
    assert len({load_arch("multinode"), load_arch("multinode")}) == 1


def test_multinode_nndataflow_is_multinode_counted_as_nn_dataflow_counts():
    ours, theirs = load_arch("multinode"), load_arch("multinode_nndataflow")
    assert theirs.replace(name="multinode", counting={}) == ours
    assert (theirs.counting.dram_reads, theirs.counting.partial_sums, theirs.counting.gbuf_side,
            theirs.counting.regf_holds) == ("per_node", "through_dram", "pe_side", "window")
    assert "counting" not in ours.to_dict() and theirs.to_dict()["counting"]["dram_reads"] == "per_node"
