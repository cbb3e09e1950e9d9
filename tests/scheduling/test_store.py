"""The layer store: finished layer solves survive the run, a torn record is
dropped, foreign files and other versions are refused, one run holds it at a
time, and scopes keep unrelated solves apart."""

import pickle

import pytest

from kapla.arch import load_arch
from kapla.errors import KaplaError
from kapla.scheduling.store import LayerStore, scope_of
from kapla.search.layer.exhaustive.solver import ExhaustiveIntraSolver
from kapla.search.layer.random.solver import RandomIntraSolver


def test_solves_survive_reopening(tmp_path):
    path = tmp_path / "layers.store"
    with LayerStore(path) as store:
        store.put("s", ("layer", 1), "scheme one")
        store.put("s", ("layer", 2), None)  # "no scheme" is a finished solve too
        store.put("s", ("layer", 1), "ignored: already recorded")
        assert store.added == 2
    with LayerStore(path) as store:
        assert store.loaded == 2 and len(store) == 2
        assert store.get("s", ("layer", 1)) == "scheme one"
        assert ("s", ("layer", 2)) in store and store.get("s", ("layer", 2)) is None
        assert ("other scope", ("layer", 1)) not in store


def test_a_torn_last_record_is_dropped_and_the_store_stays_usable(tmp_path):
    path = tmp_path / "layers.store"
    with LayerStore(path) as store:
        store.put("s", "a", 1)
        store.put("s", "b", 2)
    data = path.read_bytes()
    path.write_bytes(data[:-3])  # killed in the middle of writing "b"
    with LayerStore(path) as store:
        assert len(store) == 1 and ("s", "b") not in store
        store.put("s", "c", 3)
    with LayerStore(path) as store:
        assert {k: store.get(*k) for k in (("s", "a"), ("s", "c"))} == {("s", "a"): 1, ("s", "c"): 3}
        assert len(store) == 2


def test_a_foreign_file_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not a store\n")
    with pytest.raises(KaplaError, match="is not a kapla layer store"):
        LayerStore(path)
    assert path.read_text() == "not a store\n"  # left as it was


def test_another_versions_store_is_refused(tmp_path):
    path = tmp_path / "old.store"
    path.write_bytes(pickle.dumps({"format": "kapla-layer-store", "version": 0, "kapla": "0.0.1"}))
    with pytest.raises(KaplaError, match="written by kapla 0.0.1.*delete it"):
        LayerStore(path)


def test_one_run_at_a_time(tmp_path):
    path = tmp_path / "layers.store"
    with LayerStore(path):
        with pytest.raises(KaplaError, match="in use by another kapla run"):
            LayerStore(path)
    LayerStore(path).close()  # free again


def test_an_unwritable_store_is_one_error(tmp_path):
    with pytest.raises(KaplaError, match="cannot open layer store"):
        LayerStore(tmp_path / "missing" / "layers.store")
    with pytest.raises(KaplaError, match="a layer store is a file path \\(got int\\)"):
        LayerStore(5)


def test_scopes_separate_solvers_settings_hardware_and_objectives():
    edge, eyeriss = load_arch("edge"), load_arch("eyeriss")
    base = scope_of(ExhaustiveIntraSolver(), edge, "energy")
    assert base == scope_of(ExhaustiveIntraSolver(), edge, "energy")
    others = {scope_of(ExhaustiveIntraSolver(), eyeriss, "energy"), scope_of(ExhaustiveIntraSolver(), edge, "edp"),
              scope_of(RandomIntraSolver(p=0.5, seed=1), edge, "energy"),
              scope_of(RandomIntraSolver(p=0.5, seed=2), edge, "energy")}
    assert len(others) == 4 and base not in others


def test_a_time_budget_is_not_part_of_the_scope_and_cut_solves_are_never_stored(tmp_path):
    from kapla.scheduling.layers import LayerCache

    edge = load_arch("edge")
    assert scope_of(ExhaustiveIntraSolver(time_budget=5.0), edge, "energy") == scope_of(ExhaustiveIntraSolver(),
                                                                                       edge, "energy")
    with LayerStore(tmp_path / "layers.store") as store:
        cache = LayerCache("s", store)
        cache.put("whole", ("scheme", True, {}))
        cache.put("cut short", ("best so far", False, {}))  # its budget ran out: good for this run only
        assert cache["cut short"] == "best so far" and ("s", "cut short") not in store
        assert store.get("s", "whole") == "scheme" and store.added == 1
