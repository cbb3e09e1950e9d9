import math

import pytest

from kapla.dataflow.mapping import PeMapping, fold, pe_mappings, streamed_rows
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
