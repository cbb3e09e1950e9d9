"""Hand-derived access counts, energy and time for small CONV layers.

Each test writes a scheme by hand, derives what it must cost in the comments,
and checks the evaluator against those numbers.
"""

import pytest

from kapla.arch import load_arch
from kapla.dataflow.directives import LayerScheme, LevelScheme, Loop, Stack
from kapla.dataflow.examples import SMALL_CONV, row_stationary_example, systolic_example
from kapla.model import evaluate
from kapla.model.evaluate import ITCN, MAC, STATIC

LAYER = SMALL_CONV  # C=4 -> K=8, 8x8 output, 3x3 filter, padding 1 (10x10 padded input); batch 2
OPS = 2 * 8 * 8 * 8 * 4 * 9  # N * K * Y * X * C * S * R = 36864


row_stationary_scheme = row_stationary_example  # see its docstring for the scheme
systolic_scheme = systolic_example


def test_row_stationary_access_counts():
    cost = evaluate(row_stationary_scheme(), load_arch("eyeriss"))
    assert cost.valid, cost.validity
    acc = {level: dict(t) for level, t in cost.accesses.items()}
    # REGF: every MAC reads an input and a weight and reads+writes a partial sum.
    assert acc["REGF"] == {"conv.in": OPS, "conv.w": OPS, "conv": 2 * OPS}

    # Loops above a PE, outermost first: N2 (GBUF level), K8, C4, X8 (PE level).
    # Input: X is its innermost relevant loop and slides a 3-wide window by 1,
    #   so one sweep loads 3 + 7 = 10 words; the 2*8*4 = 64 outer iterations
    #   repeat it: 640 words per PE, 24 PEs -> 15360 words on the bus.
    # Weights: C is innermost relevant; X reuses the filter row, so a PE loads
    #   N2*K8*C4 rows of 3 = 192 words, 24 PEs -> 4608.
    # Output: X is innermost relevant, 64*8 = 512 blocks of 1 written back per PE
    #   (12288 in all); the first visit of each of the N2*K8*X8 = 128 outputs a PE
    #   owns needs no read, so 512 - 128 = 384 partial sums are read back (9216).
    assert acc[ITCN] == {"conv.in": 15360, "conv.w": 4608, "conv": 9216 + 12288}

    # The GBUF serves the PE array with multicast: the 24 PEs together need
    #   input rows (8-1) + (3-1) + 1 = 10 of 3 columns sliding to 10 -> 100 words
    #   per sweep, x64 = 6400; weights 3x3 = 9 per C step: 2*8*4*9 = 576.
    #   Partial sums of the 3 PE rows are added on the way down a column, so the
    #   GBUF sees 8 outputs per step: 64*8*8 = 4096 writes and 4096 - 2*8*8*8 = 3072
    #   reads. Filling the GBUF from DRAM writes each input (4*10*10 = 400 per
    #   sample, N loop above: 800) and weight (288) once, and the outputs
    #   (2*8*8*8 = 1024) are read out once.
    assert acc["GBUF"] == {"conv.in": 6400 + 800, "conv.w": 576 + 288, "conv": 4096 + 3072 + 1024}
    assert acc["DRAM"] == {"conv.in": 800, "conv.w": 288, "conv": 1024}

    # Time: 36864 MACs on 24 PEs = 1536 steps; the 64-bit bus moves 4 words a
    # cycle, and its busiest type (partial sums, 7168 words) needs 1792 cycles;
    # DRAM 2112 words at 4 words/cycle = 528 cycles. The bus bounds the layer.
    assert cost.time_parts == {"compute": 1536, "bus": 1792, "dram": 528}
    assert cost.time == 1792


def test_row_stationary_energy_adds_up():
    arch = load_arch("eyeriss")  # MAC 2, REGF 1, ITCN 4, GBUF 15, DRAM 460 pJ; 150 pJ/cycle static
    cost = evaluate(row_stationary_scheme(), arch)
    pj = 1e-12
    expected = {
        MAC: OPS * 2 * pj,
        "REGF": 4 * OPS * 1 * pj,
        ITCN: (15360 + 4608 + 21504) * 4 * pj,
        "GBUF": (7200 + 864 + 8192) * 15 * pj,
        "DRAM": (800 + 288 + 1024) * 460 * pj,
        "NoC": 0.0,
        STATIC: 1792 * arch.static_pj * pj,
    }
    assert cost.energy.keys() == expected.keys()
    for key, value in expected.items():
        assert cost.energy[key] == pytest.approx(value, rel=1e-12), key
    assert cost.total_energy == pytest.approx(sum(expected.values()))


def test_systolic_access_counts():
    arch = load_arch("edge")  # REGF neighbour transfers on
    cost = evaluate(systolic_scheme(), arch)
    assert cost.valid, cost.validity
    acc = {level: dict(t) for level, t in cost.accesses.items()}
    # Each PE needs, per (n, y), a 3x3 window sliding along X by 1: 9 + 7*3 = 30
    #   words, x N2*Y8 = 480 per PE, 32 PEs -> 15360 words delivered. Only what
    #   enters at the array's edge crosses the bus: the 4 rows' distinct inputs,
    #   4 channels x 30 x 16 = 1920 words; the remaining 13440 hop between PEs
    #   (one register write each).
    # Weights: no relevant loop above the PEs: 9 words per PE, loaded once: 288,
    #   all distinct (each PE has its own (c, k) filter).
    # Outputs: each PE writes one partial sum per (n, y, x) step: 128 per PE,
    #   4096 in all, first visits only, so nothing is read back; the 4 rows'
    #   partial sums are reduced on the way down, so 8 columns x 128 = 1024
    #   leave the array.
    assert acc[ITCN] == {"conv.in": 1920, "conv.w": 288, "conv": 1024}
    assert acc["REGF"] == {"conv.in": OPS + 13440, "conv.w": OPS, "conv": 2 * OPS + 3072}
    assert acc["GBUF"] == {"conv.in": 1920 + 800, "conv.w": 288 + 288, "conv": 1024 + 1024}
    assert acc["DRAM"] == {"conv.in": 800, "conv.w": 288, "conv": 1024}
    # 36864 MACs on 32 PEs = 1152 steps; inputs on the 256-bit bus (16 words/cycle)
    # take 1920 / 16 = 120 cycles; DRAM 2112 words at 6.4 words/cycle = 330.
    assert cost.time_parts == {"compute": 1152, "bus": 120, "dram": 330}


def test_node_partitioning_costs_noc_hops():
    """Two nodes side by side split K; each fetches its own weights and the
    shared input from the nearest DRAM channel (the 1x2 region's corners: 0 hops)."""
    arch = load_arch("multinode").with_node_region(1, 2)
    scheme = LayerScheme(LAYER, 2, {"R": 3}, (
        LevelScheme("REGF", (Stack("Y", 1, 8), Stack("S", 3, 1)), (Loop("K", 4), Loop("C", 4), Loop("X", 8))),
        LevelScheme("GBUF", (Stack("K", 1, 2),), (Loop("N", 2),)),
    ))
    cost = evaluate(scheme, arch)
    assert cost.valid, cost.validity
    assert cost.noc_hops == 0  # both nodes are channel nodes
    # The input is multicast to both nodes: DRAM reads it once.
    assert cost.accesses["DRAM"]["conv.in"] == 800
    wide = evaluate(scheme, load_arch("multinode").with_node_region(1, 4).replace(
        dram_channels=[(0, 0)]))
    # On a 1x4 region with one channel at (0,0) and the nodes at (0,0), (0,1):
    # the second node is one hop away; it receives 800 input, 144 weight words and
    # sends 512 output words: 1456 word-hops.
    assert wide.noc_hops == 1456


def test_loops_of_one_iteration_change_nothing():
    arch = load_arch("eyeriss")
    base = row_stationary_scheme()
    padded = LayerScheme(LAYER, 2, {"R": 3}, (
        LevelScheme("REGF", base.levels[0].stacks, (Loop("K", 8), Loop("C", 4), Loop("N", 1), Loop("X", 8))),
        LevelScheme("GBUF", (), (Loop("N", 2), Loop("K", 1))),
    ))
    a, b = evaluate(base, arch), evaluate(padded, arch)
    assert a.accesses == b.accesses and a.energy == b.energy and a.time == b.time
