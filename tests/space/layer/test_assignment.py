"""A point of the layer space built from a factor assignment (what a MIP or a learned search decodes into)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.dataflow.tensors import DIMS
from kapla.model import evaluate
from kapla.space.layer.layer_space import LayerSpace
from kapla.space.problem import Problem
from kapla.workload.layer import Layer, Op


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


@settings(max_examples=25, deadline=None)
@given(c=st.sampled_from([8, 12, 16]), k=st.sampled_from([8, 16, 24]), hw=st.sampled_from([4, 6, 8]),
       arch=st.sampled_from(["edge", "eyeriss", "simba"]), data=st.data())
def test_an_assignment_costs_as_the_evaluator_says(c, k, hw, arch, data):
    spec = load_arch(arch)
    layer = Layer("l", Op.CONV, c=c, k=k, h=hw, w=hw, s=3, r=3)
    space = LayerSpace(Problem(layer, 1, spec))
    frame = data.draw(st.integers(0, len(space) - 1))
    fr = space.frames[frame]
    levels = len(fr.spatial)
    unit: dict[str, int] = {}
    counts: list[dict[str, int]] = [{} for _ in range(levels)]
    for j, d in enumerate(DIMS):
        left = fr.rest[j]
        u = data.draw(st.sampled_from(_divisors(left)))
        unit[d], left = u, left // u
        for lvl in range(levels - 1):
            n = data.draw(st.sampled_from(_divisors(left)))
            counts[lvl][d], left = n, left // n
        counts[-1][d] = left
    orders = [data.draw(st.permutations(DIMS)) for _ in range(levels)]
    b = space.assignment(frame, unit, counts, orders)
    costs = space.score(frame, b)
    scheme = space.evaluator(frame).scheme(b, 0)
    cost = evaluate(scheme, spec)
    # the batch costing and the scalar evaluator agree on the point, valid or not
    assert bool(costs.valid[0]) == cost.valid
    if cost.valid:
        assert costs.total[0] == pytest.approx(cost.total_energy, rel=1e-9)
        found = space.best(frame, b)
        assert found is not None and found.scheme == scheme


def test_an_assignment_that_misses_steps_is_refused():
    layer = Layer("l", Op.CONV, c=16, k=16, h=8, w=8, s=3, r=3)
    space = LayerSpace(Problem(layer, 1, load_arch("edge")))
    levels = len(space.frames[0].spatial)
    with pytest.raises(ValueError, match=r"dim \w: the factors cover 1 of the \d+ steps"):
        space.assignment(0, {}, [{} for _ in range(levels)])
    with pytest.raises(ValueError, match="unknown dim 'Q'"):
        space.assignment(0, {"Q": 2}, [{} for _ in range(levels)])
    with pytest.raises(ValueError, match="levels"):
        space.assignment(0, {}, [{}])
