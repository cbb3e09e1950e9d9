"""Interstellar's dataflow taxonomy: which U|V pairs a network has, and a network scheduled under each."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.explore.dataflows import dataflows, loop_bounds, looping, paper_name, taxonomy, unroll_field
from kapla.explore.sweep import OK
from kapla.workload.load import load_network
from kapla.workload.network import NetworkBuilder
from tests.cli.test_schedule_cli import run


def test_a_cnn_has_the_papers_21_dataflows_and_an_mlp_3():
    alexnet = load_network("alexnet", batch=16)
    assert looping(alexnet) == ["FX", "FY", "X", "Y", "C", "K", "N"]
    names = [paper_name(t) for t in taxonomy(alexnet)]
    assert len(names) == 21 == math.comb(7, 2) and len(set(names)) == 21
    assert {"C|K+repl", "FY|Y+repl", "X|Y+repl"} <= set(names)
    assert [paper_name(t) for t in taxonomy(load_network("mlp_m", batch=16), replication=False)] == [
        "C|K", "C|N", "K|N"]
    # batch 1: N loops once, so it unrolls nothing
    assert taxonomy(load_network("mlp_m", batch=1), replication=False) == ["C|K"]
    # grouped (depthwise) layers bring G
    assert "G" in looping(load_network("mobilenet", batch=1))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.integers(1, 2), st.booleans())
def test_the_taxonomy_is_every_pair_of_the_loops_that_loop(batch, kernel, size, stride, fc):
    b = NetworkBuilder("n", batch=batch)
    x = b.input("in", 3, height=size * 4, width=size * 4)
    x = b.conv("c", x, k=8, kernel=kernel, stride=stride)
    if fc:
        b.fc("f", x, k=4)
    net = b.build()
    loops = set()
    for layer in net.layers:
        loops |= {k for k, v in loop_bounds(layer, batch).items() if v > 1}
    assert looping(net) == [n for n in ("FX", "FY", "X", "Y", "C", "K", "N", "G") if n in loops]
    assert len(taxonomy(net)) == math.comb(len(loops), 2)
    for t in taxonomy(net):
        assert load_arch("interstellar").replace(pe_mapping=t)  # the spec takes every one


def test_paper_names():
    assert paper_name("S|Y+repl") == "FY|Y+repl" and paper_name("R,S|K") == "FX,FY|K" and paper_name("C|K") == "C|K"


def test_the_unrolling_is_set_where_the_spec_keeps_it():
    assert unroll_field(load_arch("interstellar"), ["C|K"]).path == "pe_mapping"
    assert unroll_field(load_arch("simba"), ["C|K"]).path == "REGF.unroll"


def test_every_dataflow_is_a_checked_schedule():
    result = dataflows(load_network("mlp_m", batch=8), load_arch("interstellar"), jobs=2)
    assert [r["vary"]["dataflow"] for r in result.rows] == ["C|K+repl", "C|N+repl", "K|N+repl"]
    assert all(r["status"] == OK and r["valid"] and 0 < r["utilisation"] <= 1 for r in result.rows)
    assert result.best == min(range(3), key=lambda i: (result.rows[i]["energy_j"], i))


@pytest.mark.parametrize("replication", ["--replication", "--no-replication"])
def test_the_dataflows_command_prints_them_best_first(replication):
    result = run("dataflows", "mlp_s", "--batch", "4", "--jobs", "1", replication)
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if line.startswith("│")]
    assert len(rows) == 3
    energies = [float(line.split("│")[3]) for line in rows]
    assert energies == sorted(energies)
    assert ("+repl" in rows[0]) == (replication == "--replication")
    assert "3 of 3 dataflows scheduled" in result.output


def test_dataflows_json_names_them_as_the_paper_and_the_plot_draws_them(tmp_path):
    target, plot = tmp_path / "d.json", tmp_path / "d.png"
    result = run("dataflows", "mlp_s", "--batch", "4", "--jobs", "1", "--json", str(target), "--plot", str(plot))
    assert result.exit_code == 0, result.output
    import json

    data = json.loads(target.read_text())
    assert data["labels"] == {"dataflow": ["C|K+repl", "C|N+repl", "K|N+repl"]}
    assert [p["vary"]["dataflow"] for p in data["points"]] == ["C|K+repl", "C|N+repl", "K|N+repl"]
    assert plot.read_bytes()[:4] == b"\x89PNG"
