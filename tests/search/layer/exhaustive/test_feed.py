"""The exhaustive solver under a feed (a layer inside a segment).

On small layers every distinct scheme is costed with the scalar evaluator
under several feeds; the exhaustive solver must return each feed's optimum,
costed with the feed and valid, the frame bound it prunes by must stay
below every valid scheme of a frame, and a feed no scheme can meet must
raise a clear error.
"""

from __future__ import annotations

import itertools
from functools import cache

import pytest

from kapla.arch import load_arch
from kapla.model import evaluate
from kapla.model.evaluate import FROM_DRAM, Feed
from kapla.model.validity import check_scheme
from kapla.search.base import NoSchemeError
from kapla.search.layer.exhaustive.solver import ExhaustiveIntraSolver
from kapla.space.layer.classic_view import skeletons
from kapla.space.layer.layer_space import LayerSpace
from kapla.space.layer.skeletons import BLOCK_DIMS, Blocking, build_scheme, divisors
from kapla.space.problem import Problem
from kapla.workload.layer import Layer, Op

SMALL_ARCH = load_arch("multinode").with_node_region(2, 2).with_level("GBUF", capacity=4096)

LAYERS = {
    "c": (Layer("c", Op.CONV, c=4, k=4, h=5, w=5, s=3, r=3, pad=(1, 1, 1, 1)), 2),
    "f": (Layer("f", Op.FC, c=12, k=8, h=1, w=1), 4),
    "d": (Layer("d", Op.CONV, c=4, k=4, h=6, w=6, s=3, r=3, pad=(1, 1, 1, 1), groups=4), 4),
}

FEEDS = {
    "from_dram": FROM_DRAM,
    "forwarded": Feed(ifm_hops=1.0),
    "kept": Feed(to_dram=False, dram_hops=3.0),
    "pinned": Feed(pinned=True),
    "all_on_chip": Feed(ifm_hops=2.5, to_dram=False, pinned=True),
    "free_forward": Feed(ifm_hops=0.0, to_dram=False, dram_hops=0.5),
}


def _schemes(skel):
    """Every distinct scheme of ``skel``: every factor split, every order of the
    loops that loop (the place of a loop of count 1 changes nothing)."""
    rest = skel.rest
    dims = [d for d in BLOCK_DIMS if rest[d] > 1]
    for unit in itertools.product(*(divisors(rest[d]) for d in dims)):
        for mid in itertools.product(*(divisors(rest[d] // u) for d, u in zip(dims, unit, strict=True))):
            top = [rest[d] // (u * m) for d, u, m in zip(dims, unit, mid, strict=True)]
            for o1 in itertools.permutations([i for i in range(len(dims)) if mid[i] > 1]):
                for o2 in itertools.permutations([i for i in range(len(dims)) if top[i] > 1]):
                    yield build_scheme(skel, Blocking(tuple(zip(dims, unit, strict=True)),
                                                      tuple((dims[i], mid[i]) for i in o1),
                                                      tuple((dims[i], top[i]) for i in o2)))


@cache
def brute_force(key: str):
    """Per feed: the least energy and latency of a valid scheme (None if no
    scheme is valid) and how many schemes break the feed."""
    layer, batch = LAYERS[key]
    best = {name: {"energy": None, "latency": None, "rejected": 0} for name in FEEDS}
    for skel in skeletons(layer, batch, SMALL_ARCH):
        for scheme in _schemes(skel):
            if not check_scheme(scheme, SMALL_ARCH).ok:
                continue
            for name, feed in FEEDS.items():
                cost = evaluate(scheme, SMALL_ARCH, feed, check=False)  # check_scheme done above
                if not cost.valid:
                    best[name]["rejected"] += 1
                    continue
                for objective in ("energy", "latency"):
                    value = cost.objective(objective)
                    if best[name][objective] is None or value < best[name][objective]:
                        best[name][objective] = value
    return best


@pytest.mark.parametrize("feed_name", list(FEEDS))
@pytest.mark.parametrize("key", list(LAYERS))
def test_exhaustive_finds_the_brute_force_optimum_under_a_feed(key: str, feed_name: str):
    layer, batch = LAYERS[key]
    feed = FEEDS[feed_name]
    best = brute_force(key)
    for objective in ("energy", "latency"):
        expected = best[feed_name][objective]
        if expected is None:
            with pytest.raises(NoSchemeError, match=rf"layer '{layer.name}' cannot meet its feed constraint"):
                ExhaustiveIntraSolver().solve(layer, batch, SMALL_ARCH, objective, feed=feed)
            continue
        result = ExhaustiveIntraSolver().solve(layer, batch, SMALL_ARCH, objective, feed=feed)
        assert result.cost.valid, result.cost.validity
        assert result.cost == evaluate(result.scheme, SMALL_ARCH, feed)  # costed with the feed
        assert result.cost.objective(objective) == pytest.approx(expected, rel=1e-12), (key, feed_name, objective)


def test_the_feeds_are_not_all_trivial():
    """The brute force above checks real constraints: every feed changes the
    optimum, and some schemes of these layers break each feed."""
    rejected = dict.fromkeys(FEEDS, 0)
    for key in LAYERS:
        best = brute_force(key)
        for name in FEEDS:
            rejected[name] += best[name]["rejected"]
            if name != "from_dram":
                assert best[name]["energy"] != best["from_dram"]["energy"], (key, name)
    assert rejected.pop("from_dram") == 0
    assert all(rejected.values()), rejected


@pytest.mark.parametrize("key", list(LAYERS))
def test_the_frame_bound_under_a_feed_never_exceeds_a_valid_scheme(key: str):
    layer, batch = LAYERS[key]
    for name, feed in FEEDS.items():
        space = LayerSpace(Problem(layer, batch, SMALL_ARCH, "energy", feed))
        for frame in range(len(space)):
            bound = space.bound(frame)
            for b in space.blockings(frame):
                costs = space.score(frame, b)
                ok = costs.valid
                if ok.any():
                    assert bound.energy <= costs.total[ok].min() * (1 + 1e-12), (key, name, frame)
                    assert bound.time <= costs.time[ok].min() * (1 + 1e-12), (key, name, frame)


def test_forwarding_the_input_costs_no_more_dram_energy():
    dram = SMALL_ARCH.level_names[-1]
    for key, (layer, batch) in LAYERS.items():
        plain = ExhaustiveIntraSolver().solve(layer, batch, SMALL_ARCH)
        forwarded = ExhaustiveIntraSolver().solve(layer, batch, SMALL_ARCH, feed=Feed(ifm_hops=1.0))
        assert forwarded.cost.energy[dram] <= plain.cost.energy[dram], key
        assert forwarded.scheme.roles[0].name not in forwarded.cost.accesses[dram]  # the input never reaches DRAM


def test_the_cache_tells_feeds_apart():
    layer, batch = LAYERS["f"]
    solver = ExhaustiveIntraSolver()
    plain = solver.solve(layer, batch, SMALL_ARCH)
    kept = solver.solve(layer, batch, SMALL_ARCH, feed=Feed(to_dram=False))
    again = solver.solve(layer, batch, SMALL_ARCH, feed=None)
    assert kept.cost != plain.cost and again.cost == plain.cost
    assert plain.cost == evaluate(plain.scheme, SMALL_ARCH)
    named = solver.solve(layer, batch, SMALL_ARCH, ifm_name="prev", feed=Feed(to_dram=False))
    assert named.scheme.ifm_name == "prev" and named.cost == evaluate(named.scheme, SMALL_ARCH, Feed(to_dram=False))


def test_a_feed_no_scheme_can_meet_raises_a_clear_error():
    # One node whose buffer holds neither all input channels nor all output
    # channels: input or output channels loop at the top, so either the input
    # is re-read (forwarding needs it read once) or partial sums spill.
    arch = load_arch("multinode").with_node_region(1, 1).with_level("GBUF", capacity=200)
    layer = Layer("fc", Op.FC, c=64, k=64, h=1, w=1)
    for feed in (None, Feed(ifm_hops=1.0), Feed(to_dram=False)):
        assert ExhaustiveIntraSolver().solve(layer, 1, arch, feed=feed).cost.valid
    with pytest.raises(NoSchemeError, match=r"layer 'fc' cannot meet its feed constraint .*forwarded input once "
                                            r"and keeps its output on chip"):
        ExhaustiveIntraSolver().solve(layer, 1, arch, feed=Feed(ifm_hops=1.0, to_dram=False))
    # a layer that fits nowhere still gets the capacity error, feed or not
    tiny = arch.with_level("GBUF", capacity=8)
    with pytest.raises(NoSchemeError, match=r"layer 'fc' does not fit"):
        ExhaustiveIntraSolver().solve(layer, 1, tiny, feed=Feed(ifm_hops=1.0, to_dram=False))
