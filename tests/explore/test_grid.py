"""Hardware grids from PATH=VALUES: values, ranges, aliases and the errors a user sees."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.arch.describe import show_value
from kapla.errors import KaplaError
from kapla.explore.grid import MAX_VALUES, Size, parse_value, parse_vary, variants

BASE = load_arch("interstellar")


@pytest.mark.parametrize("text, value", [
    ("64B", 64), ("32 KiB", 32768), ("1.5KiB", 1536), ("8x8", [8, 8]), ("16 x 4", [16, 4]), ("true", True),
    ("False", False), ("3", 3), ("2.5", 2.5), ("C|K+repl", "C|K+repl"), ("inf", "inf"),
])
def test_values(text, value):
    parsed = parse_value(text)
    assert parsed == value and type(parsed) is type(value) or isinstance(parsed, Size)


def test_sizes_print_as_sizes():
    field = parse_vary("GBUF.capacity=32KiB..512KiB*2", BASE)
    assert [show_value(v) for v in field.values] == ["32 KiB", "64 KiB", "128 KiB", "256 KiB", "512 KiB"]
    assert field.values == (32768, 65536, 131072, 262144, 524288)


@pytest.mark.parametrize("text, values", [
    ("clock_mhz=100..400+100", (100, 200, 300, 400)),
    ("static_pj=1..3", (1, 2, 3)),
    ("REGF.capacity=16B..100B*2", (16, 32, 64)),  # the last step stops at the bound
    ("static_pj=0.5..2*2", (0.5, 1.0, 2.0)),
    ("REGF.unroll=C|K;C,S|K+repl", ("C|K", "C,S|K+repl")),
    ("pe_array=8x8,16x16", ([8, 8], [16, 16])),
])
def test_lists_and_ranges(text, values):
    assert parse_vary(text, BASE).values == values


def test_aliases_name_the_pe_and_node_levels():
    assert parse_vary("pe_array=8x8", BASE).path == "REGF.array"
    assert parse_vary("node_array=2x2", load_arch("multinode")).path == "GBUF.array"
    [(labels, spec)] = variants(BASE, [parse_vary("pe_array=8x8", BASE)])
    assert spec.pe_array == (8, 8) and labels == {"pe_array": [8, 8]} and spec.name == "interstellar pe_array=8x8"


@pytest.mark.parametrize("text, message", [
    ("REGF.capacity", "--vary 'REGF.capacity': expected PATH=VALUES"),
    ("REGF.capacity=", "--vary REGF.capacity: no values"),
    ("REGF.capacity=16B,,32B", "an empty value"),
    ("REGF.capacity=16B,16B", "a value is given twice"),
    ("GBUF.capacity=64KiB..32KiB*2", "the range 64KiB..32KiB is empty"),
    ("GBUF.capacity=32KiB..64KiB*1", "the step *1 does not move the range forward"),
    ("static_pj=1..2+0", "the step +0 does not move the range forward"),
    ("GBUF.capacity=32KiB..64*2", "are not both byte sizes"),
    ("REGF.unroll=a..b", "a range runs between numbers or byte sizes"),
    ("static_pj=1..1000000", f"more than {MAX_VALUES} values"),
])
def test_bad_vary_is_one_error_naming_it(text, message):
    with pytest.raises(KaplaError) as err:
        parse_vary(text, BASE)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("text, message", [
    ("GBUF.colour=red", "--vary GBUF.colour=red: hardware spec interstellar: GBUF.colour: unknown field"),
    ("LBUF.capacity=1KiB", "no level 'LBUF' in hardware 'interstellar'"),
    ("wattage=3", "wattage: hardware 'interstellar' has no such field"),
    ("GBUF.capacity=1MiB", "GBUF.capacity: energy table 'interstellar' covers 16 B to 512 KiB; no energy for 1 MiB"),
    ("REGF.capacity=8B", "no energy for 8 B"),
    ("REGF.capacity=1B", "smaller than one 16-bit word"),
])
def test_a_value_the_spec_rejects_is_one_error_naming_it(text, message):
    with pytest.raises(KaplaError) as err:
        variants(BASE, [parse_vary(text, BASE)])
    assert message in str(err.value) and "\n" not in str(err.value)


def test_node_array_needs_a_node_level():
    two_level = load_arch("interstellar").replace(**{**BASE.to_dict(), "levels": BASE.to_dict()["levels"][::2]})
    with pytest.raises(KaplaError, match="has no node level"):
        parse_vary("node_array=2x2", two_level)


def test_a_field_varied_twice_is_an_error():
    field = parse_vary("REGF.capacity=16B,32B", BASE)
    with pytest.raises(KaplaError, match=r"a field is varied twice \(REGF.capacity\)"):
        variants(BASE, [field, field])


def test_the_grid_is_every_combination_last_field_fastest():
    grid = variants(BASE, [parse_vary("REGF.capacity=16B,32B", BASE), parse_vary("GBUF.capacity=32KiB,64KiB", BASE)])
    assert [(int(a["REGF.capacity"]), int(a["GBUF.capacity"])) for a, _ in grid] == [
        (16, 32768), (16, 65536), (32, 32768), (32, 65536)]
    assert [(s.capacity_bytes("REGF"), s.capacity_bytes("GBUF")) for _, s in grid] == [
        (16, 32768), (16, 65536), (32, 32768), (32, 65536)]
    # energies follow the sizes through the table
    assert grid[0][1].read_energy("REGF", "ifm") == pytest.approx(0.03e-12)
    assert grid[3][1].read_energy("GBUF", "ifm") == pytest.approx(9.0e-12)


@given(st.integers(1, 4096), st.integers(0, 12), st.sampled_from([2, 3, 4]))
def test_geometric_ranges_stay_inside_their_bounds(lo, span, factor):
    hi = lo * factor ** span + (lo if span % 2 else 0)
    values = parse_vary(f"REGF.capacity={lo}B..{hi}B*{factor}", BASE).values
    assert values[0] == lo and all(lo <= v <= hi for v in values)
    assert all(b == a * factor for a, b in zip(values, values[1:], strict=False))
    assert values[-1] * factor > hi and len(values) == math.floor(math.log(hi / lo, factor) + 1e-9) + 1
