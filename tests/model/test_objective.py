import math

from hypothesis import given
from hypothesis import strategies as st

from kapla.model.objective import OBJECTIVES, Objective

costs = st.tuples(st.floats(0, 1e3), st.floats(0, 1e9))


@given(st.sampled_from(OBJECTIVES), costs, st.one_of(st.none(), costs))
def test_the_additive_rank_of_a_cost_is_its_additive_pair(name, cost, around):
    objective = Objective(name)
    assert objective.additive_of(around)(cost) == objective.additive(cost[0], cost[1], around)


def test_edp_ranks_sums_by_its_tangent_around_a_schedule():
    edp = Objective("edp")
    assert edp.additive(2.0, 30.0, (1.0, 10.0)) == (2.0 * 10.0 + 1.0 * 30.0, 2.0)
    assert edp.additive(2.0, 30.0) == (2.0, 30.0)  # no schedule to be near: energy, then time
    assert Objective("latency").additive(2.0, 30.0) == (30.0, 2.0)
    assert all(isinstance(x, float) and math.isfinite(x) for x in Objective("energy").additive(2, 3))
