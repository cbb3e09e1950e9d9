"""The layer-by-layer network scheduler: each layer alone on the whole array, in order."""

import pytest

import kapla
from kapla.arch import load_arch
from kapla.explore.compare import OK, compare
from kapla.model import evaluate
from kapla.space.network.segments import schedule_order
from kapla.workload.zoo import get_network


@pytest.mark.parametrize(("net", "arch", "batch", "training"), [
    ("mlp_s", "multinode_4x4", 8, False),
    ("lstm_m", "edge", 1, False),
    ("mlp_m", "multinode_4x4", 4, True),
    ("alexnet", "edge", 1, False),
])
def test_layer_by_layer_is_valid_and_never_better_than_kapla(net, arch, batch, training):
    network = get_network(net, batch)
    network = network.to_training() if training else network
    spec = load_arch(arch)
    alone = kapla.schedule(network, spec, solver="layerwise", jobs=1)
    assert alone.valid and alone.complete and alone.scheduler == "layerwise" and alone.solver == "layerwise"
    assert alone.segments == tuple((name,) for name in schedule_order(network))
    assert all(seg.layout == "single" and not seg.pinned for seg in alone.segment_details)
    for lr in alone.layers:
        assert lr.region == ((0, 0), spec.node_array)
        assert evaluate(lr.scheme, spec).valid
    assert alone.energy_j == pytest.approx(sum(lr.cost.total_energy for lr in alone.layers))
    # KAPLA's network search keeps the layer-by-layer chain among its candidates (same layer solver)
    best = kapla.schedule(network, spec, solver="kapla", jobs=1)
    assert best.energy_j <= alone.energy_j * (1 + 1e-9)


def test_layer_by_layer_is_deterministic_and_takes_no_budget():
    net = get_network("mlp_m", 4)
    one = kapla.schedule(net, "multinode_4x4", solver="layerwise", jobs=1)
    two = kapla.schedule(net, "multinode_4x4", solver="layerwise", jobs=2)
    assert [lr.scheme for lr in one.layers] == [lr.scheme for lr in two.layers] and one.energy_j == two.energy_j
    with pytest.raises(kapla.KaplaError, match="solver 'layerwise' takes no time budget"):
        kapla.schedule(net, "multinode_4x4", solver="layerwise", time_budget=5)


def test_compare_puts_it_beside_the_segment_schedulers():
    result = compare("mlp_s", "multinode_4x4", ["kapla", "layerwise"], batch=8, jobs=1)
    runs = {r.solver: r for r in result.runs}
    assert runs["layerwise"].status == OK and runs["kapla"].status == OK
    assert runs["kapla"].result.energy_j <= runs["layerwise"].result.energy_j * (1 + 1e-9)
    doc = result.to_dict()
    assert set(doc["results"]) == {"kapla", "layerwise"}


def test_the_cli_and_the_report_read_its_result(tmp_path):
    import json

    from click.testing import CliRunner

    from kapla.cli.main import app

    out, page = tmp_path / "r.json", tmp_path / "r.html"
    run = CliRunner().invoke(app, ["schedule", "mlp_s", "--arch", "multinode_4x4", "--batch", "4", "--solver",
                                   "layerwise", "--json", str(out), "--report", str(page), "--jobs", "1"])
    assert run.exit_code == 0, run.output
    doc = json.loads(out.read_text())
    assert doc["scheduler"] == "layerwise" and doc["solver"] == "layerwise" and doc["valid"]
    assert [s["layout"] for s in doc["segment_details"]] == ["single"] * len(doc["layers"])
    html = page.read_text()
    assert "segment 0 (single)" in html and "fc1" in html
