"""KAPLA's analytic estimates of frames: their grid form reproduces the plain
(frame x combination x dim) form bit for bit, every frame gets one, and they
rank a DRAM-bound layer's frames so that the descent finds its optimum."""

import itertools

import numpy as np
import pytest

from kapla.arch import load_arch
from kapla.dataflow.tensors import DIMS, RELEVANT, tensor_roles
from kapla.search.layer.kapla import estimates as E
from kapla.space.layer.frames import FrameEvaluator, frames, split_rows
from kapla.workload.layer import Layer, Op, Phase

ARCHS = {
    "region2x2": load_arch("multinode").with_node_region(2, 2),
    "multinode_4x4": load_arch("multinode_4x4"),
    "edge": load_arch("edge"),
}
LAYERS = [
    Layer("conv", Op.CONV, c=32, k=64, h=28, w=28, s=3, r=3, pad=(1, 1, 1, 1)),
    Layer("strided", Op.CONV, c=24, k=48, h=30, w=30, s=5, r=5, stride=(2, 2), dilation=(2, 2)),
    Layer("wide", Op.CONV, c=16, k=32, h=17, w=17, s=1, r=7, pad=(0, 3, 0, 3)),  # Inception-v3's 1x7
    Layer("tall", Op.CONV, c=16, k=32, h=17, w=17, s=7, r=1, pad=(3, 0, 3, 0)),
    Layer("fc", Op.FC, c=512, k=256, h=1, w=1),
    Layer("dw", Op.CONV, c=32, k=32, h=14, w=14, s=3, r=3, pad=(1, 1, 1, 1), groups=32),
    Layer("pool", Op.POOL, c=16, k=16, h=14, w=14, s=2, r=2, stride=(2, 2), mode="max"),
    Layer("add", Op.ELTWISE, c=32, k=32, h=14, w=14, mode="add", n_inputs=2),
    Layer("bwd", Op.CONV, c=32, k=32, h=14, w=14, s=3, r=3, pad=(1, 1, 1, 1), phase=Phase.BWD_DATA),
    Layer("wgrad", Op.CONV, c=32, k=32, h=14, w=14, s=3, r=3, pad=(1, 1, 1, 1), phase=Phase.WGRAD),
]
CASES = [(arch, layer) for arch in ARCHS for layer in LAYERS]
IDS = [f"{arch}-{layer.name}" for arch, layer in CASES]


def _family_counts(arr, T, varying, held=(), looped=()):
    # held dims do not loop (count 1), looped ones loop over all that is left, never split
    S, nd = arr.rest.shape
    outer = [j for j in varying if DIMS[j] in RELEVANT[T] and j not in held + looped]
    inner = [j for j in varying if (DIMS[j] not in RELEVANT[T] or j in looped) and j not in held]
    combos = np.array(list(itertools.product(range(len(E._SPLITS)), repeat=len(outer))),
                      dtype=np.int64).reshape(-1, len(outer))
    t = np.ones((S, len(combos), nd), dtype=np.int64)
    for jj, j in enumerate(outer):
        t[:, :, j] = arr.choices[:, j, :][:, combos[:, jj]]
    for j in inner:
        t[:, :, j] = arr.rest[:, None, j]
    return outer, inner, t


def _reloads(counts, cum, relevant):
    S, C, L = counts.shape
    if not L:
        return np.ones((S, C), dtype=np.int64)
    looping = (counts > 1) & relevant[None, None, :]
    pos = np.where(looping, np.arange(L)[None, None, :], -1).max(axis=2)
    return np.where(pos >= 0, np.take_along_axis(cum, np.maximum(pos, 0)[:, :, None], axis=2)[:, :, 0], 1)


def _plain_regf(arr, arch):
    layer, roles = arr.layer, tensor_roles(arr.layer)
    S, nd = arr.rest.shape
    full, rest = arr.full, arr.rest
    cap = arch.levels[0].capacity // arch.word_bytes
    in_dims = [i for i in range(len(DIMS)) if np.any(arr.in0[:, i] > 1)]
    best = np.full(S, np.inf)
    varying = [j for j in range(nd) if np.any(rest[:, j] > 1)]
    for T in dict.fromkeys(r.kind for r in roles):
        outer, inner, t = _family_counts(arr, T, varying, looped=E._FILTER)
        C = t.shape[1]
        block = np.repeat(arr.mu[:, None, :], C, axis=1)
        for j in range(nd):
            block[:, :, j] *= rest[:, None, j] // t[:, :, j]
        c0 = np.minimum(block, full)
        g0 = np.minimum(c0 * arr.s0[:, None, :], full)
        fp_c, fp_g = E.footprints(c0, layer), E.footprints(g0, layer)
        words = sum(fp_c[r.kind] * r.copies for r in roles)
        order_counts = [t[:, :, j] for j in outer + inner] + [np.broadcast_to(arr.in0[:, None, i], (S, C))
                                                             for i in in_dims]
        order_dims = [DIMS[j] for j in outer + inner] + [DIMS[i] for i in in_dims]
        tt = np.stack(order_counts, axis=2) if order_counts else np.ones((S, C, 0), dtype=np.int64)
        cum = np.cumprod(tt, axis=2)
        energy = np.zeros((S, C))
        for r in roles:
            rel = np.array([d in RELEVANT[r.kind] for d in order_dims], dtype=bool)
            distinct = np.prod(np.where(rel[None, None, :], tt, 1), axis=2)
            energy = energy + E._role_energy(r, fp_g[r.kind], fp_c[r.kind], _reloads(tt, cum, rel), distinct,
                                                 arr.nodes[:, None], (arr.nodes * arr.pes)[:, None], arch)
        energy = np.where(words <= cap, energy, np.inf)
        best = np.minimum(best, energy.min(axis=1))
    return best


def _plain_dram(arr, arch):
    """``_dram_estimates`` without ``once``."""
    layer, roles = arr.layer, tensor_roles(arr.layer)
    S, nd = arr.rest.shape
    full, rest, s1, shr, dist, nodes, trips = (arr.full, arr.rest, arr.s1, arr.shr, arr.dist, arr.nodes,
                                               arr.trips)
    base = arr.mu * arr.s0 * arr.in0
    cap = arch.levels[1].capacity // arch.word_bytes
    best = np.full(S, np.inf)
    varying = [j for j in range(nd) if np.any(rest[:, j] > 1)]
    for T in dict.fromkeys(r.kind for r in roles):
        outer, inner, t = _family_counts(arr, T, varying, held=E._FILTER)
        C = t.shape[1]
        m_factor = np.ones((S, C, len(DIMS)), dtype=np.int64)
        for j in range(nd):
            m_factor[:, :, j] = rest[:, None, j] // t[:, :, j]
        c1 = np.minimum(base[:, None, :] * m_factor, full)
        g1 = np.minimum(c1 * s1[:, None, :], full)
        fps_c, fps_g = E.footprints(c1, layer), E.footprints(g1, layer)
        words = np.zeros((S, C))
        for r in roles:
            words += -(-fps_c[r.kind] // shr[r.kind][:, None]) * r.copies
        order = outer + inner
        tt = t[:, :, order]
        cum = np.cumprod(tt, axis=2)
        dram, noc, rot = np.zeros((S, C)), np.zeros((S, C)), np.zeros((S, C))
        for r in roles:
            rel = np.array([DIMS[j] in RELEVANT[r.kind] for j in order], dtype=bool)
            reload = _reloads(tt, cum, rel)
            distinct = np.prod(np.where(rel[None, None, :], tt, 1), axis=2)
            group_words = fps_g[r.kind] * reload * r.copies
            node_words = fps_c[r.kind] * reload * r.copies * nodes[:, None]
            if r.written:
                first = fps_g[r.kind] * distinct * r.copies
                dram += 2 * group_words - first
                noc += (2 * group_words - first) * dist[:, None]
            else:
                k_shr = shr[r.kind][:, None]
                dram += group_words
                noc += node_words / k_shr * dist[:, None]
                rot += node_words * (k_shr - 1) / k_shr
        energy = (dram * arch.levels[-1].access_energy + (noc + rot) * arch.hop_energy
                  + 2 * rot * arch.levels[1].access_energy
                  + np.maximum(dram / arch.dram_bandwidth_words - trips[:, None], 0) * arch.static_energy)
        best = np.minimum(best, np.where(words <= cap, energy, np.inf).min(axis=1))
    finite = np.isfinite(best)
    if not finite.all():
        best = np.where(finite, best, (best[finite].max() if finite.any() else 0.0) * 4 + 1.0)
    return best


@pytest.mark.parametrize("relax", [False, True], ids=["template", "relaxed"])
@pytest.mark.parametrize("merged", [True, False], ids=["patterns-merged", "pattern-by-pattern"])
@pytest.mark.parametrize("arch_name, layer", CASES, ids=IDS)
def test_the_grid_estimates_equal_their_plain_form_bit_for_bit(arch_name, layer, merged, relax, monkeypatch):
    # rows looping over different dims: costed in one grid over all of them, or a grid per pattern;
    # relaxed mappings leave filter rows and columns to blocking
    monkeypatch.setattr(E, "_MERGED_GRID", 1 << 40 if merged else 0)
    arch = ARCHS[arch_name]
    found = frames(layer, 4, arch, relax=relax)
    arr = E.frame_arrays(found, arch)
    assert np.array_equal(E.regf(arr, arch), _plain_regf(arr, arch))
    assert np.array_equal(E.dram(arr, arch), _plain_dram(arr, arch))
    # one row per register block, as the ranking costs them
    picks = np.linspace(0, len(found) - 1, min(4, len(found))).astype(int)
    units = []
    for i in picks:
        ev = FrameEvaluator(found[i], arch)
        rest = np.array(found[i].rest, dtype=np.int64)[None, :]
        _, u = split_rows(rest, found[i].dims)
        units.append(u[ev.fits_above(0, u, ())])
    whole = arr.take(np.repeat(picks, [len(u) for u in units])).with_units(np.concatenate(units))
    assert np.array_equal(E.dram(whole, arch), _plain_dram(whole, arch))


@pytest.mark.parametrize("layer", [LAYERS[0], LAYERS[2]], ids=["conv", "wide"])
def test_the_register_estimate_equals_its_plain_form_where_a_mapping_leaves_one_filter_dim(layer):
    # the four-level example's relaxed mappings leave filter columns, not rows, to blocking (or the
    # reverse): each filter dim's block is picked on its own
    arch = _four_level()
    arr = E.frame_arrays(frames(layer, 4, arch, relax=True), arch)
    uneven = (arr.rest[:, 6] > 1) != (arr.rest[:, 7] > 1)
    assert uneven.any()
    assert np.array_equal(E.regf(arr, arch), _plain_regf(arr, arch))


@pytest.mark.parametrize("arch_name", ["multinode_4x4", "edge", "four_level", "simba"])
def test_every_frame_gets_a_finite_positive_estimate(arch_name):
    arch = load_arch(arch_name) if arch_name != "four_level" else _four_level()
    for layer in LAYERS:
        found = frames(layer, 2, arch)
        if not found:
            continue
        values = E.estimates(E.frame_arrays(found, arch), arch)
        assert values.shape == (len(found),)
        assert np.all(np.isfinite(values)) and np.all(values > 0)


def test_only_the_classic_hierarchy_is_seen_whole():
    assert E.faithful(load_arch("multinode")) and E.faithful(load_arch("edge"))
    assert not E.faithful(load_arch("simba")) and not E.faithful(_four_level())


def _four_level():
    from pathlib import Path

    from kapla.arch import load_arch as load

    return load(str(Path(__file__).resolve().parents[4] / "examples" / "four_level.yaml"))


@pytest.mark.parametrize("arch_name, layer", CASES, ids=IDS)
def test_fetching_once_bounds_the_dram_estimate_and_a_subset_is_estimated_alike(arch_name, layer):
    """The ranking computes the DRAM estimate only for the frames whose bound
    (fetching every tensor once) could place them among the best: that needs
    the bound below every estimate, and a frame's estimate the same whatever
    other frames it is computed with."""
    arch = ARCHS[arch_name]
    found = frames(layer, 4, arch)
    arr = E.frame_arrays(found, arch)
    whole = E.dram(arr, arch, unfit=np.inf)
    once = E.fetch_once(arr, arch)
    fits = np.isfinite(whole)
    assert np.all(once[fits] <= whole[fits])
    rng = np.random.default_rng(len(found))
    for _ in range(3):
        some = np.sort(rng.choice(len(found), size=max(1, len(found) // 3), replace=False))
        assert np.array_equal(E.dram(arr.take(some), arch, unfit=np.inf), whole[some])


@pytest.mark.parametrize("arch_name, layer", CASES, ids=IDS)
def test_the_ranking_picks_the_best_frames_a_full_sort_would(arch_name, layer):
    from kapla.search.layer.kapla.levels import _Estimates

    arch = ARCHS[arch_name]
    found = frames(layer, 4, arch)
    arr = E.frame_arrays(found, arch)
    on, d = E.on_chip(arr, arch), E.dram(arr, arch, unfit=np.inf)
    fits = np.isfinite(d)
    # the order the pruned ranking must give: frames that fit first, by estimate, ties by index
    full = np.lexsort((np.arange(len(found)), np.where(fits, on + np.where(fits, d, 0), on), ~fits))
    rng = np.random.default_rng(7)
    for k in (1, 3, 30, len(found)):
        est = _Estimates(arr, arch)
        assert est.least(np.arange(len(found)), k, est.on).tolist() == full[:k].tolist()
        pool = np.sort(rng.choice(len(found), size=max(1, len(found) // 2), replace=False))
        want = [i for i in full.tolist() if i in set(pool.tolist())][:k]
        assert _Estimates(arr, arch).least(pool, k, est.on).tolist() == want


@pytest.mark.parametrize("arch_name", ["region2x2", "multinode_4x4", "edge", "four_level", "simba"])
def test_the_register_floor_bounds_the_register_estimate_and_a_subset_is_estimated_alike(arch_name):
    """The ranking by the register-aware estimate works it out only for the
    frames its floor (each tensor over the array bus and out of the node
    buffer once) leaves a chance: the floor must lie below every estimate,
    and a frame's estimate be the same whatever frames it is worked out with."""
    arch = ARCHS.get(arch_name) or (_four_level() if arch_name == "four_level" else load_arch(arch_name))
    for layer in LAYERS:
        found = frames(layer, 4, arch)
        if not found:
            continue
        arr = E.frame_arrays(found, arch)
        whole = E.regf(arr, arch)
        floor = E.regf_floor(arr, arch)
        fits = np.isfinite(whole)
        assert np.all(floor >= 0) and np.all(floor[fits] <= whole[fits]), layer.name
        one, kind = E.regf_rows(arr)
        assert np.array_equal(E.regf(arr.take(one), arch)[kind], whole)
        some = np.sort(np.random.default_rng(len(found)).choice(len(found), size=max(1, len(found) // 3),
                                                                 replace=False))
        assert np.array_equal(E.regf(arr.take(some), arch), whole[some])


@pytest.mark.parametrize("arch_name, layer", CASES, ids=IDS)
def test_the_lazy_ranking_picks_the_frames_a_full_sort_would(arch_name, layer):
    # both terms worked out only where a frame may be among the best: the same frames, in the same order
    from kapla.search.layer.kapla.levels import _Estimates

    arch = ARCHS[arch_name]
    found = frames(layer, 4, arch)
    arr = E.frame_arrays(found, arch)
    base = arr.trips * arch.static_energy + E.regf(arr, arch)
    d = E.dram(arr, arch, unfit=np.inf)
    fits = np.isfinite(d)
    full = np.lexsort((np.arange(len(found)), np.where(fits, base + np.where(fits, d, 0), base), ~fits))
    floor = arr.trips * arch.static_energy + E.regf_floor(arr, arch)
    for k in (1, 3, 12, len(found)):
        lazy = np.full(len(found), np.nan)
        asked: list[int] = []

        def fill(idx, lazy=lazy, asked=asked):
            asked.extend(idx.tolist())
            lazy[idx] = base[idx]

        got = _Estimates(arr, arch).least(np.arange(len(found)), k, lazy, floor, fill)
        assert got.tolist() == full[:k].tolist()
        assert len(asked) == len(set(asked))  # each frame's base worked out once at most


@pytest.mark.parametrize("arch_name", ["region2x2", "edge", "four_level"])
def test_each_frames_row_holds_its_own_choices_factors(arch_name):
    """frame_arrays multiplies every level's choices in at once: each frame's row
    has the factors of its own stacks and fixed loops, frame by frame."""
    arch = ARCHS[arch_name] if arch_name in ARCHS else _four_level()
    for layer in LAYERS:
        found = frames(layer, 4, arch)
        arr = E.frame_arrays(found, arch)
        node = len(found[0].spatial) - 1 if len(found[0].spatial) >= 2 else None
        for i, f in enumerate(found):
            s0, s1, in0 = np.ones(len(DIMS), np.int64), np.ones(len(DIMS), np.int64), np.ones(len(DIMS), np.int64)
            for level, sp in enumerate(f.spatial):
                for st in sp.stacks:
                    (s1 if level == node else s0)[DIMS.index(st.dim)] *= st.rows * st.cols
                if level != node:
                    for lp in sp.inner:
                        in0[DIMS.index(lp.dim)] *= lp.count
            assert np.array_equal(arr.s0[i], s0) and np.array_equal(arr.s1[i], s1)
            assert np.array_equal(arr.in0[i], in0) and np.array_equal(arr.mu[i], f.spatial[0].unit_row)
