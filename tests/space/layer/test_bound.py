"""The lower bound of a frame (:mod:`kapla.space.layer.bound`) is a bound: on every
kind of hierarchy (classic three-level, per-node DRAM reads, systolic, Simba's
per-tensor buffers and bypasses, four levels), under every kind of feed, no
valid blocking of a frame costs less energy or takes less time than the
frame's bound. The exhaustive solver prunes by it, so a bound above a real
cost would lose the optimum."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kapla.model.feed import FROM_DRAM, Feed
from kapla.model.hardware import hardware
from kapla.space.layer.bound import partial_bounds
from kapla.space.layer.layer_space import LayerSpace
from kapla.space.problem import Problem
from kapla.workload.layer import Layer, Op
from tests.conftest import small_hierarchy, small_layers

TOLERANCE = 1 + 1e-12
NAMES = ["multinode", "multinode_nndataflow", "edge", "eyeriss", "simba", "interstellar", "four_level.yaml",
         "four_level_l2.yaml", "four_level_pe_buffer.yaml", "eyeriss_lbuf.yaml"]

FEEDS = [FROM_DRAM, Feed(ifm_hops=1.0), Feed(to_dram=False, dram_hops=3.0), Feed(pinned=True),
         Feed(ifm_hops=2.5, to_dram=False, pinned=True), Feed(dram_hops=0.5),
         # an input forwarded in part, the rest from DRAM
         Feed(ifm_hops=1.5, ifm_share=0.5), Feed(ifm_hops=4.0, ifm_share=0.25, to_dram=False)]


def least(space: LayerSpace, frame: int) -> tuple[float, float] | None:
    """The least energy and the least time of a valid blocking of the frame (None: none is valid)."""
    energy = elapsed = np.inf
    for b in space.blockings(frame):
        costs = space.score(frame, b)
        ok = costs.valid
        if ok.any():
            energy = min(energy, float(costs.total[ok].min()))
            elapsed = min(elapsed, float(costs.time[ok].min()))
    return None if not np.isfinite(energy) else (energy, elapsed)


def check_frames(layer: Layer, batch: int, arch, feed: Feed, frames=None) -> int:
    """Assert the bound of each frame (all by default) against its blockings; how many had a valid one."""
    space = LayerSpace(Problem(layer, batch, arch, "energy", feed))
    checked = 0
    if not len(space):
        return 0
    for i in range(len(space)) if frames is None else sorted({f % len(space) for f in frames}):
        real = least(space, i)
        if real is None:
            continue
        bound = space.bound(i)
        assert bound.energy <= real[0] * TOLERANCE, (arch.name, layer, feed, space.frames[i].describe())
        assert bound.time <= real[1] * TOLERANCE, (arch.name, layer, feed, space.frames[i].describe())
        checked += 1
    return checked


# smaller than the solvers' tests: every frame of each is checked
LAYERS = small_layers(c=12, h=(2, 8), k=16, s=3, stride=3, dilated=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LAYERS, st.integers(1, 2), st.sampled_from(NAMES), st.sampled_from(FEEDS),
       st.lists(st.integers(0, 1 << 16), min_size=1, max_size=3))
def test_no_valid_blocking_of_a_frame_beats_its_bound(layer, batch, name, feed, picks):
    check_frames(layer, batch, small_hierarchy(name), feed, picks)


@pytest.mark.parametrize("name", ["simba", "multinode_nndataflow", "four_level.yaml"])
def test_gapped_windows_sliding_are_bounded_as_the_model_counts_them(name):
    """A stride longer than the window: a temporal filter loop slides windows with
    gaps, which the model counts as one run (fewer words than the positions read)."""
    layer = Layer("p", Op.POOL, c=8, k=8, h=6, w=6, s=2, r=2, stride=(3, 3), mode="max")
    assert check_frames(layer, 2, small_hierarchy(name), FROM_DRAM) > 0


def test_the_bound_is_tight_where_a_frame_leaves_no_choice():
    """A frame whose one blocking is forced is bounded by about its cost (the bound
    counts what any scheme moves, not a fraction of it)."""
    arch = small_hierarchy("multinode")
    space = LayerSpace(Problem(Layer("f", Op.FC, c=12, k=8, h=1, w=1), 4, arch))
    ratios = [space.bound(i).energy / real[0] for i in range(len(space)) if (real := least(space, i))]
    assert max(ratios) > 0.99 and min(ratios) > 0.5


def check_partial(layer: Layer, batch: int, arch, feed: Feed, frames) -> int:
    """Assert, for each frame picked, that every partial blocking's bound (its outermost
    levels' counts fixed, any number of them) is at most the energy and the time of
    every valid blocking completing it; how many partial blockings were checked."""
    space = LayerSpace(Problem(layer, batch, arch, "energy", feed))
    checked = 0
    if not len(space):
        return 0
    for i in sorted({f % len(space) for f in frames}):
        units, counts, energy, elapsed = [], [], [], []
        for b in space.blockings(i):
            costs = space.score(i, b)
            ok = costs.valid
            units.append(b.unit[b.rows][ok])
            counts.append([c[b.rows][ok] for c in b.counts])
            energy.append(costs.total[ok])
            elapsed.append(costs.time[ok])
        if not units or not sum(len(e) for e in energy):
            continue
        unit = np.concatenate(units)
        levels = [np.concatenate([c[lvl] for c in counts]) for lvl in range(len(counts[0]))]
        energy_, elapsed_ = np.concatenate(energy), np.concatenate(elapsed)
        rest = np.array(space.frames[i].rest, dtype=np.int64)
        for fixed in range(1, len(levels) + 1):
            top = np.concatenate(levels[len(levels) - fixed:], axis=1)
            groups, inv = np.unique(top, axis=0, return_inverse=True)
            inv = inv.reshape(-1)
            least_e = np.full(len(groups), np.inf)
            least_t = np.full(len(groups), np.inf)
            np.minimum.at(least_e, inv, energy_)
            np.minimum.at(least_t, inv, elapsed_)
            tops = [groups[:, k * 8:(k + 1) * 8] for k in range(fixed)]
            left = rest[None, :] // np.prod(np.stack(tops), axis=0)
            keys = space.partial_keys(i, tops, left)
            _, bound_t = partial_bounds(space.frames[i], hardware(arch), space.problem.fed, tops, left)
            assert np.all(keys[:, 1] <= least_e * TOLERANCE), (arch.name, layer, feed, space.frames[i].describe())
            assert np.all(bound_t <= least_t * TOLERANCE), (arch.name, layer, feed, space.frames[i].describe())
            if fixed == len(levels):  # every count fixed: the unit is what is left
                assert np.array_equal(left, unit[np.unique(inv, return_index=True)[1]])
            checked += len(groups)
    return checked


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LAYERS, st.integers(1, 2), st.sampled_from(NAMES), st.sampled_from(FEEDS),
       st.lists(st.integers(0, 1 << 16), min_size=1, max_size=2))
def test_no_valid_completion_of_a_partial_blocking_beats_its_bound(layer, batch, name, feed, picks):
    check_partial(layer, batch, small_hierarchy(name), feed, picks)


@pytest.mark.parametrize("name", ["multinode", "four_level.yaml", "simba"])
def test_partial_bounds_are_checked_somewhere(name):
    """The property above is not vacuous: a plain CONV has frames with valid blockings on each kind of hierarchy."""
    layer = Layer("c", Op.CONV, c=4, k=8, h=6, w=6, s=3, r=3)
    assert check_partial(layer, 2, small_hierarchy(name), FROM_DRAM, range(0, 400, 37)) > 0
