"""Reading nn_dataflow's JSON output: both references read, and every malformed
or foreign file is one InteropError line naming the file, the place and the problem."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from kapla.errors import InteropError, KaplaError
from kapla.interop.nn_dataflow.reader import LEVELS, parse_nn_dataflow, read_nn_dataflow
from tests.interop.nn_dataflow.conftest import ALEXNET, MLP_S, reference_data


def test_the_alexnet_reference_reads_with_its_setting_and_schedules():
    run = read_nn_dataflow(ALEXNET)
    assert (run.net, run.batch, run.source) == ("alex_net", 64, str(ALEXNET))
    assert run.resource.proc_region.dim == (16, 16) and run.resource.dim_array == (8, 8)
    assert (run.resource.size_gbuf, run.resource.size_regf, run.resource.array_bus_width) == (16384, 32, 8)
    assert run.resource.dram_bandwidth == 25.6
    assert run.cost.mem_hier[0] == pytest.approx(401.89e-12, rel=1e-4)
    assert run.options.hw_gbuf_sharing is False and run.options.partition_interlayer is False
    # file order, one segment per layer (layer by layer)
    assert run.layer_names[:5] == ("conv1_a", "pool1_a", "conv2_a", "pool2_a", "conv1_b")
    assert run.num_segments == 19 == len(run.segment_time)
    conv1 = run.schedules["conv1_a"]
    assert conv1.part.order == (3, 2, 1, 0) and conv1.part.pdims == ((2, 1), (8, 1), (1, 16), (1, 1))
    assert conv1.num_nodes == 256 and conv1.sched_seq == (0, 0, 0)
    assert conv1.ofmap_layout.frngs[0].fp_end == (64, 48, 55, 55)
    assert run.total_time == 20214080 and run.elapsed == pytest.approx(416.8, abs=0.1)


def test_the_mlp_s_reference_reads_with_its_pipelined_segment():
    run = read_nn_dataflow(MLP_S)
    assert run.num_segments == 1
    assert [s.sched_seq for s in run.schedules.values()] == [(0, 0, 0), (0, 1, 0), (0, 2, 0)]
    fc1 = run.schedules["fc1"]
    assert fc1.tvals == ((1, 1, 1), (66, 2, 1), (1, 4, 4)) and fc1.ti == (1, 66, 1)
    assert fc1.orders == ((0, 1, 2), (0, 1, 2)) and fc1.fetch == ((0, 1, 1), (1, 2, 1))
    assert fc1.bufshr_grp_size == (16, 1, 12) and fc1.bufshr_rot_unit_cnt == (132, 66, 2)
    assert fc1.is_dram == (True, False)
    assert run.options.hw_gbuf_sharing and run.options.layer_pipeline_max_degree == 5
    assert run.options.layer_pipeline_time_ovhd == math.inf  # nn_dataflow writes Infinity


def test_a_layer_accesses_are_nn_dataflows_totals_with_remote_buffer_reads_in_gbuf():
    run = read_nn_dataflow(MLP_S)
    fc2 = run.schedules["fc2"]
    assert sum(fc2.remote_gbuf_access) > 0  # buffer sharing reads other nodes' buffers
    assert fc2.level_accesses[1] == sum(fc2.access[1]) + sum(fc2.remote_gbuf_access)
    for i in range(len(LEVELS)):
        assert sum(s.level_accesses[i] for s in run.schedules.values()) == pytest.approx(run.total_accesses[i])


def test_a_run_is_immutable():
    run = read_nn_dataflow(MLP_S)
    with pytest.raises(ValidationError):
        run.batch = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        run.schedules["fc9"] = run.schedules["fc1"]  # type: ignore[index]


def test_the_file_name_comes_from_the_reader_not_the_file(write_json):
    data = reference_data()
    data["source"] = "forged.json"
    path = write_json(data)
    assert read_nn_dataflow(path).source == str(path)


def _set(path, value):
    """A mutation of the data: put ``value`` at ``path`` (keys and indices)."""
    def mutate(data):
        *parents, last = path
        for key in parents:
            data = data[key]
        data[last] = value
    return mutate


def _drop(path):
    def mutate(data):
        *parents, last = path
        for key in parents:
            data = data[key]
        del data[last]
    return mutate


FC1 = ("schedules", "fc1", 0)

# (mutation of the mlp_s reference, what the one-line message says)
BROKEN = [
    (_drop((*FC1, "access", 3)), "schedules.fc1.access: expected 4 rows: DRAM, GBUF, ITCN, REGF (got 3)"),
    (_drop((*FC1, "access", 1, 2)), "schedules.fc1.access[1]: expected 3 values: weights, ifmaps, ofmaps (got 2)"),
    (_set((*FC1, "access"), 5), "schedules.fc1.access: expected a list of 4 rows: DRAM, GBUF, ITCN, REGF "
                                "(got a number)"),
    (_set((*FC1, "time"), -3), "schedules.fc1.time: must not be negative (got -3)"),
    (_set((*FC1, "cost"), "1e-5"), "schedules.fc1.cost: must be a number (got '1e-5')"),
    (_set((*FC1, "time"), math.nan), "schedules.fc1.time: must be a finite number"),
    (_set((*FC1, "num_nodes"), True), "schedules.fc1.num_nodes: must be an integer (got true)"),
    (_drop((*FC1, "tvals")), "schedules.fc1.tvals: missing required field"),
    (_set((*FC1, "tvals", 1, 0), 3), "schedules.fc1.ti: [1, 66, 1] differs from the tvals column [1, 3, 1]"),
    (_drop((*FC1, "tvals", 2)), "schedules.fc1.tvals: expected 3 rows: DRAM, GBUF, REGF (got 2)"),
    (_set((*FC1, "tvals", 0, 0), 0), "schedules.fc1.tvals[0][0]: must be positive (got 0)"),
    (_set((*FC1, "orders", 0), [1, 1, 2]), "schedules.fc1.orders[0]: must be a permutation of 0 to 2"),
    (_drop((*FC1, "part", 1, 3)), "schedules.fc1.part.pdims: expected 4 pairs: OUTP, OFMP, BATP, INPP (got 3)"),
    (_set((*FC1, "part", 0), [0, 1, 2, 2]), "schedules.fc1.part.order: must be a permutation of 0 to 3"),
    (_set((*FC1, "part", 1, 3), [1, 6]), "schedules.fc1.part: spans 96 nodes but num_nodes is 192"),
    (_set(("schedules", "fc1", 0), 3), "schedules.fc1[0]: the scheme must be a mapping of fields (got int)"),
    (_drop(("schedules", "fc1", 2)), "schedules.fc1: expected [scheme, ofmap_layout, sched_seq], nn_dataflow's "
                                     "scheduling result (got 2 entries)"),
    (_set(("schedules", "fc1", 1, 0, 0), [[0, 0, 0, 0]]), "schedules.fc1.ofmap_layout.frngs[0]: expected an fmap "
                                                          "range: a list of 2 entries (fp_beg, fp_end) (got 1)"),
    (_set(("schedules", "fc2", 2), [2, 0, 0]), "schedules.fc2.sched_seq: segment 2 follows segment 0"),
    (_set(("schedules",), []), "schedules: must be a mapping (got [])"),
    (_set(("schedules",), {}), "schedules: no layer is scheduled"),
    (_drop(("resource",)), "resource: missing required field"),
    (_set(("resource", "proc_region"), [[16, 16], [0, 0]]), "resource.proc_region: expected a node region: a list "
                                                            "of 6 entries (dim, origin, dist, type, wtot, wbeg) "
                                                            "(got 2)"),
    (_set(("resource", "dram_region", 3), 0), "resource.dram_region.type: must be 1, DRAM nodes (got 0)"),
    (_set(("resource", "dram_region", 3), 7), "resource.dram_region.type: must be one of 0, 1 (got 7)"),
    (_set(("resource", "array_bus_width"), 8.5), "resource.array_bus_width: must be a whole number of words"),
    (_set(("resource", "size_gbuf"), 0), "resource.size_gbuf: must be positive (got 0)"),
    (_set(("cost", "mem_hier"), [1e-10, 1e-12, 1e-12]), "cost.mem_hier: expected 4 values: DRAM, GBUF, ITCN, REGF "
                                                        "(got 3)"),
    (_set(("cost", "noc_hop"), -1e-12), "cost.noc_hop: must not be negative"),
    (_set(("options", "opt_goal"), "x"), "options.opt_goal: must be one of 'e', 'd', 'ed' (got 'x')"),
    (_set(("batch",), 0), "batch: must be positive (got 0)"),
    (_set(("net",), None), "net: must be a string (got null)"),
    (_set(("total_ops",), 1), "total_ops: 1 but the layers' figures add up to 33248000"),
    (_set(("total_accesses", 0), 1.0), "total_accesses[0]: 1 but the layers' DRAM accesses add up to 51456"),
    (_set(("total_noc_hops",), 0), "total_noc_hops: 0 but the layers' figures add up to 1686464"),
    (_set((*FC1, "num_nodes"), 512), "schedules.fc1.part: spans 192 nodes but num_nodes is 512"),
]


@pytest.mark.parametrize(("mutate", "message"), BROKEN, ids=[m for _, m in BROKEN])
def test_a_malformed_run_is_one_line_naming_the_place(mutate, message):
    data = reference_data()
    mutate(data)
    with pytest.raises(InteropError) as err:
        parse_nn_dataflow(data, "run.json")
    text = str(err.value)
    assert text.startswith("run.json: ") and "\n" not in text
    assert message in text


def test_a_layer_on_more_nodes_than_the_chip_has_is_inconsistent():
    data = reference_data()
    scheme = data["schedules"]["fc1"][0]
    scheme["num_nodes"] = 512
    scheme["part"][1] = [[1, 1], [1, 1], [4, 4], [2, 16]]  # 512 nodes, consistent with num_nodes
    with pytest.raises(InteropError, match=r"schedules\.fc1\.num_nodes: 512 nodes but the processing region has 256"):
        parse_nn_dataflow(data, "run.json")


def test_unknown_keys_are_ignored_so_newer_output_reads():
    data = reference_data()
    data["new_stat"] = {"x": 1}
    data["schedules"]["fc1"][0]["new_field"] = [1, 2]
    assert parse_nn_dataflow(data).schedules["fc1"].time == 2112


def test_options_nn_dataflow_left_out_take_its_defaults():
    data = reference_data()
    del data["options"]
    options = parse_nn_dataflow(data).options
    assert options.hw_gbuf_sharing is False and options.layer_pipeline_max_degree == math.inf


@pytest.mark.parametrize(("content", "message"), [
    ('{"a": 1}', "run.json: not nn_dataflow's output: it has none of net, resource, cost, schedules (its keys: a)"),
    ('{"format": "kapla-schedule", "version": 1}', "run.json: a kapla-schedule document written by kapla, "
                                                   "not nn_dataflow's output"),
    ('{"name": "multinode", "levels": []}', "run.json: a kapla hardware description, not nn_dataflow's output"),
    ("[1, 2]", "run.json: not nn_dataflow's output: the top level is a list, not an object"),
    ('"schedules"', "run.json: not nn_dataflow's output: the top level is a string, not an object"),
    ('{"net": ', "run.json: not JSON (line 1, column 9: Expecting value)"),
    ("", "run.json: empty file, not nn_dataflow's JSON output"),
    (b"\xff\xfe{}", "run.json: not a text file (byte 0xff at offset 0 is not UTF-8)"),
    ('{"net": "mlp_s"}', "run.json: batch: missing required field; resource: missing required field; "
                         "cost: missing required field; and 6 more"),
])
def test_a_file_that_is_not_nn_dataflows_output_says_so(write_json, content, message):
    path = write_json(content)
    with pytest.raises(InteropError) as err:
        read_nn_dataflow(path)
    assert str(err.value) == message.replace("run.json", str(path), 1)


def test_a_missing_file_or_a_directory_is_one_line(tmp_path):
    with pytest.raises(InteropError, match=r"nope\.json: no such file$"):
        read_nn_dataflow(tmp_path / "nope.json")
    with pytest.raises(InteropError, match=r": is a directory, not nn_dataflow's JSON output$"):
        read_nn_dataflow(tmp_path)


def test_every_reader_error_is_a_kapla_error():
    assert issubclass(InteropError, KaplaError)
