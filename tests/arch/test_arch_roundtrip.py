"""Dumping a spec and loading it back gives an equal object."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from kapla.arch import list_presets, load_arch, parse_arch
from kapla.errors import ArchError


@pytest.mark.parametrize("name", list_presets())
def test_dict_roundtrip(name):
    spec = load_arch(name)
    assert parse_arch(spec.to_dict()) == spec


@pytest.mark.parametrize("name", list_presets())
def test_yaml_and_json_files_roundtrip(name, tmp_path):
    spec = load_arch(name)
    (tmp_path / "hw.yaml").write_text(spec.to_yaml())
    (tmp_path / "hw.json").write_text(spec.to_json())
    assert load_arch(tmp_path / "hw.yaml") == spec
    assert load_arch(str(tmp_path / "hw.json")) == spec


def test_file_without_name_is_named_after_its_stem(write_yaml, multinode_data):
    del multinode_data["name"]
    assert load_arch(write_yaml(multinode_data, "my_chip.yml")).name == "my_chip"


def test_capacity_accepts_binary_units(multinode_data):
    multinode_data["levels"][1]["capacity"] = "1.5 MiB"
    assert parse_arch(multinode_data).level("GBUF").capacity == 3 << 19


def test_specs_are_frozen():
    spec = load_arch("multinode")
    with pytest.raises(ValidationError):
        spec.mac_pj = 1.0  # type: ignore[misc]


def test_with_options_and_with_level_return_new_validated_specs():
    spec = load_arch("multinode")
    off = spec.with_options(buffer_sharing=False)
    assert not off.options.buffer_sharing and spec.options.buffer_sharing
    assert spec.with_level("GBUF", capacity=65536).capacity_words("GBUF") == 32768
    with pytest.raises(ArchError, match=r"levels\[1\]\.capacity: must be positive"):
        spec.with_level("GBUF", capacity=-1)
    with pytest.raises(ArchError, match=r"options\.pipelining: unknown field"):
        spec.with_options(pipelining=True)
    with pytest.raises(ArchError, match="no memory level 'L2'"):
        spec.level("L2")


pos = st.integers(min_value=1, max_value=64)
energy = st.floats(min_value=0, max_value=1e4, allow_nan=False, allow_infinity=False)


@st.composite
def arch_data(draw):
    """Random valid hardware descriptions with 2 to 5 memory levels."""
    n_levels = draw(st.integers(min_value=2, max_value=5))
    word_bits = draw(st.sampled_from([8, 16, 32]))
    levels = [
        {
            "name": f"L{i}",
            "capacity": draw(st.integers(min_value=4, max_value=1 << 24)),
            "access_pj": draw(energy),
            "bandwidth": draw(st.none() | st.floats(min_value=0.5, max_value=1e3)),
            "array": [draw(pos), draw(pos)],
            "same_level_transfer": draw(st.booleans()),
        }
        for i in range(n_levels - 1)
    ]
    levels.append({"name": "DRAM", "access_pj": draw(energy),
                   "bandwidth": draw(st.floats(min_value=0.5, max_value=1e3))})
    mapping = draw(st.sampled_from(["row_stationary", "systolic"]))
    if mapping == "systolic":
        levels[0]["same_level_transfer"] = True
    node_ok = n_levels >= 3 and levels[-2]["same_level_transfer"]
    return {
        "name": "random",
        "word_bits": word_bits,
        "clock_mhz": draw(st.floats(min_value=1, max_value=5e3)),
        "levels": levels,
        "array_bus": {"width_bits": word_bits * draw(pos), "access_pj": draw(energy)},
        "mac_pj": draw(energy),
        "hop_pj": draw(energy),
        "static_pj": draw(energy),
        "pe_mapping": mapping,
        "options": {"temporal_layer_pipe": draw(st.booleans()),
                    "spatial_layer_pipe": draw(st.booleans()),
                    "buffer_sharing": node_ok and draw(st.booleans())},
    }


@settings(max_examples=60, deadline=None)
@given(arch_data())
def test_random_specs_roundtrip_through_yaml_and_json(data):
    spec = parse_arch(data)
    assert parse_arch(yaml.safe_load(spec.to_yaml())) == spec
    assert parse_arch(json.loads(spec.to_json())) == spec
    assert spec.num_pes == spec.num_nodes * spec.pes_per_node
