"""The generic memory hierarchy: holds, split capacities, per-access energies,
energy tables, unrolls, per-level buses and tensor widths."""

from __future__ import annotations

import copy
import enum
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kapla.arch import BusSpec, Unroll, load_arch, parse_arch
from kapla.arch.spec import TENSOR_KINDS
from kapla.errors import ArchError

PJ = 1e-12
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def data_of(name: str) -> dict[str, Any]:
    return copy.deepcopy(load_arch(name).to_dict())


def parse_error(data: dict[str, Any]) -> str:
    with pytest.raises(ArchError) as info:
        parse_arch(data, "hw")
    message = str(info.value)
    assert "\n" not in message
    return message


# --------------------------------------------------------------- valid forms


def test_holds_default_is_every_tensor(multinode_data):
    spec = parse_arch(multinode_data)
    assert spec.levels[0].holds is None and spec.levels[0].held == TENSOR_KINDS
    assert all(spec.holds(i, kind) for i in range(3) for kind in TENSOR_KINDS)
    assert spec.holders("wgt") == (0, 1, 2)


def test_holds_subset_bypasses_levels(multinode_data):
    multinode_data["levels"][0]["holds"] = ["wgt"]
    multinode_data["levels"][1]["holds"] = ["ofm", "ifm"]
    spec = parse_arch(multinode_data)
    assert spec.levels[1].holds == ("ifm", "ofm")  # stored in canonical order
    assert spec.holds(0, "wgt") and not spec.holds(0, "ifm")
    assert spec.holders("wgt") == (0, 2) and spec.holders("ifm") == (1, 2) and spec.holders("ofm") == (1, 2)
    assert spec.holds(2, "wgt") and spec.holds(-1, "ifm")  # DRAM holds everything


def test_split_capacity_holds_its_keys(multinode_data):
    multinode_data["levels"][1]["capacity"] = {"wgt": "24 KiB", "ifm": 8192}
    spec = parse_arch(multinode_data)
    assert spec.capacity_is_split(1) and not spec.capacity_is_split(0)
    assert spec.levels[1].held == ("ifm", "wgt")
    assert spec.capacity_bytes(1, "wgt") == 24 * 1024 and spec.capacity_bytes(1, "ifm") == 8192
    assert spec.capacity_bytes(1, "ofm") is None
    assert spec.holders("ofm") == (0, 2)


def test_split_capacity_with_matching_holds(multinode_data):
    multinode_data["levels"][1].update(capacity={"wgt": 4096, "ofm": 512}, holds=["ofm", "wgt"])
    assert parse_arch(multinode_data).levels[1].held == ("wgt", "ofm")


def test_read_and_write_energies_default_to_access_pj(multinode_data):
    spec = parse_arch(multinode_data)
    assert spec.read_energy(1, "ifm") == spec.write_energy(1, "ofm") == 2.8325 * PJ
    multinode_data["levels"][1].update(read_pj=2.0, write_pj=3.5)
    spec = parse_arch(multinode_data)
    assert spec.read_energy(1, "wgt") == 2.0 * PJ and spec.write_energy(1, "wgt") == 3.5 * PJ
    multinode_data["levels"][1].update(read_pj=None, write_pj=3.5)
    assert parse_arch(multinode_data).read_energy(1, "wgt") == 2.8325 * PJ


def test_energy_table_replaces_access_pj(multinode_data):
    del multinode_data["levels"][1]["access_pj"]
    multinode_data["levels"][1].update(energy_table="interstellar", capacity="128 KiB")
    spec = parse_arch(multinode_data)
    assert spec.levels[1].access_pj is None
    assert spec.read_energy(1, "ifm") == spec.write_energy(1, "wgt") == 13.5 * PJ
    with pytest.raises(ArchError, match="use ArchSpec.read_energy"):
        spec.levels[1].access_energy  # noqa: B018


def test_double_buffered_levels_are_priced_at_twice_their_capacity(multinode_data):
    del multinode_data["levels"][1]["access_pj"]
    multinode_data["levels"][1].update(energy_table="interstellar", capacity="128 KiB", double_buffered=True)
    spec = parse_arch(multinode_data)
    assert spec.read_energy(1, "ifm") == 20.25 * PJ  # the 256 KiB entry
    assert spec.capacity_bytes(1) == 128 * 1024  # what the data may occupy is unchanged
    assert parse_arch(spec.to_dict()) == spec
    assert "double_buffered" not in spec.replace(**{**spec.to_dict(), "levels": [
        {**lvl, "double_buffered": False} for lvl in spec.to_dict()["levels"]]}).to_dict()["levels"][1]


@pytest.mark.parametrize("capacity, double, message", [
    ("1 MiB", False, "levels[1].capacity: energy table 'interstellar' covers 16 B to 512 KiB; no energy for 1 MiB"),
    ("512 KiB", True, "levels[1].capacity: energy table 'interstellar' covers 16 B to 512 KiB; no energy for "
                      "1 MiB (double-buffered: twice the capacity)"),
    ({"wgt": "8 B", "ifm": "1 KiB", "ofm": "1 KiB"}, False,
     "levels[1].capacity.wgt: energy table 'interstellar' covers 16 B to 512 KiB; no energy for 8 B"),
])
def test_a_capacity_outside_the_energy_table_is_one_error_naming_it(multinode_data, capacity, double, message):
    del multinode_data["levels"][1]["access_pj"]
    multinode_data["levels"][1].update(energy_table="interstellar", capacity=capacity, double_buffered=double)
    with pytest.raises(ArchError) as err:
        parse_arch(multinode_data)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_fixed_energy_needs_no_table_entry(multinode_data):
    multinode_data["levels"][1].update(energy_table="interstellar", capacity="1 MiB")  # access_pj given
    assert parse_arch(multinode_data).read_energy(1, "ifm") == 2.8325 * PJ


def test_explicit_energies_win_over_the_table(multinode_data):
    multinode_data["levels"][1].update(energy_table="interstellar", capacity="128 KiB", write_pj=20.0)
    spec = parse_arch(multinode_data)
    assert spec.read_energy(1, "ifm") == 2.8325 * PJ  # access_pj given
    assert spec.write_energy(1, "ifm") == 20.0 * PJ
    del multinode_data["levels"][1]["access_pj"]
    spec = parse_arch(multinode_data)
    assert spec.read_energy(1, "ifm") == 13.5 * PJ and spec.write_energy(1, "ifm") == 20.0 * PJ


@pytest.mark.parametrize("unroll, canonical", [
    ("free", "free"), ("partition", "partition"), ("FY|Y", "S|Y"), ("C, FY|K + repl", "C,S|K+repl"),
])
def test_unroll_forms_at_the_node_level(multinode_data, unroll, canonical):
    multinode_data["levels"][1]["unroll"] = unroll
    spec = parse_arch(multinode_data)
    assert spec.levels[1].unroll == canonical and spec.unroll_of(1).text == canonical


@pytest.mark.parametrize("mapping, unroll", [
    ("free", Unroll("free")),
    ("C|K", Unroll("dims", rows=("C",), cols=("K",))),
    ("FX|Y+repl", Unroll("dims", rows=("R",), cols=("Y",), replicate=True)),
])
def test_pe_mapping_takes_free_and_dims(multinode_data, mapping, unroll):
    multinode_data["pe_mapping"] = mapping
    spec = parse_arch(multinode_data)
    assert spec.pe_mapping == unroll.text and spec.unroll_of(0) == unroll == spec.pe_unroll
    with pytest.raises(ArchError, match="is not a PE mapping template"):
        spec.pe_mapping_template  # noqa: B018


def test_pe_mapping_comes_from_level0_unroll(multinode_data):
    del multinode_data["pe_mapping"]
    multinode_data["levels"][0]["unroll"] = "FY|Y"
    spec = parse_arch(multinode_data)
    assert spec.pe_mapping == "S|Y" and spec.levels[0].unroll == "S|Y"
    assert parse_arch(spec.to_dict()) == spec


def test_pe_mapping_and_level0_unroll_may_both_be_given(multinode_data):
    multinode_data["pe_mapping"] = "FY|Y"
    multinode_data["levels"][0]["unroll"] = "S | Y"
    assert parse_arch(multinode_data).unroll_of(0).text == "S|Y"
    multinode_data["pe_mapping"] = "row_stationary"
    multinode_data["levels"][0]["unroll"] = "row_stationary"
    assert parse_arch(multinode_data).pe_mapping_template.name == "row_stationary"


def test_level_bus(multinode_data):
    levels = multinode_data["levels"]
    levels.insert(1, {"name": "LBUF", "capacity": "2 KiB", "access_pj": 1.0,
                      "bus": {"width_bits": 256, "access_pj": 0.5}})
    spec = parse_arch(multinode_data)
    assert spec.bus_of(1) == BusSpec(width_bits=256, access_pj=0.5)
    assert spec.bus_of(1).energy == 0.5 * PJ
    assert spec.bus_of(0) == spec.array_bus and spec.bus_of(0).energy == spec.bus_energy
    assert spec.bus_of(2) is None and spec.bus_of(3) is None


def test_tensor_bits(multinode_data):
    multinode_data["tensor_bits"] = {"ofm": 24}
    spec = parse_arch(multinode_data)
    assert [spec.tensor_bits_of(k) for k in TENSOR_KINDS] == [16, 16, 24]
    assert spec.tensor_bytes_of("ofm") == 3.0 and spec.tensor_bytes_of("ifm") == 2.0
    assert spec.read_energy(1, "ofm") == pytest.approx(1.5 * spec.read_energy(1, "ifm"))
    assert spec.to_dict()["tensor_bits"] == {"ofm": 24}


# -------------------------------------------------------------------- errors


@pytest.mark.parametrize("edit, expected", [
    # holds
    (lambda d: d["levels"][1].update(holds=["ifm", "psum"]),
     "levels[1].holds[1]: unknown tensor kind (got 'psum'; expected ifm, wgt or ofm)"),
    (lambda d: d["levels"][1].update(holds=["ifm", "wgt", "ifm"]),
     "levels[1].holds[2]: duplicate tensor kind 'ifm'"),
    (lambda d: d["levels"][1].update(holds=[]), "levels[1].holds: must list at least one of ifm, wgt or ofm"),
    (lambda d: d["levels"][1].update(holds="wgt"), "levels[1].holds: must be a list (got 'wgt')"),
    (lambda d: d["levels"][1].update(holds=[3]), "levels[1].holds[0]: must be a string (got 3)"),
    (lambda d: d["levels"][2].update(holds=["ifm", "wgt"]),
     "levels[2].holds: DRAM must hold ifm, wgt and ofm (got [ifm, wgt])"),
    # split capacities
    (lambda d: d["levels"][1].update(capacity={"wgt": 0, "ifm": 64}),
     "levels[1].capacity.wgt: must be positive (got 0)"),
    (lambda d: d["levels"][1].update(capacity={"wgt": "4 KB"}),
     "levels[1].capacity.wgt: expected a byte count"),
    (lambda d: d["levels"][1].update(capacity={"psum": 64}),
     "levels[1].capacity.psum: unknown field"),
    (lambda d: d["levels"][1].update(capacity={}), "levels[1].capacity: a split capacity needs a buffer"),
    (lambda d: d["levels"][1].update(capacity={"wgt": 64}, holds=["wgt", "ifm"]),
     "levels[1].capacity: a split capacity needs exactly one buffer per held tensor "
     "(holds: ifm, wgt; buffers: wgt)"),
    (lambda d: (d.update(tensor_bits={"ofm": 24}), d["levels"][1].update(capacity={"ofm": 2, "ifm": 2})),
     "levels[1].capacity.ofm: smaller than one 24-bit ofm word (got 2)"),
    (lambda d: (d.update(tensor_bits={"ofm": 32}), d["levels"][0].update(capacity=3)),
     "levels[0].capacity: smaller than one 32-bit word (got 3)"),
    (lambda d: d["levels"][2].update(capacity={"wgt": 64, "ifm": 64, "ofm": 64}),
     "levels[2].capacity: DRAM cannot be split per tensor"),
    (lambda d: d["levels"][0].update(capacity=[64]), "levels[0].capacity: must be an integer (got [64])"),
    # energies
    (lambda d: d["levels"][0].update(read_pj=-1.0), "levels[0].read_pj: must not be negative (got -1.0)"),
    (lambda d: d["levels"][0].update(write_pj="1 pJ"), "levels[0].write_pj: must be a number (got '1 pJ')"),
    (lambda d: d["levels"][1].pop("access_pj"), "levels[1].access_pj: missing required field"),
    (lambda d: d["levels"][1].update(energy_table="cacti"),
     "levels[1].energy_table: unknown energy table (got 'cacti'; known: interstellar)"),
    (lambda d: d["levels"][2].update(energy_table="interstellar"),
     "levels[2].energy_table: DRAM has no capacity to look an energy up by"),
    # unrolls
    (lambda d: d["levels"][1].update(unroll="C|Q"), "levels[1].unroll: unknown loop dim 'Q'"),
    (lambda d: d["levels"][1].update(unroll="C|K|X"), "levels[1].unroll: expected exactly one '|'"),
    (lambda d: d["levels"][1].update(unroll="diagonal"),
     "levels[1].unroll: unknown unrolling (got 'diagonal'"),
    (lambda d: d["levels"][1].update(unroll="row_stationary"),
     "levels[1].unroll: PE mapping template 'row_stationary' applies to level 0 only"),
    (lambda d: d["levels"][0].update(unroll="partition"), "levels[0].unroll: partition is node partitioning"),
    (lambda d: d["levels"][2].update(unroll="free"), "levels[2].unroll: DRAM has no array of units"),
    (lambda d: d["levels"][0].update(unroll="C|K"),
     "levels[0].unroll: disagrees with pe_mapping 'row_stationary' (got 'C|K')"),
    (lambda d: d.pop("pe_mapping"), "pe_mapping: missing required field"),
    (lambda d: d.update(pe_mapping="C|Z"), "pe_mapping: unknown loop dim 'Z'"),
    (lambda d: d.update(pe_mapping="partition"), "pe_mapping: partition is node partitioning"),
    (lambda d: (d.pop("pe_mapping"), d["levels"][0].update(unroll="systolic")),
     "levels[0].same_level_transfer: must be true: PE mapping 'systolic'"),
    # buses
    (lambda d: d["levels"][0].update(bus={"width_bits": 64, "access_pj": 1.0}),
     "levels[0].bus: level 0 is fed by array_bus"),
    (lambda d: d["levels"][1].update(bus={"width_bits": 64, "access_pj": 1.0}),
     "levels[1].bus: the node level is fed over the NoC"),
    (lambda d: d["levels"][2].update(bus={"width_bits": 64, "access_pj": 1.0}),
     "levels[2].bus: DRAM has no outer level"),
    (lambda d: d["levels"][1].update(bus={"widht_bits": 64, "access_pj": 1.0}),
     "levels[1].bus.width_bits: missing required field; "
     "levels[1].bus.widht_bits: unknown field (did you mean 'width_bits'?)"),
    # tensor widths
    (lambda d: d.update(tensor_bits={"ofm": 12}), "tensor_bits.ofm: must be a multiple of 8 (got 12)"),
    (lambda d: d.update(tensor_bits={"ofm": 0}), "tensor_bits.ofm: must be positive (got 0)"),
    (lambda d: d.update(tensor_bits={"psum": 24}), "tensor_bits.psum: unknown field"),
    (lambda d: d.update(tensor_bits=24), "tensor_bits: must be a mapping of fields (got 24)"),
    # did you mean
    (lambda d: d["levels"][1].update(energy_tabel="interstellar"),
     "levels[1].energy_tabel: unknown field (did you mean 'energy_table'?)"),
    (lambda d: d["levels"][1].update(hold=["ifm"]), "levels[1].hold: unknown field (did you mean 'holds'?)"),
    (lambda d: d.update(tensor_bit={"ofm": 24}), "tensor_bit: unknown field (did you mean 'tensor_bits'?)"),
])
def test_new_field_errors(multinode_data, edit, expected):
    edit(multinode_data)
    assert parse_error(multinode_data).startswith(f"hw: {expected}")


def test_invalid_level0_unroll_is_reported_once(multinode_data):
    del multinode_data["pe_mapping"]
    multinode_data["levels"][0]["unroll"] = "C|Q"
    message = parse_error(multinode_data)
    assert message.startswith("hw: levels[0].unroll: unknown loop dim 'Q'") and "pe_mapping" not in message
    multinode_data["levels"][0]["unroll"] = "partition"
    assert parse_error(multinode_data).startswith("hw: levels[0].unroll: partition is node partitioning")


def test_level_bus_width_must_be_whole_words():
    data = data_of("multinode")
    data["levels"].insert(1, {"name": "LBUF", "capacity": 2048, "access_pj": 1.0,
                              "bus": {"width_bits": 100, "access_pj": 0.5}})
    assert parse_error(data) == "hw: levels[1].bus.width_bits: must be a multiple of word_bits=16 (got 100)"


def test_error_in_file_names_source_and_path(write_yaml):
    data = data_of("simba")
    data["levels"][1]["capacity"]["wgt"] = 0
    path = write_yaml(data, "simba.yaml")
    with pytest.raises(ArchError) as info:
        load_arch(path)
    assert str(info.value) == f"hardware file {path}: levels[1].capacity.wgt: must be positive (got 0)"


# ------------------------------------------------------- accessors on presets


def test_simba_structure():
    spec = load_arch("simba")
    assert spec.level_names == ("REGF", "VBUF", "PEBUF", "GBUF", "DRAM")
    assert spec.num_nodes == 1 and spec.num_pes == 1024 and spec.pes_per_node == 1024
    assert spec.units("VBUF") == 128 and spec.units("PEBUF") == 16
    assert spec.holders("wgt") == (0, 1, 4)
    assert spec.holders("ifm") == (2, 3, 4)
    assert spec.holders("ofm") == (1, 3, 4)
    assert [spec.tensor_bits_of(k) for k in TENSOR_KINDS] == [8, 8, 24]
    assert spec.word_bits == 8 and spec.tensor_bytes_of("ofm") == 3.0
    assert [spec.unroll_of(i).text for i in range(5)] == ["free", "free", "free", "partition", "free"]
    assert spec.pe_mapping == "free" and spec.bus_of(0).width_bits == 64
    assert spec.dram_bandwidth == 32.0 and spec.clock_mhz == 1000.0


def test_simba_capacities():
    spec = load_arch("simba")
    assert spec.capacity_is_split(1) and not any(spec.capacity_is_split(i) for i in (0, 2, 3, 4))
    assert spec.capacity_bytes(1, "wgt") == 4096 and spec.capacity_bytes(1, "ofm") == 384
    assert spec.capacity_bytes(1, "ifm") is None
    assert spec.capacity_bytes(0) == 1
    assert spec.capacity_bytes(3) == spec.capacity_bytes(3, "wgt") == 128 * 1024
    assert spec.capacity_bytes(4) is None and spec.capacity_bytes("DRAM", "ofm") is None
    # per PE: 64 B registers, 32 KB weights, 3 KB psums, 8 KB inputs
    assert spec.capacity_bytes(0) * 64 == 64
    assert spec.capacity_bytes(1, "wgt") * 8 == 32 * 1024 and spec.capacity_bytes(1, "ofm") * 8 == 3 * 1024
    with pytest.raises(ArchError, match="level VBUF of hardware 'simba' is split per tensor"):
        spec.capacity_bytes(1)
    with pytest.raises(ArchError, match=r"split per tensor \(wgt, ofm\); use capacity_bytes"):
        spec.capacity_words("VBUF")
    assert spec.capacity_words("GBUF") == 128 * 1024


def test_simba_energies_come_from_the_table_per_8_bit_word():
    spec = load_arch("simba")
    # GBUF: 128 KiB -> 13.5 pJ per 16-bit access = 6.75 pJ per 8-bit word
    assert spec.read_pj_of(3, "ifm") == 6.75
    assert spec.read_energy(3, "ifm") == 6.75 * PJ
    assert spec.read_energy(3, "ofm") == pytest.approx(3 * spec.read_energy(3, "ifm"))
    assert spec.write_energy(3, "ofm") == pytest.approx(20.25 * PJ)
    # VBUF: each buffer at its own size: 4 KiB -> 2.4 pJ, 384 B -> 0.72 pJ per 16 bits
    assert spec.read_energy(1, "wgt") == pytest.approx(1.2 * PJ)
    assert spec.read_energy(1, "ofm") == pytest.approx(0.72 * 24 / 16 * PJ)
    # REGF 1 B, below the table: extrapolated linearly from 16 B 0.03 pJ
    assert spec.read_energy(0, "wgt") == pytest.approx(0.03 / 16 / 2 * PJ)
    # DRAM 200 pJ per 16 bits
    assert spec.read_energy(4, "wgt") == pytest.approx(100 * PJ)
    assert spec.read_energy(4, "ofm") == pytest.approx(300 * PJ)
    # tensors a level does not hold are never accessed there
    assert spec.read_energy(0, "ifm") == spec.write_energy(2, "wgt") == spec.read_energy(1, "ifm") == 0.0
    assert spec.mac_energy == pytest.approx(0.075 * PJ) and spec.hop_energy == pytest.approx(0.035 * PJ)


def test_interstellar_preset():
    spec = load_arch("interstellar")
    assert spec.num_pes == 256 and spec.pe_array == (16, 16) and spec.num_nodes == 1
    assert spec.word_bits == 16 and spec.capacity_bytes(0) == 512 and spec.capacity_bytes(1) == 128 * 1024
    for kind in TENSOR_KINDS:
        assert spec.read_energy(1, kind) == spec.write_energy(1, kind) == 13.5e-12
        assert spec.read_energy(0, kind) == spec.write_energy(0, kind) == 0.96e-12
        assert spec.read_energy(2, kind) == 200e-12
    assert spec.pe_mapping == "C|K+repl"
    assert spec.unroll_of(0) == Unroll("dims", rows=("C",), cols=("K",), replicate=True)
    assert spec.unroll_of(1).kind == "partition" and spec.unroll_of(2).kind == "free"
    assert spec.bus_of(0) == spec.array_bus and spec.bus_of(1) is None
    assert spec.bus_of(0).energy == pytest.approx(0.035 * PJ)
    assert (spec.mac_pj, spec.hop_pj, spec.static_pj) == (0.075, 0.035, 0.0)


def test_table_interpolates_between_points():
    spec = load_arch("interstellar").with_level("REGF", capacity="2 KiB")
    assert 0.96 < spec.read_pj_of(0, "ifm") < 6.0
    assert spec.read_pj_of(0, "ifm") == pytest.approx(0.96 * 6.25 ** (1 / 3))


def test_multinode_accessors_match_the_old_properties():
    spec = load_arch("multinode")
    for i, level in enumerate(spec.levels):
        for kind in TENSOR_KINDS:
            assert spec.holds(i, kind)
            assert spec.read_energy(i, kind) == spec.write_energy(i, kind) == level.access_energy
            assert spec.capacity_bytes(i, kind) == level.capacity
        assert not spec.capacity_is_split(i)
    assert [spec.tensor_bits_of(k) for k in TENSOR_KINDS] == [16, 16, 16]
    assert spec.unroll_of(0).template == "row_stationary" and spec.unroll_of(1).kind == "partition"
    assert spec.bus_of(0).energy == spec.bus_energy and spec.bus_of(1) is None
    assert spec.holders("ofm") == (0, 1, 2)


def test_accessor_arguments():
    class Kind(enum.StrEnum):
        IFM = "ifm"
        OFM = "ofm"

    spec = load_arch("simba")
    assert spec.tensor_bits_of(Kind.OFM) == 24 and spec.holds("PEBUF", Kind.IFM)
    assert spec.read_energy(-2, "ifm") == spec.read_energy("GBUF", "ifm") == spec.read_energy(3, "ifm")
    with pytest.raises(ArchError, match="unknown tensor kind 'psum'"):
        spec.holds(0, "psum")
    with pytest.raises(ArchError, match="no memory level 5 in hardware 'simba'"):
        spec.read_energy(5, "ifm")
    with pytest.raises(ArchError, match="no memory level 'L2'"):
        spec.bus_of("L2")


# ----------------------------------------------------------------- structure


def two_level() -> dict[str, Any]:
    return {
        "name": "two", "word_bits": 16, "clock_mhz": 500,
        "levels": [{"name": "REGF", "capacity": "512 B", "energy_table": "interstellar", "array": [16, 16],
                    "same_level_transfer": True},
                   {"name": "DRAM", "access_pj": 200.0, "bandwidth": 16.0}],
        "array_bus": {"width_bits": 256, "access_pj": 1.0},
        "mac_pj": 0.075, "hop_pj": 0.0, "static_pj": 0.0, "pe_mapping": "systolic",
    }


def test_two_level_spec():
    spec = parse_arch(two_level())
    assert spec.node_level is None and spec.num_nodes == 1 and spec.num_pes == 256
    assert spec.unroll_of(0).template == "systolic" and spec.unroll_of(1).kind == "free"
    assert spec.holders("wgt") == (0, 1) and spec.read_energy(0, "wgt") == 0.96 * PJ
    assert spec.bus_of(0) == spec.array_bus and spec.bus_of(1) is None
    assert parse_arch(spec.to_dict()) == spec


def five_level() -> dict[str, Any]:
    data = data_of("multinode")
    data["tensor_bits"] = {"ifm": 8, "wgt": 8}
    data["levels"][0].update(holds=["wgt", "ofm"])
    data["levels"][1:1] = [
        {"name": "ROWBUF", "capacity": {"ifm": 256, "ofm": "1 KiB"}, "access_pj": 0.5, "array": [8, 1],
         "unroll": "K|C", "bus": {"width_bits": 64, "access_pj": 0.2}},
        {"name": "LBUF", "capacity": "8 KiB", "energy_table": "interstellar", "read_pj": 1.0,
         "array": [2, 2], "unroll": "free"},
    ]
    data["levels"][0]["array"] = [1, 8]
    return data


def test_five_level_spec():
    spec = parse_arch(five_level())
    assert spec.level_names == ("REGF", "ROWBUF", "LBUF", "GBUF", "DRAM")
    assert spec.node_level.name == "GBUF" and spec.num_nodes == 256 and spec.pes_per_node == 256
    assert spec.holders("ifm") == (1, 2, 3, 4) and spec.holders("wgt") == (0, 2, 3, 4)
    assert spec.unroll_of(1) == Unroll("dims", rows=("K",), cols=("C",))
    assert spec.unroll_of(3).kind == "partition"
    assert spec.bus_of(1).width_bits == 64 and spec.bus_of(2) is None
    # LBUF reads at 1 pJ per 16-bit word, writes from the table at 8 KiB; 8-bit ifm costs half
    assert spec.read_energy(2, "ifm") == pytest.approx(0.5 * PJ)
    # 8 KiB is two thirds of the way from 512 B to 32 KiB in log size
    assert spec.write_energy(2, "ofm") == pytest.approx(0.96 * 6.25 ** (2 / 3) * PJ)
    assert parse_arch(spec.to_dict()) == spec
    assert parse_arch(yaml.safe_load(spec.to_yaml())) == spec


def test_four_level_example_validates():
    spec = load_arch(EXAMPLES / "four_level.yaml")
    assert spec.level_names == ("REGF", "LBUF", "GBUF", "DRAM")
    assert spec.node_array == (2, 2) and spec.pe_array == (8, 8) and spec.num_pes == 256
    assert spec.unroll_of(1).kind == "free" and spec.unroll_of(2).kind == "partition"
    assert spec.bus_of(1) == BusSpec(width_bits=256, access_pj=0.5)
    assert spec.options.buffer_sharing
    assert parse_arch(spec.to_dict()) == spec


def test_deep_design_example_validates():
    """The hand-written design of issue 27's user: per-tensor register files in 4x4 PEs, 2x2 clusters
    of 8 KiB each over its own bus, a 128 KiB global buffer per node, 2x2 nodes sharing buffers, C|K."""
    spec = load_arch(EXAMPLES / "deep_design.yaml")
    assert spec.level_names == ("REGF", "CBUF", "GBUF", "DRAM")
    assert spec.capacity_is_split(0) and spec.capacity_bytes(0, "wgt") == 48
    assert spec.pe_array == (4, 4) and spec.node_array == (2, 2) and spec.num_pes == 4 * 4 * 4 * 4
    assert spec.bus_of(1) == BusSpec(width_bits=128, access_pj=0.8) and spec.options.buffer_sharing
    assert parse_arch(spec.to_dict()) == spec


# ----------------------------------------------------------- derived specs


@pytest.mark.parametrize("name", ["simba", "interstellar"])
def test_new_presets_roundtrip(name, tmp_path):
    spec = load_arch(name)
    assert parse_arch(spec.to_dict()) == spec
    assert parse_arch(json.loads(spec.to_json())) == spec
    assert hash(parse_arch(spec.to_dict())) == hash(spec)


def test_unset_new_fields_are_not_dumped():
    data = load_arch("multinode").to_dict()
    assert "tensor_bits" not in data
    assert set(data["levels"][0]) == {"name", "capacity", "access_pj", "bandwidth", "array",
                                      "same_level_transfer"}
    simba = load_arch("simba").to_dict()
    assert simba["levels"][1]["capacity"] == {"wgt": 4096, "ofm": 384} and "holds" not in simba["levels"][1]
    assert "access_pj" not in simba["levels"][1] and simba["tensor_bits"] == {"ofm": 24}
    assert "double_buffered" not in simba["levels"][1]


def test_with_level_split_capacity():
    spec = load_arch("simba")
    bigger = spec.with_level("VBUF", capacity={"wgt": "8 KiB", "ofm": 768})
    assert bigger.capacity_bytes(1, "wgt") == 8192 and bigger.capacity_bytes(1, "ofm") == 768
    assert bigger.read_energy(1, "wgt") > spec.read_energy(1, "wgt")
    shared = load_arch("multinode").with_level("GBUF", capacity={"ifm": "16 KiB", "wgt": "16 KiB"})
    assert shared.capacity_is_split(1) and shared.holders("ofm") == (0, 2)
    with pytest.raises(ArchError, match=r"levels\[1\]\.capacity\.ofm: must be positive"):
        spec.with_level("VBUF", capacity={"wgt": 4096, "ofm": -1})


def test_node_region_keeps_new_fields():
    spec = parse_arch(five_level())
    region = spec.with_node_region(2, 2)
    assert region.num_nodes == 4 and region.capacity_bytes(1, "ofm") == 1024
    assert region.tensor_bits_of("ifm") == 8 and region.unroll_of(1).text == "K|C"
    assert load_arch("simba").with_node_region(1, 1) == load_arch("simba")


# --------------------------------------------------------- random round trip

energy = st.floats(min_value=0, max_value=1e4, allow_nan=False, allow_infinity=False)
dims = st.lists(st.sampled_from("NGCKYXSR"), min_size=2, max_size=4, unique=True)


@st.composite
def hierarchy_data(draw):
    """Random valid descriptions using the new fields, 2 to 6 levels."""
    n_levels = draw(st.integers(2, 6))
    word_bits = draw(st.sampled_from([8, 16]))
    tensor_bits = draw(st.fixed_dictionaries({}, optional={k: st.sampled_from([8, 16, 24, 32])
                                                            for k in TENSOR_KINDS}))
    widest = max([word_bits, *tensor_bits.values()]) // 8
    levels = []
    for i in range(n_levels - 1):
        holds = draw(st.lists(st.sampled_from(TENSOR_KINDS), min_size=1, max_size=3, unique=True))
        level: dict[str, Any] = {"name": f"L{i}", "array": [draw(st.integers(1, 8)), draw(st.integers(1, 8))]}
        tabled = draw(st.booleans())
        # a table prices only the sizes it covers (16 B to 512 KiB), twice the capacity if double-buffered
        double = tabled and draw(st.booleans())
        sizes = st.integers(max(widest, 16), (1 << 18) if double else (1 << 19)) if tabled else \
            st.integers(widest, 1 << 20)
        if draw(st.booleans()):
            level["capacity"] = {k: draw(sizes) for k in holds}
        else:
            level["capacity"] = draw(sizes)
            if draw(st.booleans()):
                level["holds"] = holds
        if tabled:
            level["energy_table"] = "interstellar"
            if double:
                level["double_buffered"] = True
        else:
            level["access_pj"] = draw(energy)
        if draw(st.booleans()):
            level["read_pj"] = draw(energy)
        if draw(st.booleans()):
            level["write_pj"] = draw(energy)
        if i > 0 and draw(st.booleans()):
            cut = draw(dims)
            split = ",".join(cut[:1]) + "|" + ",".join(cut[1:])
            level["unroll"] = draw(st.sampled_from(["free", "partition", split]))
        if 0 < i < n_levels - 2 and draw(st.booleans()):
            level["bus"] = {"width_bits": word_bits * draw(st.integers(1, 16)), "access_pj": draw(energy)}
        levels.append(level)
    levels.append({"name": "DRAM", "access_pj": draw(energy), "bandwidth": draw(st.floats(0.5, 1e3))})
    data = {
        "name": "random", "word_bits": word_bits, "clock_mhz": 500.0, "levels": levels,
        "array_bus": {"width_bits": word_bits * draw(st.integers(1, 16)), "access_pj": draw(energy)},
        "mac_pj": draw(energy), "hop_pj": draw(energy), "static_pj": draw(energy),
    }
    if tensor_bits:
        data["tensor_bits"] = tensor_bits
    mapping = draw(st.sampled_from(["row_stationary", "free", "C|K", "FY|Y+repl"]))
    if draw(st.booleans()):
        levels[0]["unroll"] = mapping
    else:
        data["pe_mapping"] = mapping
    return data


@settings(max_examples=80, deadline=None)
@given(hierarchy_data())
def test_random_hierarchies_roundtrip_and_resolve(data):
    spec = parse_arch(data)
    assert parse_arch(yaml.safe_load(spec.to_yaml())) == spec
    assert parse_arch(json.loads(spec.to_json())) == spec
    last = len(spec.levels) - 1
    for kind in TENSOR_KINDS:
        holders = spec.holders(kind)
        assert holders[-1] == last and list(holders) == sorted(holders)
        for i in range(len(spec.levels)):
            assert spec.holds(i, kind) == (i in holders)
            read, write = spec.read_energy(i, kind), spec.write_energy(i, kind)
            assert read >= 0 and write >= 0
            if not spec.holds(i, kind):
                assert read == write == 0.0
            if spec.capacity_is_split(i):
                assert (spec.capacity_bytes(i, kind) is not None) == spec.holds(i, kind)
        assert spec.unroll_of(0) == spec.pe_unroll
    assert spec.capacity_bytes(last) is None
