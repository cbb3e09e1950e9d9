"""Hardware exploration: every point a checked schedule, the best point, the
Pareto front, infeasible points kept, and the point store that makes a sweep resumable."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.errors import KaplaError
from kapla.explore.explore import explore, onchip_bytes, pareto_front
from kapla.explore.store import PointStore, point_key
from kapla.explore.sweep import INFEASIBLE, OK, Point
from kapla.explore.variants import vary
from kapla.workload.load import load_network
from tests.conftest import small_hierarchy

EDGE = load_arch("edge")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _net(batch=2):
    return load_network("mlp_s", batch=batch)


def test_every_point_is_a_checked_schedule_in_grid_order_with_the_best_and_the_front():
    result = explore(_net(), EDGE, ["GBUF.capacity=16KiB,64KiB", "REGF.capacity=32B,128B"], jobs=2)
    assert [(int(r["vary"]["GBUF.capacity"]), int(r["vary"]["REGF.capacity"])) for r in result.rows] == [
        (16384, 32), (16384, 128), (65536, 32), (65536, 128)]
    assert all(r["status"] == OK and r["valid"] for r in result.rows)
    energies = [r["energy_j"] for r in result.rows]
    assert result.best == energies.index(min(energies))
    # on-chip bytes: each level's capacity times its units
    for r in result.rows:
        spec = vary(EDGE, {"GBUF.capacity": int(r["vary"]["GBUF.capacity"]),
                           "REGF.capacity": int(r["vary"]["REGF.capacity"])})
        assert r["onchip_bytes"] == onchip_bytes(spec) == sum(
            spec.capacity_bytes(lvl.name) * spec.units(lvl.name) for lvl in spec.levels[:-1])
    assert list(result.pareto) == pareto_front(list(result.rows))
    data = result.to_dict()
    assert data["best"]["vary"] == data["points"][result.best]["vary"]
    assert set(data["points"][0]) >= {"vary", "energy_j", "time_cycles", "valid", "status"}
    json.dumps(data)


def test_the_same_sweep_gives_the_same_rows_whatever_the_workers():
    one = explore(_net(), EDGE, ["GBUF.capacity=16KiB..64KiB*2"], jobs=1)
    two = explore(_net(), EDGE, ["GBUF.capacity=16KiB..64KiB*2"], jobs=2)
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in one.rows]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in two.rows]


def test_a_point_whose_hardware_cannot_run_the_network_is_infeasible_not_dropped():
    result = explore(_net(), EDGE, ["REGF.capacity=2B,64B"], jobs=1)
    assert [r["status"] for r in result.rows] == [INFEASIBLE, OK]
    assert result.best == 1 and result.rows[0]["energy_j"] is None and result.rows[0]["message"]
    assert list(result.pareto) == [1]


def test_a_bad_solver_option_is_an_error_before_any_point_runs():
    with pytest.raises(KaplaError, match="has no option 'colour'"):
        explore(_net(), EDGE, ["REGF.capacity=64B"], options={"colour": 1})
    with pytest.raises(KaplaError, match="at least one field"):
        explore(_net(), EDGE, [])


rows_strategy = st.lists(st.tuples(st.sampled_from([OK, OK, OK, INFEASIBLE]), st.integers(1, 6),
                                   st.integers(1, 6)), max_size=12)


@given(rows_strategy)
def test_the_pareto_front_is_exactly_the_points_no_other_beats(spec):
    rows = [{"status": s, "energy_j": float(e), "onchip_bytes": b} for s, e, b in spec]
    front = pareto_front(rows)
    done = [i for i, r in enumerate(rows) if r["status"] == OK]
    assert set(front) <= set(done)

    def dominates(j, i):
        a, b = rows[j], rows[i]
        return a["energy_j"] <= b["energy_j"] and a["onchip_bytes"] <= b["onchip_bytes"] and (
            a["energy_j"] < b["energy_j"] or a["onchip_bytes"] < b["onchip_bytes"])

    for i in done:
        beaten = any(dominates(j, i) for j in done)
        same = [j for j in done if (rows[j]["energy_j"], rows[j]["onchip_bytes"]) ==
                (rows[i]["energy_j"], rows[i]["onchip_bytes"])]
        assert (i in front) == (not beaten and i == same[0])


def test_point_keys_follow_what_the_schedule_depends_on_not_what_the_sweep_calls_it():
    net = _net()
    p = Point(net, EDGE, labels={"a": 1})
    assert point_key(p) == point_key(Point(net, EDGE, labels={"b": 2}))
    for other in (Point(_net(batch=4), EDGE), Point(net, vary(EDGE, {"GBUF.capacity": "16 KiB"})),
                  Point(net, EDGE, objective="latency"), Point(net, EDGE, solver="random"),
                  Point(net, EDGE, options={"refine": 10})):
        assert point_key(other) != point_key(p)


def test_point_keys_do_not_depend_on_the_hash_seed():
    code = ("from kapla.explore.store import point_key; from kapla.explore.sweep import Point; "
            "from kapla.arch import load_arch; from kapla.workload.load import load_network; "
            "print(point_key(Point(load_network('resnet50', batch=1, training=True), load_arch('edge'))))")
    keys = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(keys) == 1


def test_the_store_keeps_rows_and_a_rerun_takes_them(tmp_path):
    net, store = _net(), tmp_path / "sweep"
    first = explore(net, EDGE, ["GBUF.capacity=16KiB,32KiB"], jobs=1, store=store)
    assert len(PointStore(store)) == 2 and not any(r.get("stored") for r in first.rows)
    # a half-written record (a temporary file) and an unreadable one are not points
    (store / ".tmp-x.json").write_text("{")
    (store / ".tmp-y.part").write_text("{")
    assert len(PointStore(store)) == 2
    again = explore(net, EDGE, ["GBUF.capacity=16KiB,32KiB,64KiB"], jobs=1, store=store)
    assert [bool(r.get("stored")) for r in again.rows] == [True, True, False]
    assert [r["energy_j"] for r in again.rows[:2]] == [r["energy_j"] for r in first.rows]
    assert again.rows[0]["vary"] == first.rows[0]["vary"]
    # a hardware's name changes no cost: the key is the same whatever the sweep calls it
    key = point_key(Point(net, vary(EDGE, {"GBUF.capacity": 65536}, name="x")))
    assert PointStore(store).get(key) == {k: v for k, v in json.loads((store / f"{key}.json").read_text())[
        "row"].items()}
    (store / f"{key}.json").write_text("not json")  # a record that cannot be read is run again
    third = explore(net, EDGE, ["GBUF.capacity=16KiB,32KiB,64KiB"], jobs=1, store=store)
    assert [bool(r.get("stored")) for r in third.rows] == [True, True, False]
    assert PointStore(store).get(key)["energy_j"] == third.rows[2]["energy_j"]


def test_a_store_that_is_a_file_is_an_error(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(KaplaError, match="not a directory"):
        explore(_net(), EDGE, ["GBUF.capacity=16KiB"], store=tmp_path / "f")


@pytest.mark.parametrize("preset", ["interstellar", "eyeriss", "edge", "multinode"])
def test_a_transformer_explores_and_takes_every_dataflow_on_each_preset(preset):
    """A transformer (attention's products of two fmaps, softmax, norms) through both sweeps
    on each preset the issue names (multinode cut to 2x2 nodes, as the solvers' tests cut it):
    every point a checked schedule or reported infeasible (benchmarks/explore_zoo.py runs the
    zoo's own networks on the whole presets)."""
    from kapla.arch.energy_tables import format_bytes
    from kapla.explore.dataflows import dataflows

    net = load_network(EXAMPLES / "tiny_attention.yaml", batch=1)
    arch = small_hierarchy(preset)
    size = arch.capacity_bytes(arch.level_names[0])
    grid = [f"{arch.level_names[0]}.capacity={format_bytes(size).replace(' ', '')},"
            f"{format_bytes(2 * size).replace(' ', '')}"]
    for result in (explore(net, arch, grid, jobs=1), dataflows(net, arch, jobs=1)):
        assert result.rows and all(r["status"] in (OK, INFEASIBLE) for r in result.rows)
        assert all(r["valid"] for r in result.rows if r["status"] == OK)
        assert any(r["status"] == OK for r in result.rows)
