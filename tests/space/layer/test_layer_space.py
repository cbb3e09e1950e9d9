"""The intra-layer space as an object: enumeration, seeded sampling and
batch scoring of any hierarchy's frames and blockings."""

import numpy as np
import pytest

from kapla.arch import load_arch
from kapla.model import evaluate
from kapla.search.base import Problem
from kapla.search.layer.exhaustive.solver import ExhaustiveIntraSolver
from kapla.space.layer.layer_space import LayerSpace
from kapla.workload.layer import Layer, Op
from tests.space.layer.test_frames import HIERARCHIES

LAYER = Layer("c", Op.CONV, c=2, k=2, h=3, w=1, s=2, r=1)


def _candidates(chunks):
    """Every candidate of some chunks as hashable (factors, orders) rows."""
    out = []
    for b in chunks:
        for i, f in enumerate(b.rows):
            out.append((b.unit[f].tobytes(), tuple(c[f].tobytes() for c in b.counts),
                        tuple(o[i].tobytes() for o in b.orders)))
    return out


@pytest.mark.parametrize("name", ["3-level", "per-tensor"])
def test_the_best_of_every_chunk_is_the_exhaustive_optimum(name):
    arch = HIERARCHIES[name]
    space = LayerSpace(Problem(LAYER, 2, arch))
    assert len(space) > 0
    found = [space.best(f, b) for f in range(len(space)) for b in space.blockings(f)]
    best = min((x for x in found if x is not None), key=lambda x: x.key)
    assert evaluate(best.scheme, arch).valid
    assert best.key[1] == pytest.approx(ExhaustiveIntraSolver().solve(LAYER, 2, arch).cost.total_energy, rel=1e-12)


def test_sampling_keeps_a_seeded_subset_of_the_enumeration():
    space = LayerSpace(Problem(LAYER, 2, HIERARCHIES["4-level"]))
    frame = 0
    every = _candidates(space.blockings(frame))
    assert _candidates(space.sample(frame, np.random.default_rng(1), 1.0, 1.0)) == every
    some = _candidates(space.sample(frame, np.random.default_rng(7), 0.5, 0.5))
    again = _candidates(space.sample(frame, np.random.default_rng(7), 0.5, 0.5))
    assert some == again  # the same seed, the same sample
    assert 0 < len(some) < len(every) and set(some) <= set(every)
    assert _candidates(space.sample(frame, np.random.default_rng(7), 0.0, 1.0)) == []


def test_scores_follow_the_problem_objective_and_feed():
    arch = load_arch("eyeriss")
    layer = Layer("fc", Op.FC, c=64, k=32, h=1, w=1)
    energy, latency = LayerSpace(Problem(layer, 4, arch)), LayerSpace(Problem(layer, 4, arch, "latency"))
    b = next(energy.blockings(0))
    e, t = energy.best(0, b), latency.best(0, b)
    assert e is not None and t is not None
    assert e.key[0] <= t.key[1] and t.key[0] <= evaluate(e.scheme, arch).time
    costs = energy.score(0, b)
    assert costs.total.shape == (len(b),) and np.all(costs.valid | ~np.isfinite(costs.value(energy.objective)))
