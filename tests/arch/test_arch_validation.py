"""Every invalid description gives one ArchError with a one-line, path-naming message."""

from __future__ import annotations

import pytest

from kapla.arch import load_arch, parse_arch
from kapla.errors import ArchError, KaplaError


def load_error(path) -> str:
    """Load ``path`` expecting failure; the message must be a single line."""
    with pytest.raises(ArchError) as info:
        load_arch(path)
    message = str(info.value)
    assert "\n" not in message
    assert isinstance(info.value, KaplaError)
    return message


def test_missing_dram_level(write_yaml, multinode_data):
    multinode_data["levels"].pop()
    message = load_error(write_yaml(multinode_data))
    assert message.startswith(f"hardware file {write_yaml(multinode_data)}: levels[1].name: ")
    assert "outermost level must be the off-chip DRAM (got 'GBUF')" in message


def test_fewer_than_two_levels(write_yaml, multinode_data):
    multinode_data["levels"] = multinode_data["levels"][-1:]
    assert "levels: needs at least 2 memory levels" in load_error(write_yaml(multinode_data))


def test_negative_capacity(write_yaml, multinode_data):
    multinode_data["levels"][1]["capacity"] = -4
    path = write_yaml(multinode_data)
    assert load_error(path) == f"hardware file {path}: levels[1].capacity: must be positive (got -4)"


def test_zero_array(write_yaml, multinode_data):
    multinode_data["levels"][0]["array"] = [8, 0]
    assert load_error(write_yaml(multinode_data)).endswith(
        "levels[0].array[1]: must be at least 1 (got 0)")


def test_unknown_template(write_yaml, multinode_data):
    multinode_data["pe_mapping"] = "weight_stationary"
    assert load_error(write_yaml(multinode_data)).endswith(
        "pe_mapping: unknown PE mapping template (got 'weight_stationary'; "
        "known: row_stationary, systolic)")


def test_unknown_field(write_yaml, multinode_data):
    multinode_data["levels"][1]["capacty"] = 4096
    assert load_error(write_yaml(multinode_data)).endswith(
        "levels[1].capacty: unknown field (did you mean 'capacity'?)")


def test_wrong_type(write_yaml, multinode_data):
    multinode_data["options"]["buffer_sharing"] = "sometimes"
    assert load_error(write_yaml(multinode_data)).endswith(
        "options.buffer_sharing: must be true or false (got 'sometimes')")


def test_malformed_yaml(write_yaml):
    path = write_yaml("name: x\nlevels: [\n  - {name: REGF\n")
    message = load_error(path)
    assert message.startswith(f"hardware file {path}: malformed YAML at line ")


def test_duplicate_yaml_key(write_yaml):
    message = load_error(write_yaml("mac_pj: 1\nmac_pj: 2\n"))
    assert "malformed YAML at line 2, column 1: duplicate key 'mac_pj'" in message


def test_malformed_json(write_yaml):
    path = write_yaml('{"name": "x",}', "hw.json")
    assert "malformed JSON at line 1" in load_error(path)


def test_top_level_must_be_mapping(write_yaml):
    assert "top level must be a mapping of fields (got list)" in load_error(write_yaml("- 1\n"))
    assert "(got an empty document)" in load_error(write_yaml("", "empty.yaml"))


def test_missing_file_and_unknown_name(tmp_path):
    assert load_error(tmp_path / "nope.yaml").endswith("nope.yaml: no such file")
    assert "unknown hardware 'nope': not a preset (atomic, atomic_yx, edge, eyeriss, interstellar, multinode" \
        in load_error("nope")
    assert "unsupported file type '.txt'" in load_error(tmp_path / "hw.txt")


def test_several_errors_on_one_line(multinode_data):
    multinode_data["levels"][0]["capacity"] = 0
    multinode_data["mac_pj"] = -1.0
    with pytest.raises(ArchError) as info:
        parse_arch(multinode_data, "hw")
    assert str(info.value) == ("hw: levels[0].capacity: must be positive (got 0); "
                               "mac_pj: must not be negative (got -1.0)")


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d["levels"][2].update(array=[2, 2]), "levels[2].array: DRAM must be [1, 1]"),
    (lambda d: d["levels"][2].update(bandwidth=None), "levels[2].bandwidth: required for DRAM"),
    (lambda d: d["levels"][0].update(capacity=None), "levels[0].capacity: required for on-chip"),
    (lambda d: d["levels"][0].update(capacity=1), "levels[0].capacity: smaller than one 16-bit word"),
    (lambda d: d["levels"][1].update(name="REGF"), "levels[1].name: duplicate level name 'REGF'"),
    (lambda d: d["levels"][0].update(array="8x8"), "levels[0].array: expected a pair [rows, cols]"),
    (lambda d: d["levels"][1].update(capacity="32 KB"), "levels[1].capacity: expected a byte count"),
    (lambda d: d.update(word_bits=12), "word_bits: must be a multiple of 8 (got 12)"),
    (lambda d: d.update(clock_mhz=float("nan")), "clock_mhz: must be a finite number"),
    (lambda d: d.pop("mac_pj"), "mac_pj: missing required field"),
    (lambda d: d["array_bus"].update(width_bits=100), "array_bus.width_bits: must be a multiple"),
    (lambda d: d.update(dram_channels=[[0, 0], [16, 0]]), "dram_channels[1]: outside the 16x16"),
    (lambda d: d.update(dram_channels=[[0, 0], [0, 0]]), "dram_channels[1]: duplicate channel"),
    (lambda d: d.update(pe_mapping="systolic"), "levels[0].same_level_transfer: must be true"),
    (lambda d: d["levels"][1].update(same_level_transfer=False),
     "options.buffer_sharing: needs neighbour transfers between nodes"),
])
def test_cross_field_checks(multinode_data, edit, expected):
    edit(multinode_data)
    with pytest.raises(ArchError) as info:
        parse_arch(multinode_data, "hw")
    assert str(info.value).startswith(f"hw: {expected}")
    assert "\n" not in str(info.value)
