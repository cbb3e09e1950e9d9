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
