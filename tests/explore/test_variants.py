"""Hardware variants by field."""

import pytest

from kapla.arch import load_arch
from kapla.errors import ArchError
from kapla.explore.variants import vary


def test_a_variant_changes_the_fields_it_names_and_nothing_else():
    base = load_arch("multinode_4x4")
    v = vary(base, {"GBUF.capacity": "64 KiB", "REGF.array": [16, 16], "static_pj": 318.225})
    assert v.levels[1].capacity == 64 * 1024 and tuple(v.levels[0].array) == (16, 16) and v.static_pj == 318.225
    assert v.name == "multinode_4x4 GBUF.capacity=64 KiB REGF.array=[16, 16] static_pj=318.225"
    same = vary(v, {"GBUF.capacity": "32 KiB", "REGF.array": [8, 8], "static_pj": base.static_pj}, name=base.name)
    assert same == base


def test_energies_from_a_size_table_follow_the_new_size():
    base = load_arch("interstellar")
    table_levels = [lvl.name for lvl in base.levels if lvl.energy_table is not None]
    assert table_levels
    name = table_levels[0]
    level = base.levels[base.level_index(name)]
    bigger = vary(base, {f"{name}.capacity": level.capacity * 4})
    assert bigger.read_energy(name, "ifm") > base.read_energy(name, "ifm")


@pytest.mark.parametrize(("change", "message"), [
    ({"L9.capacity": 4}, "L9.capacity: no level 'L9'"),
    ({"frobnicate": 1}, "frobnicate: hardware 'multinode' has no such field"),
    ({"GBUF.capacity": -4}, "capacity"),
    ({"GBUF.colour": "red"}, "GBUF.colour: unknown field"),
])
def test_a_bad_change_is_one_error_naming_it(change, message):
    with pytest.raises(ArchError, match=message):
        vary(load_arch("multinode"), change)
