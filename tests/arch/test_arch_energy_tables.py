"""Size-to-energy tables: the Interstellar table and its log-log interpolation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kapla.arch import EnergyTable, energy_table, energy_table_names, register_energy_table
from kapla.errors import ArchError

KIB = 1024
TABLE_3 = [(16, 0.03), (32, 0.06), (64, 0.12), (128, 0.24), (256, 0.48), (512, 0.96),
           (32 * KIB, 6.0), (64 * KIB, 9.0), (128 * KIB, 13.5), (256 * KIB, 20.25), (512 * KIB, 30.375)]


def test_registry():
    assert "interstellar" in energy_table_names()
    table = energy_table("interstellar")
    assert table.word_bits == 16
    assert (table.mac_pj, table.hop_pj, table.dram_pj) == (0.075, 0.035, 200.0)
    assert list(table.points) == TABLE_3


def test_module_level_interpolate():
    from kapla.arch.energy_tables import interpolate

    assert interpolate("interstellar", 128 * KIB) == 13.5
    with pytest.raises(ArchError, match="unknown energy table 'nope'"):
        interpolate("nope", 64)


def test_unknown_table_is_one_line_error():
    with pytest.raises(ArchError, match=r"^unknown energy table 'cacti' \(known: .*interstellar"):
        energy_table("cacti")


def test_reregistering_needs_replace():
    with pytest.raises(ArchError, match="already registered"):
        register_energy_table(energy_table("interstellar"))


@pytest.mark.parametrize("size, pj", TABLE_3)
def test_table_points_are_exact(size, pj):
    assert energy_table("interstellar").interpolate(size) == pj


@pytest.mark.parametrize("size, expected", [
    (2 * KIB, 0.96 * 6.25 ** (1 / 3)),          # a third of the way from 512 B to 32 KiB in log size
    (4 * KIB, 2.4),                              # half way in log size: the geometric mean of 0.96 and 6
    (96 * KIB, 9.0 * 1.5 ** (math.log(1.5) / math.log(2))),
    (384, 0.72),                                 # register files scale linearly with size
])
def test_interpolation(size, expected):
    assert energy_table("interstellar").interpolate(size) == pytest.approx(expected, rel=1e-12)


@given(st.floats(min_value=16, max_value=128 * KIB), st.floats(min_value=1.0001, max_value=4))
def test_interpolation_increases_with_size(size, factor):
    table = energy_table("interstellar")
    assert table.interpolate(size * factor) > table.interpolate(size)


@pytest.mark.parametrize("size, text", [(8, "8 B"), (15, "15 B"), (513 * KIB, "513 KiB"), (1 << 20, "1 MiB")])
def test_sizes_outside_the_table_are_an_error_naming_them(size, text):
    with pytest.raises(ArchError) as err:
        energy_table("interstellar").interpolate(size)
    assert str(err.value) == (f"energy table 'interstellar' has no energy for {text}: "
                              "it covers 16 B to 512 KiB")


def test_between_names_the_points_a_size_is_interpolated_from():
    table = energy_table("interstellar")
    assert table.between(4 * KIB) == (512, 32 * KIB)
    assert table.between(96 * KIB) == (64 * KIB, 128 * KIB)
    assert table.between(128 * KIB) is None  # a table point
    assert table.covers(16) and table.covers(512 * KIB) and not table.covers(8)


@given(st.integers(0, len(TABLE_3) - 2), st.floats(0, 1))
def test_interpolation_is_linear_in_log_log(segment, t):
    (s0, e0), (s1, e1) = TABLE_3[segment], TABLE_3[segment + 1]
    size = math.exp(math.log(s0) + t * math.log(s1 / s0))
    expected = math.exp(math.log(e0) + t * math.log(e1 / e0))
    assert energy_table("interstellar").interpolate(size) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("size", [0, -1, float("inf"), float("nan")])
def test_bad_sizes(size):
    with pytest.raises(ArchError, match="size must be a positive number of bytes"):
        energy_table("interstellar").interpolate(size)


def test_malformed_tables_are_refused():
    with pytest.raises(ValueError, match="ascending"):
        EnergyTable("bad", "", 16, ((64, 1.0), (32, 2.0)))
    with pytest.raises(ValueError, match="at least two points"):
        EnergyTable("bad", "", 16, ((64, 1.0),))
    with pytest.raises(ValueError, match="positive"):
        EnergyTable("bad", "", 16, ((32, 0.0), (64, 1.0)))
