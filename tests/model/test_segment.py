"""Segments: forwarding between regions replaces DRAM traffic; pipelined timing."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.dataflow.directives import LayerScheme, LevelScheme, Loop
from kapla.dataflow.examples import kapla_example as paper_example
from kapla.dataflow.segment import LayerPlacement, Region, SegmentScheme
from kapla.model import evaluate
from kapla.model.evaluate import Feed
from kapla.model.segment import SegmentMemo, dram_distance, evaluate_segment, pipeline_time

ARCH = load_arch("multinode")
CONV_REGION = Region((0, 0), (4, 16))
DW_REGION = Region((4, 0), (12, 16))


def segment(groups=1, forward=True):
    net, conv, dw = paper_example()
    placements = {
        "conv": LayerPlacement("conv", CONV_REGION, to_dram=not forward),
        "dwconv": LayerPlacement("dwconv", DW_REGION, onchip_inputs=("conv",) if forward else ()),
    }
    return SegmentScheme((("conv",), ("dwconv",)), placements, {"conv": conv, "dwconv": dw}, groups)


def test_forwarding_moves_the_intermediate_fmap_off_dram():
    fwd = evaluate_segment(segment(forward=True), ARCH)
    off = evaluate_segment(segment(forward=False), ARCH)
    assert fwd.valid and off.valid
    # The CONV output (64 x 96 x 15 x 15 words) is neither written nor read back.
    assert "conv" not in fwd.layers["conv"].accesses["DRAM"]
    assert "conv" not in fwd.layers["dwconv"].accesses["DRAM"]
    assert off.layers["conv"].accesses["DRAM"]["conv"] == 64 * 96 * 15 * 15
    assert fwd.energy["DRAM"] < off.energy["DRAM"]
    assert fwd.total_energy < off.total_energy


def test_forwarded_input_pays_hops_between_region_centres():
    net, conv, dw = paper_example()
    local = ARCH.with_node_region(12, 16, origin=(4, 0))
    base = dict(dram_hops=dram_distance(ARCH, DW_REGION))
    near = evaluate(dw, local, Feed(ifm_hops=0.0, **base))
    far = evaluate(dw, local, Feed(ifm_hops=CONV_REGION.distance(DW_REGION), **base))
    words = near.accesses["GBUF"]["conv"] - far.accesses["GBUF"]["conv"] + far.accesses["GBUF"]["conv"]
    assert CONV_REGION.distance(DW_REGION) == 8.0  # centres (1.5, 7.5) and (9.5, 7.5)
    # the forwarded input's DRAM reads became node-buffer reads, each 8 hops away
    top_reads = evaluate(dw, local).accesses["DRAM"]["conv"]
    assert far.noc_hops - near.noc_hops == pytest.approx(8.0 * top_reads)
    assert words > 0


def test_a_memo_costs_a_layer_of_the_same_shape_once_and_names_each_cost_after_its_own_layer():
    from dataclasses import replace

    one = segment(forward=False)
    # the same segment with every layer renamed: what a repeated block of a deep network gives
    names = {"conv": "conv_b", "dwconv": "dwconv_b"}
    renamed = SegmentScheme(
        tuple(tuple(names[n] for n in slot) for slot in one.slots),
        {names[n]: replace(p, layer=names[n]) for n, p in one.placements.items()},
        {names[n]: replace(s, layer=replace(s.layer, name=names[n])) for n, s in one.schemes.items()},
        one.groups)
    memo = SegmentMemo()
    first = evaluate_segment(one, ARCH, memo)
    costed = len(memo.costs)
    second = evaluate_segment(renamed, ARCH, memo)
    assert costed == 2 and len(memo.costs) == 2  # the renamed layers were not evaluated again
    assert second == evaluate_segment(renamed, ARCH)  # and cost what they cost alone, under their own names
    assert {c.layer for c in second.layers.values()} == {"conv_b", "dwconv_b"}
    assert second.total_energy == first.total_energy


def test_pipelined_slots_overlap_by_their_groups():
    serial = evaluate_segment(segment(groups=1), ARCH)
    piped = evaluate_segment(segment(groups=4), ARCH)
    t_conv, t_dw = serial.layers["conv"].time, serial.layers["dwconv"].time
    assert serial.time == pytest.approx(max(t_conv + t_dw, 0))
    assert piped.time == pytest.approx(max(t_conv, t_dw) + min(t_conv, t_dw) / 4)
    assert piped.energy["static"] < serial.energy["static"]


def test_data_kept_on_chip_must_not_be_fetched_twice():
    net, conv, dw = paper_example()
    local = ARCH.with_node_region(4, 16)
    regf = LevelScheme("REGF", conv.levels[0].stacks, (Loop("N", 2),) + conv.levels[0].updates[1:])

    def with_top(*updates):
        gbuf = LevelScheme("GBUF", conv.levels[1].stacks, updates, shr=conv.levels[1].shr)
        return LayerScheme(conv.layer, 64, conv.unit, (regf, gbuf), ifm_name="data")

    # Batch outside the output channels: each input block is read once, then reused.
    assert evaluate(with_top(Loop("N", 2), Loop("K", 4)), local, Feed(ifm_hops=1.0)).valid
    # Output channels outside the batch: the input is read again for every K step,
    # which is fine from DRAM but impossible for data forwarded on chip.
    again = with_top(Loop("K", 4), Loop("N", 2))
    assert evaluate(again, local).valid
    verdict = evaluate(again, local, Feed(ifm_hops=1.0)).validity
    assert "the forwarded input is read 4 times" in str(verdict)
    # Pinned weights must not be reloaded either: here they are read once per batch step.
    reload = with_top(Loop("K", 4), Loop("N", 2))
    assert evaluate(reload, local, Feed(pinned=True)).valid  # K outermost: weights once
    reload = with_top(Loop("N", 2), Loop("K", 4))
    assert "pinned weights would be reloaded" in str(evaluate(reload, local, Feed(pinned=True)).validity)
    pinned = evaluate(conv, local, Feed(pinned=True))
    assert pinned.valid and "conv.w" not in pinned.accesses["DRAM"]
    # An output kept on chip cannot spill partial sums to DRAM: splitting the
    # input channels at the top level writes every output twice.
    half_c = LevelScheme("REGF", conv.levels[0].stacks, tuple(
        Loop("C", 8) if lp.dim == "C" else lp for lp in conv.levels[0].updates))
    split = LayerScheme(conv.layer, 64, conv.unit, (half_c, LevelScheme(
        "GBUF", conv.levels[1].stacks, (Loop("C", 2), Loop("K", 4)), shr=conv.levels[1].shr)), ifm_name="data")
    assert evaluate(split, local).valid
    assert "partial sums of an output kept on chip" in str(evaluate(split, local, Feed(to_dram=False)).validity)
    assert evaluate(conv, local, Feed(to_dram=False)).valid



# ---------------------------------------------------------------- pipelined time of a segment

def _slots(sizes, times):
    """Slots of ``sizes`` layers named l0, l1, ... in order, layer ``i`` taking ``times[i]``."""
    names = iter(f"l{i}" for i in range(sum(sizes)))
    slots = [[next(names) for _ in range(n)] for n in sizes]
    return slots, {f"l{i}": times[i] for i in range(sum(sizes))}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=5), st.lists(st.floats(1, 1e4), min_size=16, max_size=16),
       st.sampled_from([1, 2, 4, 16]), st.integers(0, 2**16))
def test_pipelined_time_of_a_chain_and_of_slots_that_pass_nothing(sizes, times, groups, seed):
    """A chain of slots (each slot's first layer fed by the previous slot's last)
    takes max T + (sum T - max T) / groups, as every segment was costed before
    branches could run side by side; slots that pass each other nothing take the
    longest slot's time; any other sources lie between the two."""
    slots, t = _slots(sizes, times)
    totals = [sum(t[n] for n in slot) for slot in slots]
    chain = {slot[0]: [slots[i - 1][-1]] for i, slot in enumerate(slots) if i}
    want = max(totals) + (sum(totals) - max(totals)) / groups
    assert pipeline_time(slots, t, chain, groups) == pytest.approx(want, rel=1e-9)
    assert pipeline_time(slots, t, {}, groups) == pytest.approx(max(totals), rel=1e-9)
    rng = random.Random(seed)
    order = [n for slot in slots for n in slot]
    some = {n: rng.sample(order[:k], rng.randint(0, k)) for k, n in enumerate(order)}
    got = pipeline_time(slots, t, some, groups)
    assert max(totals) * (1 - 1e-9) <= got
    # more sources than a chain's can only delay what the chain's allow: with every earlier layer a source
    every = {n: order[:k] for k, n in enumerate(order)}
    assert got <= pipeline_time(slots, t, every, groups) * (1 + 1e-9)


def test_dram_distances_are_those_of_the_spec_asked_about_whatever_was_asked_before():
    # distances are kept per spec: specs asked in turn must each get their own
    one_corner = ARCH.replace(dram_channels=((0, 0),))
    region = Region((12, 11), (2, 2))  # nearer the far corner than (0, 0)

    def brute(channels):
        return sum(min(abs(r - cr) + abs(c - cc) for cr, cc in channels) for r, c in region.cells()) / 4

    for arch in (ARCH, one_corner, ARCH, load_arch("multinode").replace(dram_channels=((0, 0),))):
        assert dram_distance(arch, region) == pytest.approx(brute(arch.dram_channel_nodes))
    assert dram_distance(one_corner, region) != dram_distance(ARCH, region)


def test_node_buffer_sizes_are_those_of_the_spec_asked_about_whatever_was_asked_before():
    from kapla.model.hardware import node_buffer_words

    small = ARCH.with_level("GBUF", capacity=16384)
    words = 16384 * 8 // ARCH.tensor_bits_of("wgt")
    for arch in (ARCH, small, ARCH, small):
        expected = words if arch is small else ARCH.capacity_bytes(1, "wgt") * 8 // ARCH.tensor_bits_of("wgt")
        assert node_buffer_words(arch, "wgt") == expected
    assert node_buffer_words(small, "wgt") < node_buffer_words(ARCH, "wgt")
