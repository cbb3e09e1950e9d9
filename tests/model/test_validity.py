"""The validity check names every violated constraint."""

import pytest

from kapla.arch import load_arch
from kapla.dataflow.directives import LayerScheme, LevelScheme, Loop, Stack
from kapla.dataflow.tensors import Kind
from kapla.model import check_scheme, evaluate
from kapla.workload.layer import Layer, Op

LAYER = Layer("conv", Op.CONV, c=4, k=8, h=8, w=8, s=3, r=3, pad=(1, 1, 1, 1))
EYERISS = load_arch("eyeriss")


def scheme(unit=None, regf_stacks=None, regf_updates=None, gbuf_stacks=(), gbuf_updates=None, **gbuf):
    return LayerScheme(LAYER, 2, unit if unit is not None else {"R": 3}, (
        LevelScheme("REGF", regf_stacks if regf_stacks is not None else (Stack("Y", 1, 8), Stack("S", 3, 1)),
                    regf_updates if regf_updates is not None else (Loop("K", 8), Loop("C", 4), Loop("X", 8))),
        LevelScheme("GBUF", gbuf_stacks, gbuf_updates if gbuf_updates is not None else (Loop("N", 2),), **gbuf),
    ))


def test_reference_scheme_is_valid():
    assert check_scheme(scheme(), EYERISS).ok


@pytest.mark.parametrize("bad, message", [
    (dict(gbuf_updates=()), r"the loops over N cover 1 of 2 \(lost work\)"),
    (dict(gbuf_updates=(Loop("N", 4),)), r"GBUF update\(N\) x4 steps by 1 over only 2 N \(idle iterations\)"),
    (dict(regf_updates=(Loop("K", 8), Loop("C", 2), Loop("X", 8))), r"the loops over C cover 2 of 4"),
    (dict(unit={"R": 3, "C": 8}), r"the PE unit block has C=8 but the layer only 4 \(idle work\)"),
    (dict(unit={"R": 3, "C": 2}), r"REGF update\(C\) x4 steps by 2 over only 4 C"),
    (dict(regf_stacks=(Stack("Y", 1, 16), Stack("S", 3, 1)), regf_updates=(Loop("K", 8), Loop("C", 4), Loop("X", 8))),
     r"REGF stacks use 3x16 units but only 12x14 exist"),
    # 2 samples x (4 channels x 10 input columns + 8 x 8 outputs) + 4 x 8 x 3 weights = 304 words
    (dict(unit={"R": 3, "C": 4, "K": 8, "X": 8, "N": 2}, regf_updates=(), gbuf_updates=()),
     r"REGF needs 608 B per unit but holds 512 B"),
    (dict(gbuf_updates=(Loop("N", 2),), shr=((Kind.WGT, 2),)),
     r"shares wgt over 2 units but the hardware has no neighbour"),
])
def test_each_violation_is_named(bad, message):
    verdict = check_scheme(scheme(**bad), EYERISS)
    assert not verdict.ok
    assert any(__import__("re").search(message, reason) for reason in verdict.reasons), verdict.reasons


def test_wrong_levels_and_bypass_at_the_pes():
    two_level = LayerScheme(LAYER, 2, {"R": 3}, (LevelScheme("REGF"),))
    assert "do not match the hardware's on-chip levels" in str(check_scheme(two_level, EYERISS))
    bypass = LayerScheme(LAYER, 2, {"R": 3}, (
        LevelScheme("REGF", (Stack("Y", 1, 8), Stack("S", 3, 1)), (Loop("K", 8), Loop("C", 4), Loop("X", 8)),
                    bypass=frozenset({Kind.WGT})),
        LevelScheme("GBUF", (), (Loop("N", 2),)),
    ))
    # the weights stream from the global buffer straight to the datapath: valid,
    # one read per operation, shared by the 8 PE columns (Y) that use the same row
    assert check_scheme(bypass, EYERISS).ok
    cost = evaluate(bypass, EYERISS)
    ops = 2 * 8 * 4 * 8 * 8 * 3 * 3
    weights = 8 * 4 * 3 * 3  # filled once from DRAM
    assert cost.accesses["GBUF"]["conv.w"] == ops / 8 + weights
    assert "conv.w" not in cost.accesses["REGF"]


def test_sharing_needs_units_that_hold_the_same_block():
    arch = load_arch("multinode").with_node_region(1, 2)
    base = dict(regf_updates=(Loop("K", 4), Loop("C", 4), Loop("X", 8)), gbuf_stacks=(Stack("K", 1, 2),))
    # Splitting K gives both nodes the same input: they may share it ...
    assert check_scheme(scheme(**base, shr=((Kind.IFM, 2),)), arch).ok
    # ... but their weights differ, so weights cannot be shared.
    verdict = check_scheme(scheme(**base, shr=((Kind.WGT, 2),)), arch)
    assert "only 1 units hold the same wgt block" in str(verdict)


def test_invalid_scheme_gets_reasons_not_numbers():
    cost = evaluate(scheme(gbuf_updates=()), EYERISS)
    assert not cost.valid and cost.energy == {} and cost.objective() == float("inf")
