"""A segment's layers that read the same fmaps from DRAM fetch them once: an LSTM cell's gates."""

import pytest

import kapla
from kapla.arch import load_arch
from kapla.search.result import ScheduleResult

NNDATAFLOW = load_arch("multinode_nndataflow")
GATES = ("cell_cand", "cell_igate", "cell_fgate", "cell_ogate")
INPUT = "cell_hinit+data"  # the gates' input: the cell's initial h and its input, both network inputs


@pytest.fixture(scope="module")
def lstm_m() -> tuple[ScheduleResult, ScheduleResult]:
    """LSTM-M at batch 64 with full TANGRAM: every layer fetching its own fmaps, and with sharing."""
    return tuple(kapla.schedule("lstm_m", NNDATAFLOW, batch=64, jobs=1, solver_options={"share_inputs": share})
                 for share in (False, True))


def test_the_gates_of_an_lstm_cell_fetch_their_input_once(lstm_m):
    """Issue 22: nn_dataflow's gates read nothing from DRAM but one; each of kapla's read the cell's
    input again. Sharing it, the schedule uses less energy and exactly one gate reads the input."""
    alone, shared = lstm_m
    assert alone.valid and shared.valid
    readers = [[g for g in GATES if INPUT in r.layer(g).cost.accesses["DRAM"]] for r in lstm_m]
    assert len(readers[0]) == 4 and len(readers[1]) == 1
    assert shared.energy_j < alone.energy_j
    # what the three other gates no longer read, at least (the NoC and node buffers cost some back)
    words = alone.layer(readers[1][0]).cost.accesses["DRAM"][INPUT]
    assert shared.energy["DRAM"] <= alone.energy["DRAM"] - 3 * words * NNDATAFLOW.read_energy(-1, "ifm") * 0.99


def test_sharing_is_an_option_the_search_takes_or_leaves(lstm_m):
    """The search with sharing on finds the cell's schedule with it off too, or a better one; asked for
    an unknown value, the option is refused."""
    alone, shared = lstm_m
    assert shared.energy_j <= alone.energy_j
    with pytest.raises(Exception, match="share_inputs"):
        kapla.schedule("mlp_s", "multinode_4x4", batch=4, jobs=1, solver_options={"share_inputs": "maybe"})


def test_a_layer_takes_on_chip_what_its_segment_makes_and_the_rest_from_dram(lstm_m):
    """cell_cout_f reads the forget gate's output and the cell's initial C (a network
    input): in one segment with the gate it gets the gate's output forwarded and reads
    only C from DRAM, and the gate writes nothing to DRAM (nn_dataflow's schedule does the
    same; before, a layer's input was all forwarded or all from DRAM). The pipeline of
    independent slots side by side is checked by tests/model/test_segment.py."""
    _, shared = lstm_m
    assert len(shared.segments) == 1
    c_words = 512 * 64  # the cell's C, the whole batch
    assert shared.layer("cell_cout_f").cost.accesses["DRAM"] == {"cell_cinit+cell_fgate": c_words}
    assert not shared.layer("cell_fgate").cost.accesses["DRAM"]
