"""KAPLA's joint evaluation: several skeletons costed in one pass of the cost
model give every candidate exactly the numbers it gets alone, the descents
run side by side take the steps they take alone, and the grid form of the
analytic estimates reproduces the plain (skeleton x combination x dim) form
bit for bit."""

import itertools

import numpy as np
import pytest

from kapla.arch import load_arch
from kapla.dataflow.tensors import DIMS, RELEVANT, tensor_roles
from kapla.model.evaluate import Feed
from kapla.search.layer.kapla import classic as K
from kapla.space.layer.batch import joint_costs, joint_coverage, joint_scores
from kapla.space.layer.skeletons import BLOCK_DIMS
from kapla.workload.layer import Layer, Op, Phase

ARCHS = {
    "region2x2": load_arch("multinode").with_node_region(2, 2),
    "multinode_4x4": load_arch("multinode_4x4"),
    "edge": load_arch("edge"),
}
LAYERS = [
    Layer("conv", Op.CONV, c=32, k=64, h=28, w=28, s=3, r=3, pad=(1, 1, 1, 1)),
    Layer("strided", Op.CONV, c=24, k=48, h=30, w=30, s=5, r=5, stride=(2, 2), dilation=(2, 2)),
    Layer("fc", Op.FC, c=512, k=256, h=1, w=1),
    Layer("dw", Op.CONV, c=32, k=32, h=14, w=14, s=3, r=3, pad=(1, 1, 1, 1), groups=32),
    Layer("pool", Op.POOL, c=16, k=16, h=14, w=14, s=2, r=2, stride=(2, 2), mode="max"),
    Layer("add", Op.ELTWISE, c=32, k=32, h=14, w=14, mode="add", n_inputs=2),
    Layer("bwd", Op.CONV, c=32, k=32, h=14, w=14, s=3, r=3, pad=(1, 1, 1, 1), phase=Phase.BWD_DATA),
    Layer("wgrad", Op.CONV, c=32, k=32, h=14, w=14, s=3, r=3, pad=(1, 1, 1, 1), phase=Phase.WGRAD),
]
CASES = [(arch, layer) for arch in ARCHS for layer in LAYERS]
IDS = [f"{arch}-{layer.name}" for arch, layer in CASES]


def _spaces(layer, arch, count, objective="energy", feed=None, skels=None):
    """The blocking searches of ``count`` skeletons spread over the layer's skeletons."""
    skels = K._skeletons(layer, 4, arch) if skels is None else skels
    picks = [skels[i] for i in np.linspace(0, len(skels) - 1, min(count, len(skels))).astype(int)]
    cache = K._Run()
    spaces = [K._space(s, arch, objective, feed, cache) for s in dict.fromkeys(picks)]
    return [sp for sp in spaces if sp is not None and sp.dims and len(K._feasible_units(sp))]


def _requests(spaces, rng):
    """Random candidates of each space: register blocks, splits and orders."""
    out = []
    for sp in spaces:
        units = K._feasible_units(sp)
        units = units[rng.choice(len(units), size=min(len(units), 5), replace=False)]
        mids = np.array([[rng.choice([d for d in range(1, int(n) + 1) if n % d == 0]) for n in sp.rest // u]
                         for u in units], dtype=np.int64)
        tops = sp.rest[None, :] // (units * mids)
        rows = np.repeat(np.arange(len(units)), 3)
        nd = len(sp.dims)
        o1 = np.array([rng.permutation(nd) for _ in rows], dtype=np.int64).reshape(-1, nd)
        o2 = np.array([rng.permutation(nd) for _ in rows], dtype=np.int64).reshape(-1, nd)
        out.append((sp.ev, sp.dims, units, mids, tops, rows, o1, o2))
    return out


@pytest.mark.parametrize("objective, feed", [("energy", None), ("edp", Feed(ifm_hops=1.0, to_dram=False))],
                         ids=["energy", "edp-fed"])
@pytest.mark.parametrize("arch_name, layer", CASES[:: 3], ids=IDS[:: 3])
def test_joint_costs_equal_the_costs_of_each_skeleton_alone(arch_name, layer, objective, feed):
    arch = ARCHS[arch_name]
    spaces = _spaces(layer, arch, 6)
    requests = _requests(spaces, np.random.default_rng(1))
    together = joint_costs(requests, objective, feed)
    scores = joint_scores(requests, objective, feed)
    for req, res, (energy, value) in zip(requests, together, scores, strict=True):
        ev, dims, units, mids, tops, rows, o1, o2 = req
        alone = ev.costs(units, mids, tops, o1, o2, objective, dims, rows, feed)
        for field in ("energy", "time", "objective", "noc_hops", "compute_time", "bus_time", "dram_time",
                      "regf_words", "gbuf_words", "valid"):
            assert np.array_equal(getattr(res, field), getattr(alone, field)), field
        for name, words in alone.accesses.items():
            assert np.array_equal(res.accesses[name], words), name
        assert np.array_equal(energy, alone.energy) and np.array_equal(value, alone.objective)
        assert res.blocking(res.best()) == alone.blocking(alone.best())


@pytest.mark.parametrize("arch_name, layer", CASES[1:: 3], ids=IDS[1:: 3])
def test_joint_coverage_equals_each_evaluators_own(arch_name, layer):
    arch = ARCHS[arch_name]
    spaces = _spaces(layer, arch, 8)
    items, expected = [], []
    for sp in spaces:
        ev = sp.ev
        units = K._feasible_units(sp)
        u = ev.full_factors(sp.dims, units)
        left = ev.full_factors(sp.dims, sp.rest[None, :] // units)
        ones = np.ones_like(u)
        for a, t in ((ones, left), (left, ones)):
            items.append((ev, u, a, t) if len(items) % 2 else (ev, u, a, t, ev.dim_cols(sp.dims)))
            expected.append(ev.coverage_ok(u, a, t))
    assert np.array_equal(joint_coverage(items), np.concatenate(expected))
    # and the solver's many-skeleton check equals its one-skeleton check
    many = K._coverable_many([(sp, K._feasible_units(sp)) for sp in spaces])
    for sp, ok in zip(spaces, many, strict=True):
        units = K._feasible_units(sp)
        ev = sp.ev
        u = ev.full_factors(sp.dims, units)
        left = ev.full_factors(sp.dims, sp.rest[None, :] // units)
        ones = np.ones_like(u)
        assert np.array_equal(ok, ev.coverage_ok(u, ones, left) | ev.coverage_ok(u, left, ones))


@pytest.mark.parametrize("objective", ["energy", "latency"])
@pytest.mark.parametrize("arch_name, layer", CASES[2:: 4], ids=IDS[2:: 4])
def test_descents_side_by_side_take_the_steps_they_take_alone(arch_name, layer, objective):
    arch = ARCHS[arch_name]
    skels = K._skeletons(layer, 4, arch)
    ranked, blocks = K._rank(skels, arch, 30, 12)
    heads = ranked[:5]
    together = K._descend_all([(s, blocks.get(id(s))) for s in heads], arch, objective, None, 3)
    for skel, res in zip(heads, together, strict=True):
        alone = K._descend(skel, arch, objective, None, 3, blocks.get(id(skel)))
        assert res == alone


# ---------------------------------------------------------------- estimates, in their plain form


def _family_counts(arr, T, varying):
    S, nd = arr.rest.shape
    outer = [j for j in varying if BLOCK_DIMS[j] in RELEVANT[T]]
    inner = [j for j in varying if BLOCK_DIMS[j] not in RELEVANT[T]]
    combos = np.array(list(itertools.product(range(len(K._SPLITS)), repeat=len(outer))),
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
        outer, inner, t = _family_counts(arr, T, varying)
        C = t.shape[1]
        block = np.repeat(arr.mu[:, None, :], C, axis=1)
        for j in range(nd):
            block[:, :, K._BIDX[j]] *= rest[:, None, j] // t[:, :, j]
        c0 = np.minimum(block, full)
        g0 = np.minimum(c0 * arr.s0[:, None, :], full)
        fp_c, fp_g = K._footprints(c0, layer), K._footprints(g0, layer)
        words = sum(fp_c[r.kind] * r.copies for r in roles)
        order_counts = [t[:, :, j] for j in outer + inner] + [np.broadcast_to(arr.in0[:, None, i], (S, C))
                                                             for i in in_dims]
        order_dims = [BLOCK_DIMS[j] for j in outer + inner] + [DIMS[i] for i in in_dims]
        tt = np.stack(order_counts, axis=2) if order_counts else np.ones((S, C, 0), dtype=np.int64)
        cum = np.cumprod(tt, axis=2)
        energy = np.zeros((S, C))
        for r in roles:
            rel = np.array([d in RELEVANT[r.kind] for d in order_dims], dtype=bool)
            distinct = np.prod(np.where(rel[None, None, :], tt, 1), axis=2)
            energy = energy + K.regf_role_energy(r, fp_g[r.kind], fp_c[r.kind], _reloads(tt, cum, rel), distinct,
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
        outer, inner, t = _family_counts(arr, T, varying)
        C = t.shape[1]
        m_factor = np.ones((S, C, len(DIMS)), dtype=np.int64)
        for j in range(nd):
            m_factor[:, :, K._BIDX[j]] = rest[:, None, j] // t[:, :, j]
        c1 = np.minimum(base[:, None, :] * m_factor, full)
        g1 = np.minimum(c1 * s1[:, None, :], full)
        fps_c, fps_g = K._footprints(c1, layer), K._footprints(g1, layer)
        words = np.zeros((S, C))
        for r in roles:
            words += -(-fps_c[r.kind] // shr[r.kind][:, None]) * r.copies
        order = outer + inner
        tt = t[:, :, order]
        cum = np.cumprod(tt, axis=2)
        dram, noc, rot = np.zeros((S, C)), np.zeros((S, C)), np.zeros((S, C))
        for r in roles:
            rel = np.array([BLOCK_DIMS[j] in RELEVANT[r.kind] for j in order], dtype=bool)
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


@pytest.mark.parametrize("arch_name, layer", CASES, ids=IDS)
def test_the_grid_estimates_equal_their_plain_form_bit_for_bit(arch_name, layer):
    arch = ARCHS[arch_name]
    skels = K._skeletons(layer, 4, arch)
    arr = K._arrays(skels, arch)
    assert np.array_equal(K._regf_estimates(arr, arch), _plain_regf(arr, arch))
    assert np.array_equal(K._dram_estimates(arr, arch), _plain_dram(arr, arch))
    # one row per register block, as the refinement costs them
    spaces = _spaces(layer, arch, 4, skels=skels)
    if spaces:
        index = {id(s): i for i, s in enumerate(skels)}
        units = [K._feasible_units(sp) for sp in spaces]
        rows = arr.take(np.repeat([index[id(sp.skel)] for sp in spaces], [len(u) for u in units]))
        factors = [K._block_factors(sp.dims, u) for sp, u in zip(spaces, units, strict=True)]
        whole = K._unit_arrays(rows, np.concatenate(factors))
        assert np.array_equal(K._dram_estimates(whole, arch), _plain_dram(whole, arch))
