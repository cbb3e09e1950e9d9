"""The intra-layer space over any memory hierarchy: the exhaustive solver and
KAPLA are checked by brute force (every frame, every factor split, every loop
order at every level) on tiny layers on 1-, 2-, 3- and 4-level hierarchies and
on per-tensor buffers."""

import itertools
import math

import numpy as np
import pytest

import kapla
from kapla.arch import load_arch, parse_arch
from kapla.dataflow.tensors import DIMS
from kapla.model import evaluate
from kapla.search.layer.exhaustive.solver import ExhaustiveIntraSolver
from kapla.space.layer.frames import Blockings, FrameEvaluator, frames
from kapla.workload.layer import Layer, Op
from kapla.workload.zoo.transformers import Config, decoder

ND = len(DIMS)


def level(name, capacity, array=(1, 1), access=1.0, **extra):
    return {"name": name, "capacity": capacity, "access_pj": access, "array": list(array), **extra}


def spec(name, levels, pe_mapping="free", **extra):
    return parse_arch({
        "name": name, "word_bits": 16, "clock_mhz": 500,
        "levels": levels + [{"name": "DRAM", "access_pj": 200.0, "bandwidth": 8.0}],
        "array_bus": {"width_bits": 64, "access_pj": 0.5}, "mac_pj": 1.0, "hop_pj": 2.0, "static_pj": 10.0,
        "pe_mapping": pe_mapping, **extra})


HIERARCHIES = {
    "1-level": spec("one", [level("REGF", 16, (2, 1), 0.1)]),
    "2-level": spec("two", [level("REGF", 8, (2, 1), 0.1), level("GBUF", 64, access=3.0)], pe_mapping="C|K"),
    "3-level": spec("three", [level("REGF", 8, (2, 1), 0.1), level("LBUF", 32, access=1.0),
                              level("GBUF", 128, (2, 1), 4.0, same_level_transfer=True)],
                    options={"buffer_sharing": True}),
    "4-level": spec("four", [level("REGF", 8, (1, 2), 0.1), level("ABUF", 16, (1, 1), 0.5),
                             level("LBUF", 32, (2, 1), 1.0), level("GBUF", 128, access=4.0)]),
    "per-tensor": spec("split", [level("REGF", 2, (1, 2), 0.1, holds=["wgt"]),
                                 level("VBUF", {"wgt": 8, "ofm": 8}, (2, 1), 0.5),
                                 level("GBUF", 64, access=3.0, holds=["ifm", "ofm"])]),
}

LAYERS = [Layer("f", Op.FC, c=4, k=2, h=1, w=1), Layer("c", Op.CONV, c=2, k=2, h=3, w=1, s=2, r=1)]


def brute_force(layer, batch, arch, objective="energy"):
    """Least (objective, energy) of a valid scheme over every frame, every split of
    every dim's rest over the unit and the levels, and every order at every level."""
    best = None
    for frame in frames(layer, batch, arch):
        ev = FrameEvaluator(frame, arch)
        n = len(frame.spatial)
        dims = frame.dims
        per_dim = [[s for s in itertools.product(*(range(1, frame.rest[d] + 1),) * n)
                    if frame.rest[d] % np.prod(s) == 0] for d in dims]
        for split in itertools.product(*per_dim):
            unit = np.ones((1, ND), np.int64)
            counts = [np.ones((1, ND), np.int64) for _ in range(n)]
            for d, parts in zip(dims, split, strict=True):
                for lvl in range(n - 1):
                    counts[lvl][0, d] = parts[lvl + 1]
                unit[0, d] = parts[0]
                counts[n - 1][0, d] = frame.rest[d] // int(np.prod(parts))
            looping = [[j for j in range(ND) if counts[lvl][0, j] > 1] for lvl in range(n)]
            orders = [[[j for j in range(ND) if j not in lp] + list(p) for p in itertools.permutations(lp)]
                      for lp in looping]
            combos = list(itertools.product(*orders))
            b = Blockings(unit, tuple(counts), np.zeros(len(combos), np.int64),
                          tuple(np.array([c[lvl] for c in combos], np.int64) for lvl in range(n)))
            costs = ev.costs(b)
            value = costs.value(objective)
            for i in np.flatnonzero(np.isfinite(value)):
                key = (float(value[i]), float(costs.total[i]))
                best = key if best is None or key < best else best
    return best


@pytest.mark.parametrize("name", sorted(HIERARCHIES))
@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
def test_exhaustive_finds_the_brute_force_optimum_on_any_hierarchy(name, layer):
    arch = HIERARCHIES[name]
    result = ExhaustiveIntraSolver().solve(layer, 2, arch)
    assert result.cost.valid
    assert evaluate(result.scheme, arch).valid
    value, _ = brute_force(layer, 2, arch)
    assert result.cost.total_energy == pytest.approx(value, rel=1e-12)


def test_latency_ties_on_a_deep_hierarchy():
    arch, layer = HIERARCHIES["4-level"], LAYERS[0]
    result = ExhaustiveIntraSolver().solve(layer, 2, arch, "latency")
    value, energy = brute_force(layer, 2, arch, "latency")
    assert result.cost.time == pytest.approx(value, rel=1e-12)
    assert result.cost.total_energy == pytest.approx(energy, rel=1e-9)


def test_every_level_of_a_frame_stays_within_its_array():
    for arch in HIERARCHIES.values():
        for frame in frames(LAYERS[1], 2, arch):
            for sp, lvl in zip(frame.spatial, arch.levels[:-1], strict=True):
                rows = np.prod([s.rows for s in sp.stacks]) if sp.stacks else 1
                cols = np.prod([s.cols for s in sp.stacks]) if sp.stacks else 1
                assert rows <= lvl.array[0] and cols <= lvl.array[1]


def test_a_middle_buffer_too_small_is_named():
    from kapla.errors import KaplaError

    arch = HIERARCHIES["4-level"].with_level("ABUF", capacity=4)
    with pytest.raises(KaplaError, match=r"layer 'f' does not fit: its smallest block needs \d+ B of ABUF but "
                                         r"ABUF holds 4 B"):
        ExhaustiveIntraSolver().solve(LAYERS[0], 2, arch)


@pytest.mark.parametrize("name", sorted(HIERARCHIES))
@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
def test_kapla_finds_the_brute_force_optimum_on_tiny_layers(name, layer):
    from kapla.search.layer.kapla.solver import KaplaIntraSolver

    arch = HIERARCHIES[name]
    result = KaplaIntraSolver().solve(layer, 2, arch)
    assert result.cost.valid and evaluate(result.scheme, arch).valid and result.evaluated > 0
    value, _ = brute_force(layer, 2, arch)
    assert result.cost.total_energy == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("arch", ["simba", "eyeriss", "multinode_4x4", "edge"])
def test_frames_costed_together_cost_as_each_alone(arch):
    """totals_of_many costs every frame of a layer in one call of the cost model,
    padding frames with fewer stacks or loops with ones; every blocking's energy
    is exactly what its own frame's call gives."""
    from kapla.arch import load_arch
    from kapla.space.layer.frames import blockings, totals_of_many

    spec = load_arch(arch)
    padded = False
    for layer in (Layer("c", Op.CONV, c=12, k=16, h=6, w=6, s=3, r=3), Layer("f", Op.FC, c=64, k=24, h=1, w=1)):
        parts = []
        for frame in frames(layer, 2, spec):
            ev = FrameEvaluator(frame, spec)
            b = next(iter(blockings(ev, 64)), None)
            if b is not None:
                parts.append((ev, b))
        assert parts
        shapes = {(tuple(len(sp.stacks) for sp in ev.frame.spatial), len(ev.inner), tuple(sorted(ev.shr)))
                  for ev, _ in parts}
        padded |= len(shapes) > 1
        together = totals_of_many(parts)
        for (ev, b), total in zip(parts, together, strict=True):
            assert np.array_equal(ev.costs(b, rules=False).total, total)
    assert padded or arch == "edge"  # frames of several shapes were costed together


def test_a_layer_whose_widest_partitions_tile_nothing_below_runs_on_fewer_nodes():
    # a vector layer of 32 channels by 81 tokens on 16x16 nodes: its only partition
    # of every node gives each node 11 rows, which the 16x16 PE array's row-stationary
    # mapping pads to 12, a wholly idle pass on the last node; it had no frame at all
    # ("cannot be spread over the arrays"), now those of a smaller block of nodes
    arch = load_arch("multinode")
    layer = Layer("silu", Op.ELTWISE, 32, 32, 81, 1, groups=32, mode="silu")
    found = frames(layer, 1, arch)
    assert found
    nodes = arch.node_array[0] * arch.node_array[1]
    assert all(math.prod(st.count for st in f.spatial[-1].stacks) < nodes for f in found)
    cfg = Config(hidden=16, heads=1, kv_heads=1, ffn=32, layers=1, norm="rmsnorm", act="silu", rotary=True,
                 causal=True)
    result = kapla.schedule(decoder("prefill", cfg, 1, 81), arch, jobs=1, pipelining=False)  # layer by layer: quicker
    assert result.valid and all(lr.cost.valid for lr in result.layers)


def test_what_frames_share_cannot_be_changed_through_one_of_them():
    """A level's choice is shared by the many frames built on it, and its arrays with
    them (its unit block, the frames' sharing factors): none can be changed in place
    through one frame's evaluator, which would change every other frame's costs."""
    from kapla.arch import load_arch

    spec = load_arch("multinode_4x4")
    every = frames(Layer("c", Op.CONV, c=12, k=16, h=6, w=6, s=3, r=3), 2, spec)
    evs = [FrameEvaluator(f, spec) for f in every]
    by_choice = {}
    for ev in evs:
        by_choice.setdefault(id(ev.frame.spatial[0]), []).append(ev)
    assert any(len(group) > 1 for group in by_choice.values())
    for group in by_choice.values():
        assert all(ev.mu is group[0].mu for ev in group)
    ev = next(ev for ev in evs if ev.shr)
    with pytest.raises(ValueError):
        ev.mu[0] = 7
    with pytest.raises(TypeError):
        ev.shr[next(iter(ev.shr))] = 1  # type: ignore[index]


@pytest.mark.parametrize("arch", ["simba", "eyeriss", "multinode_4x4", "edge", "4-level", "per-tensor", "3-level"])
def test_blocks_checked_for_many_frames_at_once_fit_as_each_frames_own(arch):
    """fits_above_many checks unit factors of many frames (their own PE units,
    stacks, fixed inner loops and buffer sharing) in one go: every row gets
    what its own frame's fits_above gives, at every level and ``upto``."""
    from kapla.space.layer.frames import fits_above_many, split_rows

    spec = HIERARCHIES[arch] if arch in HIERARCHIES else load_arch(arch)
    rng = np.random.default_rng(7)
    layers = (Layer("c", Op.CONV, c=12, k=16, h=6, w=6, s=3, r=3), Layer("f", Op.FC, c=64, k=24, h=1, w=1),
              Layer("w", Op.CONV, c=3, k=8, h=27, w=27, s=11, r=11, stride=(4, 4)),
              Layer("b", Op.CONV, c=64, k=64, h=56, w=56, s=3, r=3))
    checked = rejected = 0
    for layer in layers:
        every = frames(layer, 2, spec)
        evs = [FrameEvaluator(f, spec) for f in every[::max(len(every) // 30, 1)]]
        units, which = [], []
        for n, ev in enumerate(evs):
            _, taken = split_rows(np.array([ev.frame.rest], dtype=np.int64), ev.frame.dims)
            # the largest blocks too: some overflow the buffers above the PEs
            pick = taken[np.concatenate([np.argsort(-taken.prod(axis=1))[:10], rng.permutation(len(taken))[:10]])]
            units.append(pick)
            which += [n] * len(pick)
        unit, which = np.concatenate(units), np.array(which, dtype=np.int64)
        levels = evs[0].levels
        for level in range(levels):
            for upto in {None, *range(level + 1, levels + 1)}:
                together = fits_above_many(evs, which, unit, level, upto)
                ones = [np.ones_like(unit)] * level
                alone = np.concatenate([ev.fits_above(level, u, [o[:len(u)] for o in ones], upto)
                                        for ev, u in zip(evs, units, strict=True)])
                assert np.array_equal(together, alone)
                checked += len(unit)
                rejected += int((~together).sum())
    assert checked and rejected  # some blocks overflow a buffer


@pytest.mark.parametrize("arch", ["simba", "eyeriss", "multinode_4x4", "edge", "4-level", "3-level"])
def test_units_checked_for_coverage_at_once_are_covered_as_their_blockings(arch):
    """coverage_of_units checks unit factors of many frames, all that is left
    looping at one level, in one go (the frames' own loops at level 0 in place):
    each row gets what the coverage rule gives that blocking's nest on its own."""
    from kapla.model.rules import coverage
    from kapla.space.layer.frames import coverage_of_units, split_rows

    spec = HIERARCHIES[arch] if arch in HIERARCHIES else load_arch(arch)
    idle = 0
    for layer in (Layer("c", Op.CONV, c=12, k=16, h=6, w=6, s=3, r=3),
                  Layer("b", Op.CONV, c=3, k=96, h=55, w=55, s=11, r=11, stride=(4, 4))):
        every = frames(layer, 2, spec)
        evs = [FrameEvaluator(f, spec) for f in every[::max(len(every) // 30, 1)]]
        units = [split_rows(np.array([ev.frame.rest], dtype=np.int64), ev.frame.dims)[1][:25] for ev in evs]
        which = np.repeat(np.arange(len(evs)), [len(u) for u in units])
        for level in range(evs[0].levels):
            together = coverage_of_units(evs, which, np.concatenate(units), level)
            parts = []
            for ev, u in zip(evs, units, strict=True):
                rest = np.array(ev.frame.rest, dtype=np.int64)[None, :] // u
                counts = tuple(rest if lvl == level else np.ones_like(u) for lvl in range(ev.levels))
                orders = tuple(np.broadcast_to(np.arange(ND), u.shape) for _ in range(ev.levels))
                parts.append((ev, Blockings(u, counts, np.arange(len(u)), orders)))
            alone = np.concatenate([coverage(ev.nests(b)).ok for ev, b in parts])
            assert np.array_equal(together, alone)
            idle += int((~together).sum())
    assert idle or arch != "simba"  # there some blocks leave wholly idle iterations


def test_kept_columns_move_to_the_end_in_order():
    # each row's marked loops, in order, at the end of a row of ``width``; loops of one
    # iteration over dim 0 in front (the plain per-row statement, on random rows)
    from kapla.space.layer.frames import _kept_last

    rng = np.random.default_rng(7)
    for rows, cols in [(1, 8), (40, 9), (300, 12), (5, 0)]:
        keep = rng.random((rows, cols)) < 0.5
        width = min(cols, int(keep.sum(axis=1).max(initial=0)) + int(rng.integers(0, 2)))
        dims, counts = rng.integers(0, 8, (rows, cols)), rng.integers(2, 9, (rows, cols))
        got = _kept_last(dims, counts, keep, width)
        for r in range(rows):
            kept = [c for c in range(cols) if keep[r, c]]
            pad = width - len(kept)
            assert got.dims[r].tolist() == [0] * pad + [int(dims[r, c]) for c in kept]
            assert got.counts[r].tolist() == [1] * pad + [int(counts[r, c]) for c in kept]
