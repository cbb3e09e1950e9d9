"""Coverage worked out once per factor combination equals coverage worked out per candidate.

:func:`kapla.model.rules.coverage_ok` checks one candidate of each factor
combination when no level loops twice over a dimension (then loop order
cannot change which blocks a nest visits). Random nests, some looping twice
over a dimension at one level (where it must fall back to every candidate),
some with loops that overrun the layer.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kapla.model.rules import coverage, coverage_ok
from tests.model.random_nests import random_nests


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_coverage_ok_is_coverage_per_candidate(seed, repeat_dims):
    nests = random_nests(seed, repeat_dims)
    np.testing.assert_array_equal(coverage_ok(nests), coverage(nests).ok)


def test_the_samples_reach_both_answers_and_both_paths():
    """The property above is not vacuous: valid and invalid nests, order-free or not."""
    samples = [random_nests(seed, repeat) for seed in range(60) for repeat in (False, True)]
    oks = np.concatenate([coverage(n).ok for n in samples])
    assert oks.any() and not oks.all()
    assert any(n.order_free for n in samples) and not all(n.order_free for n in samples)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_tile_coverage_is_the_same_on_all_dims_at_once_and_loop_by_loop(seed, repeat_dims):
    # few columns go through per-dim running products, many loop by loop: the same steps and reach
    import kapla.model.rules as rules

    nests = random_nests(seed, repeat_dims)
    dims, counts, _ = nests.dim_loops()
    unit = nests.unit[nests.rows]
    was = rules._SMALL
    try:
        rules._SMALL = dims.size
        wide = rules.tile_coverage(nests.full, unit, dims, counts)
        rules._SMALL = 0
        narrow = rules.tile_coverage(nests.full, unit, dims, counts)
    finally:
        rules._SMALL = was
    np.testing.assert_array_equal(wide.steps, narrow.steps)
    np.testing.assert_array_equal(wide.covered, narrow.covered)
    np.testing.assert_array_equal(wide.ok, narrow.ok)
