import math
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kapla.dataflow.mapping as mapping_module
from kapla.dataflow.directives import Loop, Stack
from kapla.dataflow.mapping import PeMapping, fold, pe_mappings, row_stationary, streamed_rows
from kapla.errors import ArchError
from kapla.workload.zoo import get_network

ALEXNET = get_network("alexnet", 64)


def test_fold_spreads_without_idle_folds():
    assert fold(55, 8) == (8, 7)  # 7 passes of 8 columns cover 55 rows
    assert fold(11, 8) == (6, 2)  # 2 passes of 6 PE rows cover 11 filter rows
    assert fold(5, 8) == (5, 1)


@pytest.mark.parametrize("name", ["conv1_a", "conv2_a", "conv3_a", "pool1_a", "fc1", "fc3"])
def test_row_stationary_covers_what_the_node_must_do(name):
    layer = ALEXNET[name]
    extents = {"N": 4, **layer.loops}
    for m in pe_mappings("row_stationary", layer, extents, (8, 8)):
        covered = {d: 1 for d in "YSXR"} | m.covered()
        for dim in ("Y", "S", "X", "R"):
            folds = math.prod(lp.count for lp in m.inner if lp.dim == dim)
            assert covered[dim] >= extents[dim]
            assert covered[dim] // folds * (folds - 1) < extents[dim]  # no fold wholly idle
        rows = math.prod(s.rows for s in m.stacks)
        cols = math.prod(s.cols for s in m.stacks)
        assert rows <= 8 and cols <= 8
        assert dict(m.unit) == {"R": layer.r}  # one filter row per PE


def test_row_stationary_replicates_small_layers():
    layer = ALEXNET["conv3_a"]  # 3 filter rows, 13 output rows: 8 rows of PEs allow 2 replicas
    maps = pe_mappings("row_stationary", layer, {"N": 4, **layer.loops}, (8, 8))
    notes = {m.note for m in maps}
    assert any("rows over C" in n for n in notes) and any("rows over K" in n for n in notes)


def test_systolic_puts_channels_on_rows_and_filters_on_columns():
    layer = ALEXNET["conv2_a"]
    (m,) = pe_mappings("systolic", layer, {"N": 1, **layer.loops}, (16, 16))
    assert [(s.dim, s.rows, s.cols) for s in m.stacks] == [("C", 16, 1), ("K", 1, 16)]
    dw = get_network("mobilenet")["conv2_dw"]
    (m,) = pe_mappings("systolic", dw, {"N": 1, **dw.loops}, (16, 16))
    assert m.stacks[0].dim == "G"


def test_unknown_template():
    with pytest.raises(ArchError, match="unknown PE mapping template 'magic'"):
        pe_mappings("magic", ALEXNET["fc1"], {"N": 1, **ALEXNET["fc1"].loops}, (8, 8))


def _one_pe(layer, extents, pe_array):
    return [PeMapping("one_pe", (), ())]


def test_a_template_is_one_registry_entry(monkeypatch):
    """A template registered once (name, description, where its function lives)
    is known to hardware specs and maps layers; a path that does not import is
    an error naming it."""
    from kapla.arch import mapping
    from kapla.arch.mapping import PeMappingTemplate, pe_mapping_names, register_pe_mapping

    monkeypatch.setattr(mapping, "_REGISTRY", dict(mapping._REGISTRY))  # leave the real one as it was
    register_pe_mapping(PeMappingTemplate("one_pe", "everything in one PE", f"{__name__}:_one_pe"), replace=True)
    assert "one_pe" in pe_mapping_names()
    assert pe_mappings("one_pe", ALEXNET["fc1"], {}, (8, 8)) == [PeMapping("one_pe", (), ())]
    register_pe_mapping(PeMappingTemplate("broken", "nowhere", f"{__name__}:_missing"), replace=True)
    with pytest.raises(ArchError, match="PE mapping function .*_missing' cannot be imported"):
        pe_mappings("broken", ALEXNET["fc1"], {}, (8, 8))


@pytest.mark.parametrize("name", ["conv1_a", "conv2_a", "conv3_a", "pool1_a"])
def test_streamed_rows_take_the_output_rows_into_the_unit_and_cover_the_same(name):
    layer = ALEXNET[name]
    extents = {"N": 4, **layer.loops}
    plain = pe_mappings("row_stationary", layer, extents, (8, 8))
    streamed = pe_mappings("row_stationary", layer, extents, (8, 8), stream_rows=True)
    assert len(plain) == len(streamed)
    for p, s in zip(plain, streamed, strict=True):
        assert s.covered() == p.covered() and s.stacks == p.stacks
        assert all(lp.dim not in ("Y", "X") for lp in s.inner)  # the rows are one step of the PE
        assert [lp for lp in p.inner if lp.dim not in ("Y", "X")] == list(s.inner)  # filter-row folds stay loops
        assert dict(s.unit)["X"] == layer.loops["X"]
        assert dict(s.unit).get("Y", 1) == math.prod(lp.count for lp in p.inner if lp.dim == "Y")


def test_a_mapping_without_row_loops_is_not_streamed():
    m = PeMapping("row_stationary", (("R", 3),), (), ())
    assert streamed_rows(m) is m


_EXTENT = st.integers(1, 40)


@settings(max_examples=60, deadline=None)
@given(st.fixed_dictionaries({d: _EXTENT for d in "NCKYXSR"}), st.fixed_dictionaries({d: _EXTENT for d in "NCK"}),
       st.sampled_from([(8, 8), (12, 14), (16, 16), (4, 32)]), st.booleans())
def test_row_stationary_mappings_of_alike_blocks_replicate_each_as_far_as_it_allows(block, other, array, streamed):
    # blocks of a layer's node partitions differ mostly in channels, filters and samples: the
    # mappings kept for one must not be given to another they do not fit; each block's, worked
    # out after another's, as the template says, and the same when nothing is kept
    layer = ALEXNET["conv2_a"]
    first = {"G": 1, **block}
    second = first | other
    pe_mappings("row_stationary", layer, first, array, stream_rows=streamed)
    maps = pe_mappings("row_stationary", layer, second, array, stream_rows=streamed)
    rows, cols = array
    spare_rows, spare_cols = rows // fold(second["S"], rows)[0], cols // fold(second["Y"], cols)[0]
    over_rows = [d for d in "CK" if spare_rows > 1 and second[d] > 1] or [None]
    over_cols = [d for d in "NK" if spare_cols > 1 and second[d] > 1] or [None]
    assert len(maps) == len(over_rows) * len(over_cols)
    for m, (rd, cd) in zip(maps, [(r, c) for r in over_rows for c in over_cols], strict=True):
        assert m.note.startswith(f"replicate rows over {rd or '-'}, columns over {cd or '-'}")
        replicas = {(st_.dim, st_.rows, st_.cols) for st_ in m.stacks[2:]}
        assert replicas == ({(rd, fold(second[rd], spare_rows)[0], 1)} if rd else set()) | (
            {(cd, 1, fold(second[cd], spare_cols)[0])} if cd and cd != rd else set())
    row_stationary._mappings.cache_clear()
    mapping_module._streamed.cache_clear()
    fresh = pe_mappings("row_stationary", layer, second, array, stream_rows=streamed)
    assert [(m, m.note) for m in maps] == [(m, m.note) for m in fresh]


def test_a_mappings_kept_hash_is_its_values_whatever_its_note():
    a = PeMapping("row_stationary", (("R", 3),), (Stack("Y", 1, 4),), (Loop("X", 5),), note="a")
    b = PeMapping("row_stationary", (("R", 3),), (Stack("Y", 1, 4),), (Loop("X", 5),), note="b")
    assert a == b and hash(a) == hash(b) == hash((a.template, a.unit, a.stacks, a.inner))
    assert pickle.loads(pickle.dumps(a)) == a and "_hash" not in pickle.loads(pickle.dumps(a)).__dict__
