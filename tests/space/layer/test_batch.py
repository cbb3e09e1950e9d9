"""The vectorised blocking evaluator gives the scalar evaluator's numbers.

For layers of every kind (CONV, FC, POOL, depthwise CONV, element-wise,
backward-data and weight-gradient layers) on the three kinds of hardware
(multi-node row stationary with buffer sharing, single-node systolic,
single-node row stationary), a few skeletons and a random sample of their
blockings are costed both ways and must agree to ``rtol=1e-9``; and the
best blocking :func:`enumerate_and_cost` finds over the exhaustive solver's
candidate set must cost what a scalar loop over :func:`reference_blockings`
finds. The same holds under random feeds (a layer inside a segment: input
forwarded on chip, output kept on chip, weights pinned, a given DRAM
distance), where the batch evaluator must also give the scalar evaluator's
verdict on the feed's constraints.
"""

from __future__ import annotations

import itertools
import math
import random
from functools import cache

import numpy as np
import pytest

from kapla.arch import load_arch
from kapla.model import evaluate
from kapla.model.evaluate import ITCN, Feed
from kapla.model.rules import scheme_buffer_words
from kapla.space.layer.batch import (
    active_dims,
    batch_costs,
    enumerate_and_cost,
    enumerate_blockings,
)
from kapla.space.layer.classic_view import skeletons
from kapla.space.layer.skeletons import BLOCK_DIMS, Blocking, build_scheme, distinct_orders, divisors
from kapla.workload.layer import Layer
from kapla.workload.zoo import get_network

RTOL = 1e-9


def reference_blockings(skel, arch):
    """Every blocking of ``skel`` that fits both buffers, one per class of
    equivalent loop orders, one scheme at a time (what the batch enumeration
    must cover; the walk the exhaustive solver used on the classic hierarchy)."""
    rest = skel.rest
    dims = [d for d in BLOCK_DIMS if rest[d] > 1]
    regf_cap = arch.levels[0].capacity // arch.word_bytes
    gbuf_cap = arch.levels[1].capacity // arch.word_bytes
    for unit in itertools.product(*(divisors(rest[d]) for d in dims)):
        u = dict(zip(dims, unit, strict=True))
        probe = build_scheme(skel, Blocking(tuple(u.items()), (), tuple((d, rest[d] // u[d]) for d in dims)))
        if scheme_buffer_words(probe, arch, 0) > regf_cap:
            continue
        for mid in itertools.product(*(divisors(rest[d] // u[d]) for d in dims)):
            a = dict(zip(dims, mid, strict=True))
            top = {d: rest[d] // (u[d] * a[d]) for d in dims}
            first = build_scheme(skel, Blocking(tuple(u.items()), tuple(a.items()), tuple(top.items())))
            if scheme_buffer_words(first, arch, 1) > gbuf_cap:
                continue
            for o1 in distinct_orders(skel.layer, tuple(d for d in dims if a[d] > 1)):
                for o2 in distinct_orders(skel.layer, tuple(d for d in dims if top[d] > 1)):
                    yield build_scheme(skel, Blocking(tuple(u.items()), tuple((d, a[d]) for d in o1),
                                                      tuple((d, top[d]) for d in o2)))
ARCHS = ("multinode_4x4", "edge", "eyeriss")


@cache
def _arch(name: str):
    return load_arch(name)


@cache
def _layers() -> dict[str, Layer]:
    alexnet = get_network("alexnet", 1)
    mobilenet = get_network("mobilenet", 1)
    resnet = get_network("resnet50", 1)
    training = get_network("alexnet", 1).to_training()
    mlp = get_network("mlp_s", 1).to_training()
    return {
        "conv1": alexnet["conv1_a"],
        "conv3": alexnet["conv3_a"],
        "fc2": alexnet["fc2"],
        "pool1": alexnet["pool1_a"],
        "dwconv": mobilenet["conv2_dw"],
        "eltwise": resnet["conv2_0_res"],
        "conv2.bwd": training["conv2_a.bwd"],
        "conv3.wgrad": training["conv3_a.wgrad"],
        "pool1.bwd": training["pool1_a.bwd"],  # max pooling: reads the forward input back
        "fc2.bwd": mlp["fc2.bwd"],
        "fc2.wgrad": mlp["fc2.wgrad"],
        # not in the zoo: dilation and a stride larger than the window
        "dilated": Layer("dilated", "conv", 16, 32, 28, 28, s=3, r=3, stride=(2, 2), pad=(2, 2, 2, 2),
                         dilation=(2, 3)),
        "sparse": Layer("sparse", "conv", 8, 16, 29, 29, s=2, r=2, stride=(3, 3)),
    }


BATCH = {"multinode_4x4": 8, "edge": 1, "eyeriss": 2}


def _pick_skeletons(layer: Layer, batch: int, arch, n: int, rng: random.Random):
    skels = list(skeletons(layer, batch, arch))
    picked = rng.sample(skels, min(n, len(skels)))
    shared = [s for s in skels if s.shr]
    if shared and not any(s.shr for s in picked):
        picked.append(rng.choice(shared))
    return picked


def _random_blockings(skel, rng: random.Random, n: int):
    """Any blockings (feasible or not) with random loop orders over all dims,
    including count-1 loops in the middle of an order."""
    dims = active_dims(skel)
    rest = skel.rest
    units, mids, o1, o2 = [], [], [], []
    for _ in range(n):
        u, a = [], []
        for d in dims:
            div = [k for k in range(1, rest[d] + 1) if rest[d] % k == 0]
            u.append(rng.choice(div))
            left = rest[d] // u[-1]
            a.append(rng.choice([k for k in range(1, left + 1) if left % k == 0]))
        units.append(u)
        mids.append(a)
        o1.append(tuple(rng.sample(dims, len(dims))))
        o2.append(tuple(rng.sample(dims, len(dims))))
    shape = (n, len(dims))
    return (np.array(units, dtype=np.int64).reshape(shape), np.array(mids, dtype=np.int64).reshape(shape), o1, o2)


def _sample_enumerated(skel, arch, rng: random.Random, n: int):
    """A random sample of the exhaustive solver's candidates (from its first chunks)."""
    parts = list(itertools.islice(enumerate_blockings(skel, arch, chunk=4096), 4))
    if not parts:
        return None
    cat = [np.concatenate([p[i] for p in parts]) for i in range(5)]
    idx = np.sort(np.array(rng.sample(range(len(cat[0])), min(n, len(cat[0])))))
    return [c[idx] for c in cat]


def _assert_matches(res, skel, arch, objective: str = "energy", feed: Feed | None = None) -> int:
    """Every candidate of ``res`` costs what the scalar evaluator says; returns
    how many had numbers to compare (the ones that meet the feed)."""
    compared = 0
    for i in range(len(res)):
        scheme = build_scheme(skel, res.blocking(i))
        cost = evaluate(scheme, arch, check=False) if feed is None else evaluate(scheme, arch, feed, check=False)
        where = f"{skel.layer.name} | {skel.describe()} | {res.blocking(i)} | {feed}"
        assert bool(res.valid[i]) == cost.valid, (where, cost.validity)
        if not cost.valid:
            assert math.isinf(res.objective[i]), where
            continue
        compared += 1
        assert res.energy[i] == pytest.approx(cost.total_energy, rel=RTOL), where
        assert res.time[i] == pytest.approx(cost.time, rel=RTOL), where
        assert res.objective[i] == pytest.approx(cost.objective(objective), rel=RTOL), where
        assert res.regf_words[i] == scheme_buffer_words(scheme, arch, 0), where
        assert res.gbuf_words[i] == scheme_buffer_words(scheme, arch, 1), where
        for level in (*arch.level_names, ITCN):
            assert res.accesses[level][i] == pytest.approx(cost.level_accesses(level), rel=RTOL, abs=1e-9), \
                (where, level)
        assert res.noc_hops[i] == pytest.approx(cost.noc_hops, rel=RTOL, abs=1e-9), where
        for part, arr in (("compute", res.compute_time), ("bus", res.bus_time), ("dram", res.dram_time)):
            assert arr[i] == pytest.approx(cost.time_parts[part], rel=RTOL, abs=1e-9), (where, part)
    return compared


@pytest.mark.parametrize("arch_name", ARCHS)
@pytest.mark.parametrize("layer_key", list(_layers()))
def test_batch_equals_scalar(layer_key: str, arch_name: str):
    arch = _arch(arch_name)
    layer = _layers()[layer_key]
    rng = random.Random(f"{layer_key}/{arch_name}")
    checked = 0
    for skel in _pick_skeletons(layer, BATCH[arch_name], arch, 2, rng):
        sample = _sample_enumerated(skel, arch, rng, 12)
        if sample is not None:
            checked += _assert_matches(batch_costs(skel, arch, *sample), skel, arch)
        units, mids, o1, o2 = _random_blockings(skel, rng, 6)
        objective = rng.choice(("energy", "latency", "edp"))
        res = batch_costs(skel, arch, units, mids, regf_orders=o1, gbuf_orders=o2, objective=objective)
        checked += _assert_matches(res, skel, arch, objective)
    assert checked


def _random_feed(rng: random.Random) -> Feed:
    return Feed(ifm_hops=rng.choice((None, 0.0, 2.5)), to_dram=rng.choice((True, False)),
                pinned=rng.choice((True, False)), dram_hops=rng.choice((None, 3.0)))


@pytest.mark.parametrize("arch_name", ARCHS)
@pytest.mark.parametrize("layer_key", list(_layers()))
def test_batch_equals_scalar_under_feeds(layer_key: str, arch_name: str):
    """Random feeds over the random layers and blockings above: every number of
    the candidates that meet the feed, and every verdict."""
    arch = _arch(arch_name)
    layer = _layers()[layer_key]
    rng = random.Random(f"feed/{layer_key}/{arch_name}")
    checked = 0
    for skel in _pick_skeletons(layer, BATCH[arch_name], arch, 2, rng):
        samples = []
        sample = _sample_enumerated(skel, arch, rng, 8)
        if sample is not None:
            samples.append((sample, {}))
        units, mids, o1, o2 = _random_blockings(skel, rng, 4)
        samples.append(((units, mids), {"regf_orders": o1, "gbuf_orders": o2}))
        for args, kwargs in samples:
            for feed in [_random_feed(rng) for _ in range(3)] + [Feed(ifm_hops=2.5, dram_hops=3.0)]:
                objective = rng.choice(("energy", "latency", "edp"))
                res = batch_costs(skel, arch, *args, **kwargs, objective=objective, feed=feed)
                checked += _assert_matches(res, skel, arch, objective, feed)
    assert checked


def test_feed_verdicts_on_chosen_blockings():
    """Blockings built to pass or break each constraint: a GBUF-level loop over
    the output channels re-reads a forwarded input; one over the input channels
    outside the output's loops spills partial sums; pinned weights re-read
    under a batch loop."""
    arch = _arch("eyeriss")
    layer = _layers()["conv3"]
    skel = next(s for s in skeletons(layer, 2, arch)
                if {"C", "K", "N"} <= set(active_dims(s)))
    dims = active_dims(skel)
    ones = np.ones((1, len(dims)), dtype=np.int64)
    rest = skel.rest

    def cost(top_dims, feed):
        mids = np.array([[1 if d in top_dims else rest[d] for d in dims]], dtype=np.int64)
        order = tuple(top_dims)  # the GBUF-level loops, outermost first
        res = batch_costs(skel, arch, ones, mids, regf_orders=tuple(dims), gbuf_orders=order, feed=feed)
        _assert_matches(res, skel, arch, "energy", feed)
        return bool(res.valid[0])

    forward, keep, pin = Feed(ifm_hops=1.0), Feed(to_dram=False), Feed(pinned=True)
    assert cost(("C",), forward) and cost(("C", "K"), forward)
    assert not cost(("K", "C"), forward)  # every K step re-reads the input
    assert cost(("K", "C"), keep)
    assert not cost(("C", "K"), keep)  # C steps outside K spill partial sums
    assert cost(("K",), pin) and cost(("K", "N"), pin)
    assert not cost(("N", "K"), pin)  # every sample reloads the weights


def test_orders_may_leave_out_dims_of_count_one():
    arch = _arch("edge")
    skel = next(s for s in skeletons(_layers()["conv3"], 1, arch) if len(active_dims(s)) >= 3)
    dims = active_dims(skel)
    units = np.ones((1, len(dims)), dtype=np.int64)
    mids = np.ones((1, len(dims)), dtype=np.int64)
    mids[0, -1] = skel.rest[dims[-1]]
    short = batch_costs(skel, arch, units, mids, regf_orders=(dims[-1],), gbuf_orders=tuple(reversed(dims)))
    reverse = np.array([list(reversed(range(len(dims))))])
    full = batch_costs(skel, arch, units, mids, regf_orders=[tuple(dims)], gbuf_orders=reverse)
    assert short.energy[0] == full.energy[0]
    with pytest.raises(ValueError):
        batch_costs(skel, arch, units, mids, regf_orders=(dims[0],))  # leaves out a looping dim


def _small_skeleton(layer: Layer, batch: int, arch, low: int, high: int):
    for skel in skeletons(layer, batch, arch):
        n = sum(len(p[0]) for p in enumerate_blockings(skel, arch))
        if low <= n <= high:
            return skel, n
    return None, 0


@pytest.mark.parametrize("arch_name, layer_key, objective", [
    ("eyeriss", "fc2", "energy"),
    ("edge", "conv1", "edp"),
    ("multinode_4x4", "pool1", "energy"),
    ("multinode_4x4", "dwconv", "latency"),
    ("edge", "fc2.wgrad", "energy"),
])
def test_enumerate_and_cost_finds_the_scalar_optimum(arch_name: str, layer_key: str, objective: str):
    arch = _arch(arch_name)
    skel, n = _small_skeleton(_layers()[layer_key], BATCH[arch_name], arch, 20, 700)
    assert skel is not None
    best = None
    scalar = []
    for scheme in reference_blockings(skel, arch):
        value = evaluate(scheme, arch, check=False).objective(objective)
        scalar.append(scheme)
        if best is None or value < best[0]:
            best = (value, scheme)
    found = enumerate_and_cost(skel, arch, objective)
    assert found.evaluated == len(scalar) == n
    assert found.value == pytest.approx(best[0], rel=RTOL)
    cost = evaluate(build_scheme(skel, found.blocking), arch)  # valid, and what it claims
    assert cost.valid, cost.validity
    assert cost.objective(objective) == pytest.approx(found.value, rel=RTOL)
    # the same candidates, in the same order
    listed = [build_scheme(skel, b) for p in enumerate_blockings(skel, arch)
              for b in (batch_costs(skel, arch, *p).blocking(i) for i in range(len(p[0])))]
    assert listed == scalar


def test_no_feasible_blocking():
    arch = _arch("multinode_4x4").with_level("GBUF", capacity=64)
    skel = next(skeletons(_layers()["conv3"], 8, arch))
    found = enumerate_and_cost(skel, arch)
    assert found.blocking is None and found.evaluated == 0 and math.isinf(found.value)


def test_blockings_that_leave_an_idle_iteration_are_rejected():
    """GoogLeNet inception_5a_pool_proj: 832 channels over 16 nodes; a register block
    of 7 channels on 8 PE rows makes node blocks of 56, and 16 x 56 overshoots 832
    by a whole block. The scalar check and the batch verdict must agree."""
    from kapla.space.layer.batch import BatchEvaluator, _candidates, active_dims
    from kapla.space.layer.classic_view import skeletons
    from kapla.space.layer.skeletons import build_scheme, coverage_ok
    from kapla.workload.zoo import get_network

    arch = load_arch("multinode")
    layer = get_network("googlenet", 64)["inception_5a_pool_proj"]
    skel = next(s for s in skeletons(layer, 64, arch)
                if s.partition.factors == {"N": 4, "C": 16, "Y": 4} and not s.shr
                and s.mapping.note.endswith("rows over C, columns over N"))
    ev, dims = BatchEvaluator(skel, arch), active_dims(skel)
    verdicts = []
    for units, mids, tops, rows, o1, o2 in _candidates(ev, 4096):
        res = ev._costs(dims, units, mids, tops, rows, o1, o2, "energy")
        for i in range(0, len(res), 37):
            verdicts.append((bool(res.valid[i]), coverage_ok(build_scheme(skel, res.blocking(i)))))
    assert {v for v, _ in verdicts} == {True, False}  # both kinds occur
    assert all(batch == scalar for batch, scalar in verdicts)
