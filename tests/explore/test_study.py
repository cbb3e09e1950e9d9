"""Sweeps and studies: points run in order, infeasible points reported, studies found by name."""

import pytest

from kapla.arch import load_arch
from kapla.errors import KaplaError
from kapla.explore.study import make_study, run_study
from kapla.explore.sweep import INFEASIBLE, OK, Point, run_points
from kapla.explore.variants import vary


def test_points_come_back_in_order_whatever_the_workers():
    base = load_arch("edge")
    points = [Point("mlp_s", vary(base, {"GBUF.capacity": c}), 1, labels={"gbuf": c})
              for c in ("16 KiB", "64 KiB", "32 KiB")]
    one, two = run_points(points, jobs=1), run_points(points, jobs=2)
    assert [r["gbuf"] for r in one] == ["16 KiB", "64 KiB", "32 KiB"]
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in two]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in one]
    assert all(r["status"] == OK and r["valid"] and r["energy_j"] > 0 for r in one)


def test_a_point_whose_hardware_cannot_run_the_network_is_a_row_not_a_crash():
    tiny = vary(load_arch("edge"), {"REGF.capacity": "2 B"})
    rows = run_points([Point("mlp_s", tiny, 1, labels={"regf": "2 B"}),
                       Point("mlp_s", load_arch("edge"), 1, labels={"regf": "edge"})])
    assert [r["status"] for r in rows] == [INFEASIBLE, OK]
    assert "does not fit" in rows[0]["message"] or "no valid scheme" in rows[0]["message"]
    assert rows[0]["energy_j"] is None and not rows[0]["valid"]


def test_the_hardware_study_builds_every_variant_before_it_runs():
    study = make_study("hardware", {"network": "mlp_s", "arch": "edge", "batch": 1,
                                    "vary": {"GBUF.capacity": ["16 KiB", "32 KiB"], "REGF.capacity": ["32 B"]}})
    assert [p.labels for p in study.points()] == [{"GBUF.capacity": "16 KiB", "REGF.capacity": "32 B"},
                                                  {"GBUF.capacity": "32 KiB", "REGF.capacity": "32 B"}]
    with pytest.raises(KaplaError, match="GBUF.colour: unknown field"):
        make_study("hardware", {"arch": "edge", "vary": {"GBUF.colour": ["red"]}})
    with pytest.raises(KaplaError, match="'REGF.capacity' has no values"):
        make_study("hardware", {"arch": "edge", "vary": {"REGF.capacity": []}})


def test_studies_are_found_by_name_and_their_options_checked():
    with pytest.raises(KaplaError, match="unknown study 'nope'; choose one of"):
        make_study("nope")
    with pytest.raises(KaplaError, match="study 'grid' has no option 'colour'"):
        make_study("grid", {"colour": "red"})
    with pytest.raises(KaplaError, match="modes: 'sideways'"):
        make_study("grid", {"modes": "sideways"})
    result = run_study("grid", {"nets": "mlp_s,lstm_m", "archs": "edge", "batches": "1"})
    assert [r["network"] for r in result.rows] == ["mlp_s", "lstm_m"]
    assert all(r["status"] == OK for r in result.rows)
