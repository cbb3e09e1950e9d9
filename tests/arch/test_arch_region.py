"""Restricting a spec to a block of nodes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.errors import ArchError


def test_region_of_multinode_is_multinode_4x4():
    region = load_arch("multinode").with_node_region(4, 4)
    assert region.replace(name="multinode_4x4") == load_arch("multinode_4x4")


def test_region_keeps_pe_array_and_dram_bandwidth():
    spec = load_arch("multinode")
    region = spec.with_node_region(2, 8, origin=(3, 4))
    assert region.node_array == (2, 8) and region.num_nodes == 16
    assert region.pe_array == spec.pe_array and region.num_pes == 16 * 64
    assert region.dram_bandwidth == spec.dram_bandwidth
    assert region.dram_channel_nodes == ((0, 0), (0, 7), (1, 0), (1, 7))
    assert spec.num_nodes == 256  # the original is untouched


def test_region_clamps_explicit_channels(multinode_data):
    from kapla.arch import parse_arch

    multinode_data["dram_channels"] = [[0, 8], [15, 8]]
    spec = parse_arch(multinode_data)
    region = spec.with_node_region(4, 4, origin=(6, 6))
    assert region.dram_channels == ((0, 2), (3, 2))


@pytest.mark.parametrize("rows, cols, origin", [(0, 4, (0, 0)), (17, 1, (0, 0)), (4, 4, (14, 0))])
def test_region_must_fit(rows, cols, origin):
    with pytest.raises(ArchError, match="does not fit the 16x16 node array"):
        load_arch("multinode").with_node_region(rows, cols, origin)


@given(st.integers(1, 16), st.integers(1, 16))
def test_region_static_energy_scales_with_nodes(rows, cols):
    spec = load_arch("multinode")
    region = spec.with_node_region(rows, cols)
    assert region.num_nodes == rows * cols
    assert region.static_pj == pytest.approx(spec.static_pj * rows * cols / 256)
    assert len(region.dram_channel_nodes) == len({(0, 0), (0, cols - 1), (rows - 1, 0), (rows - 1, cols - 1)})
