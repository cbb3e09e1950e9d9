"""nn_dataflow's figures as its file states them, and the import of a run as a whole."""

from __future__ import annotations

import json
from types import MappingProxyType

import jsonschema
import pytest

from kapla.arch import load_arch
from kapla.interop import import_schedule
from kapla.interop.nn_dataflow.figures import Figures, ToolFigures, nn_dataflow_figures
from kapla.interop.nn_dataflow.reader import LEVELS, read_nn_dataflow
from kapla.schemas import result_schema
from tests.interop.nn_dataflow.conftest import ALEXNET, FACTORS, MLP_S


def test_per_layer_figures_are_the_schemes_and_totals_the_files():
    run = read_nn_dataflow(MLP_S)
    figures = nn_dataflow_figures(run)
    assert list(figures.layers) == ["fc1", "fc2", "fc3"]
    fc1 = figures.layers["fc1"]
    assert (fc1.energy_j, fc1.time_cycles) == (run.schedules["fc1"].cost, 2112)
    assert dict(fc1.accesses) == {"DRAM": 50688, "GBUF": 101376 + 384000 + 32000, "ITCN": 6336000 + 6488064 + 384000,
                                  "REGF": 25088000 + 25088000 + 50176000}
    assert fc1.noc_hops == 451568 + 302000
    total = figures.total
    assert (total.energy_j, total.time_cycles, total.noc_hops) == (run.total_cost, 2688, 1686464)
    assert list(total.accesses.values()) == [51456, 1163008, 19470312, 132992000]
    # one pipelined segment: the layers overlap, their own times add up to more than the total
    assert sum(f.time_cycles for f in figures.layers.values()) == 6848 > total.time_cycles


def test_the_alexnet_layers_add_up_to_the_total_layer_by_layer():
    figures = nn_dataflow_figures(read_nn_dataflow(ALEXNET))
    assert sum(f.time_cycles for f in figures.layers.values()) == figures.total.time_cycles == 20214080
    assert sum(f.energy_j for f in figures.layers.values()) == pytest.approx(figures.total.energy_j, rel=1e-12)
    for level in LEVELS:
        assert sum(f.accesses[level] for f in figures.layers.values()) == pytest.approx(figures.total.accesses[level])


def test_figures_are_immutable_and_per_level_in_nn_dataflows_order():
    f = Figures(1.0, 2.5, dict.fromkeys(LEVELS, 3.0), 4.0)
    assert isinstance(f.accesses, MappingProxyType)
    assert f.to_dict() == {"energy_j": 1.0, "time_cycles": 3, "accesses": dict.fromkeys(LEVELS, 3.0), "noc_hops": 4.0}
    with pytest.raises(ValueError, match="accesses are per level DRAM, GBUF, ITCN, REGF"):
        Figures(1.0, 2.0, {"GBUF": 1.0, "DRAM": 1.0, "ITCN": 1.0, "REGF": 1.0}, 0.0)
    tool = ToolFigures(f, {"a": f})
    with pytest.raises(TypeError):
        tool.layers["b"] = f  # type: ignore[index]


def test_import_schedule_hands_the_evaluation_the_run_its_network_and_hardware(fake_evaluation):
    result = import_schedule(MLP_S)
    [(run, net, arch)] = fake_evaluation
    assert run is result.run and net is result.network and arch is result.arch
    assert run.net == net.name == "mlp_s" and list(run.schedules) == [layer.name for layer in net.layers]
    assert arch.node_array == (16, 16) and arch.options.buffer_sharing
    assert result.nn_dataflow == nn_dataflow_figures(run)
    assert result.kapla.total.energy_j == pytest.approx(FACTORS["energy"] * run.total_cost)


def test_import_schedule_takes_another_base(fake_evaluation):
    result = import_schedule(MLP_S, base=load_arch("multinode").replace(clock_mhz=1000))
    assert result.arch.clock_mhz == 1000 and fake_evaluation[0][2] is result.arch


def test_the_json_document_follows_the_schema_and_holds_both_tools(fake_evaluation):
    doc = import_schedule(ALEXNET).to_dict()
    jsonschema.validate(doc, result_schema())
    json.dumps(doc, allow_nan=False)  # plain JSON
    assert (doc["format"], doc["version"], doc["net"], doc["batch"]) == ("kapla-import", 1, "alex_net", 64)
    theirs, ours = doc["nn_dataflow"], doc["kapla"]
    assert theirs["energy_j"] == pytest.approx(0.3539256847374608) and theirs["time_cycles"] == 20214080
    assert theirs["accesses"]["DRAM"] == 517480448 and theirs["noc_hops"] == 3124507008
    assert list(theirs["layers"]) == list(ours["layers"]) == list(read_nn_dataflow(ALEXNET).schedules)
    assert ours["layers"]["fc3"]["accesses"]["ITCN"] == FACTORS["ITCN"] * theirs["layers"]["fc3"]["accesses"]["ITCN"]
    assert doc["nn_dataflow_search_seconds"] == pytest.approx(416.8, abs=0.1)


@pytest.mark.parametrize("mangle", [
    lambda d: d["kapla"].update(time_cycles=1.5),
    lambda d: d["nn_dataflow"]["accesses"].pop("ITCN"),
    lambda d: d["kapla"]["layers"]["fc1"].update(energy_j=-1),
    lambda d: d["nn_dataflow"].pop("layers"),
    lambda d: d.update(format="kapla-imported"),
])
def test_the_schema_rejects_a_broken_import_document(fake_evaluation, mangle):
    doc = import_schedule(MLP_S).to_dict()
    mangle(doc)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, result_schema())

