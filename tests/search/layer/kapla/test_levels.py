"""The any-depth descent's refinement neighbourhoods (kapla.search.layer.kapla.levels)."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.search.layer.kapla import levels
from kapla.space.layer.frames import factor_combos
from kapla.space.layer.layer_space import LayerSpace
from kapla.space.problem import Problem
from kapla.workload.layer import Layer, Op

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"
ND = 8


@pytest.mark.parametrize("design", ["four_level_pe_buffer", "four_level_l2", "eyeriss_lbuf", "simba", "multinode"])
def test_three_level_splits_keep_each_dims_product_and_fit(design):
    """Every candidate of ``_resplits`` moves factors only among three adjacent
    loop levels (their product per dim, and every other slot, unchanged),
    fits every buffer, and keeps the point's orders; hierarchies with fewer
    than three loop levels get none."""
    path = EXAMPLES / f"{design}.yaml"
    arch = load_arch(str(path) if path.exists() else design)
    layer = Layer("pw", Op.CONV, c=64, k=128, h=14, w=14, s=1, r=1)
    space = LayerSpace(Problem(layer, 1, arch))
    rng = np.random.default_rng(0)
    checked = 0
    for frame in range(min(len(space), 6)):
        ev = space.evaluator(frame)
        units, counts = factor_combos(ev)
        for row in rng.choice(len(units), size=min(len(units), 5), replace=False):
            orders = tuple(np.arange(ND, dtype=np.int64) for _ in range(ev.levels))
            point = levels._Point(units[row], tuple(c[row] for c in counts), orders)
            nb = levels._resplits(ev, point)
            checked += 1
            if ev.levels < 3:
                assert nb is None
                continue
            assert nb is not None
            slots = np.stack([point.unit, *point.counts])
            cand = np.stack([nb.unit, *nb.counts], axis=1)
            assert any((c == slots).all() for c in cand)  # the point itself is one of its splits
            fits = np.ones(len(cand), dtype=bool)
            for level in range(ev.levels):
                fits &= ev.fits(level, ev.block(level, cand[:, 0], [cand[:, j + 1] for j in range(level)]))
            assert fits.all()
            for c in cand:
                trios = [[a, a + 1, a + 2] for a in range(1, ev.levels - 1)]
                moved = [t for t in trios
                         if (np.delete(c, t, axis=0) == np.delete(slots, t, axis=0)).all()
                         and (c[t].prod(axis=0) == slots[t].prod(axis=0)).all()]
                assert moved
            for m in range(ev.levels):
                assert (nb.orders[m] == orders[m]).all()
    assert checked


def _every_block_worked_out(space, frames, arr, beam):
    """``levels._register_blocks`` as it was before the DRAM estimate became lazy:
    every block's re-fetch worked out, then the first ``beam`` coverable by value."""
    from kapla.search.layer.kapla import estimates

    calls = []
    real = levels._with_dram_extra

    def eager(items, energies, rows, arch, k):
        calls.append(1)
        values = []
        for f, energy in enumerate(energies):
            whole = rows.take(np.full(len(energy), f, dtype=np.int64)).with_units(items[f][1])
            extra = estimates.dram(whole, arch, once=True, unfit=np.inf)
            fit = np.isfinite(extra)
            # unfit blocks last, among them by energy (as the lazy version orders them)
            values.append(np.where(fit, energy + np.where(fit, extra, 0.0), energy + 1e3))
        keep = levels._coverable_first([(ev, units, b, np.argsort(v, kind="stable"))
                                        for (ev, units, b), v in zip(items, values, strict=True)], k)
        return keep, values

    levels._with_dram_extra = eager
    try:
        return levels._register_blocks(space, frames, arr, beam), calls
    finally:
        levels._with_dram_extra = real


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(c=st.sampled_from([3, 16, 48, 96]), k=st.sampled_from([8, 32, 64, 128]), hw=st.sampled_from([7, 13, 28]),
       r=st.sampled_from([1, 3, 5]), batch=st.sampled_from([1, 4, 16]),
       design=st.sampled_from(["multinode", "eyeriss", "edge", "simba", "four_level"]),
       beam=st.integers(1, 4), first_rows=st.sampled_from([0, 64, 10_000]))
def test_register_blocks_worked_out_lazily_are_those_of_working_out_all(c, k, hw, r, batch, design, beam,
                                                                          first_rows, monkeypatch):
    """The register blocks ranked with the DRAM re-fetch worked out only for the
    blocks cheapest by energy are the blocks, in the order, of working it out for
    every block: random layers, hardware and beams, whatever the first batch of
    blocks worked out (none beyond the per-frame minimum, or every block)."""
    from kapla.search.layer.kapla.estimates import frame_arrays

    monkeypatch.setattr(levels, "_FIRST_ROWS", first_rows)  # (each example sets its own)

    path = EXAMPLES / f"{design}.yaml"
    arch = load_arch(str(path) if path.exists() else design)
    layer = Layer("l", Op.CONV, c=c, k=k, h=hw, w=hw, s=r, r=r)
    space = LayerSpace(Problem(layer, batch, arch))
    if not len(space) or len(arch.levels) < 3:
        return
    arr = frame_arrays(space.frames, arch)
    frames = list(range(0, len(space), max(1, len(space) // 12)))
    lazy_blocks, lazy_best, _ = levels._register_blocks(space, frames, arr, beam)
    (eager_blocks, eager_best, _), calls = _every_block_worked_out(space, frames, arr, beam)
    assert calls
    assert lazy_blocks.keys() == eager_blocks.keys()
    for i, states in lazy_blocks.items():
        assert [s.unit.tolist() for s in states] == [s.unit.tolist() for s in eager_blocks[i]]
    fit = np.isfinite(lazy_best) & (eager_best < 1e2)
    np.testing.assert_allclose(lazy_best[fit], eager_best[fit], rtol=1e-12)


def test_the_coarse_grid_takes_one_all_and_the_divisors_nearest_the_cube_root_and_its_square():
    # 64: cube root 4, its square 16; 224: cube root ~6.07 -> 7, its square ~36.9 -> 32
    whole = np.ones((1, ND), dtype=np.int64)
    whole[0, 0], whole[0, 4] = 64, 224
    from kapla.space.layer.frames import split_rows

    _, taken = split_rows(whole, (0, 4))
    keep = levels._coarse(taken, np.repeat(whole, len(taken), axis=0), (0, 4))
    got = {(int(t[0]), int(t[4])) for t in taken[keep]}
    assert got == {(a, b) for a in (1, 4, 16, 64) for b in (1, 7, 32, 224)}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(c=st.sampled_from([3, 16, 96]), k=st.sampled_from([8, 64, 128]), hw=st.sampled_from([7, 28]),
       r=st.sampled_from([1, 3]), batch=st.sampled_from([1, 16]),
       design=st.sampled_from(["multinode", "edge", "simba", "four_level"]), beam=st.integers(1, 4),
       seed=st.integers(0, 2**16))
def test_register_blocks_of_a_frame_do_not_depend_on_what_was_asked_before(c, k, hw, r, batch, design, beam, seed):
    """A space keeps each frame's register blocks and their energies once worked
    out: asked after other frames, in other groups, with and without the
    estimates' rows, a frame gets the blocks and estimate of a fresh space."""
    from kapla.search.layer.kapla.estimates import frame_arrays

    path = EXAMPLES / f"{design}.yaml"
    arch = load_arch(str(path) if path.exists() else design)
    layer = Layer("l", Op.CONV, c=c, k=k, h=hw, w=hw, s=r, r=r)
    problem = Problem(layer, batch, arch)
    warm = LayerSpace(problem)
    if not len(warm):
        return
    arr = frame_arrays(warm.frames, arch)
    rng = np.random.default_rng(seed)
    frames = rng.choice(len(warm), size=min(len(warm), 6), replace=False).tolist()
    levels._register_blocks(warm, frames[::2], None, beam + 1)
    levels._register_blocks(warm, frames[1:], arr, beam)
    for rows in (arr, None):
        got_blocks, got_best, _ = levels._register_blocks(warm, frames, rows, beam)
        want_blocks, want_best, count = levels._register_blocks(LayerSpace(problem), frames, rows, beam)
        assert count  # the fresh space costed them
        assert got_blocks.keys() == want_blocks.keys()
        for i, states in want_blocks.items():
            assert [(s.unit.tolist(), s.left.tolist()) for s in got_blocks[i]] == \
                [(s.unit.tolist(), s.left.tolist()) for s in states]
        np.testing.assert_array_equal(got_best, want_best)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(op=st.sampled_from(["conv", "dw", "pool", "eltwise", "fc"]), c=st.sampled_from([3, 32, 96]),
       hw=st.sampled_from([7, 14, 56]), batch=st.sampled_from([1, 4]),
       design=st.sampled_from(["edge", "four_level_pe_buffer", "interstellar_two_level_rf"]))
def test_a_frame_alone_is_solved_as_when_ranked(op, c, hw, batch, design, monkeypatch):
    """On a one-node chip a layer has a single frame: it is descended without its
    estimates worked out (no DRAM estimate of it), and the schemes are those of
    ranking it first (random layers of each kind, every objective)."""
    from kapla.search.layer.kapla.solver import KaplaIntraSolver

    layer = {"conv": lambda: Layer("l", Op.CONV, c=c, k=2 * c, h=hw, w=hw, s=3, r=3),
             "dw": lambda: Layer("l", Op.CONV, c=c, k=c, h=hw, w=hw, s=3, r=3, groups=c),
             "pool": lambda: Layer("l", Op.POOL, c=c, k=c, h=hw, w=hw, s=2, r=2, stride=(2, 2), mode="max"),
             "eltwise": lambda: Layer("l", Op.ELTWISE, c=c, k=c, h=hw, w=hw, mode="add", n_inputs=2),
             "fc": lambda: Layer("l", Op.FC, c * hw, 4 * c, 1, 1)}[op]()
    path = EXAMPLES / f"{design}.yaml"
    problem = Problem(layer, batch, load_arch(str(path) if path.exists() else design))
    if len(LayerSpace(problem)) != 1:
        return
    objectives = ("energy", "latency", "edp")
    ranked = []
    real = levels._Estimates._compute

    def computed(self, idx):
        ranked.append(len(idx))
        real(self, idx)

    # (a context per example: hypothesis runs them all in one test call)
    with monkeypatch.context() as m:
        m.setattr(levels._Estimates, "_compute", computed)
        alone = KaplaIntraSolver().schemes_each(problem, objectives)
        assert not ranked
        m.setattr(levels, "_ALONE_UNRANKED", False)
        first = KaplaIntraSolver().schemes_each(problem, objectives)
        assert ranked  # the ranking did work its estimate out
    assert [s for s, _, _ in alone] == [s for s, _, _ in first]
    assert all(s is not None for s, _, _ in alone)


@given(st.lists(st.lists(st.integers(1, 6), min_size=6, max_size=6), max_size=40))
def test_distinct_rows_are_those_of_numpy_unique(rows):
    """The refinement's candidates are deduplicated in np.unique's order (its ties go to the first)."""
    cand = np.array(rows, dtype=np.int64).reshape(len(rows), 2, 3)
    assert np.array_equal(levels._distinct(cand), np.unique(cand, axis=0))


def test_register_blocks_of_many_frames_get_each_innermost_loop_at_level_0():
    # every frame's rows laid out at once: each row's candidates are its innermost
    # orders (one per looping dim, in order), the rows of each frame in turn
    from kapla.search.layer.kapla.levels import _unit_blockings
    from kapla.space.layer.skeletons import innermost_orders

    rng = np.random.default_rng(3)
    frames = []
    for k in (1, 5, 17, 0, 3):
        units = rng.integers(1, 4, (k, 8))
        frames.append((units, rng.choice([1, 1, 2, 3, 7], (k, 8))))
    for n in (2, 3):
        out = _unit_blockings(frames, n)
        assert len(out) == len(frames)
        for (units, lefts), b in zip(frames, out, strict=True):
            assert b.unit is units and len(b.counts) == n and np.array_equal(b.counts[0], lefts)
            want = [(r, tuple(o)) for r in range(len(units)) for o in innermost_orders(lefts[r], 8)]
            assert [(int(r), tuple(o)) for r, o in zip(b.rows, b.orders[0], strict=True)] == want
            assert all((o == np.arange(8)).all() for lvl in b.orders[1:] for o in lvl)
