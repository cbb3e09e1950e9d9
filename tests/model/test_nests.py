"""The cost model's view of nests (kapla.model.nests)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kapla.model import nests as nests_module
from kapla.model.nests import ND, Loops


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 40), st.integers(0, 20))
def test_loop_factors_are_the_product_of_each_dims_counts(seed, rows, width):
    # few loop columns are multiplied out all at once, many column by column: either way
    # each dim's factor is the product of the counts of its loops (the plain statement)
    rng = np.random.default_rng(seed)
    loops = Loops(rng.integers(0, ND, (rows, width)), rng.integers(1, 9, (rows, width)))
    want = np.ones((rows, ND), dtype=np.int64)
    for r in range(rows):
        for d, n in zip(loops.dims[r], loops.counts[r], strict=True):
            want[r, d] *= n
    was = nests_module._FEW_COLUMNS
    try:
        for few in (loops.dims.size, 0):
            nests_module._FEW_COLUMNS = few
            got = loops.factors()
            assert got.dtype == np.int64 and np.array_equal(got, want)
    finally:
        nests_module._FEW_COLUMNS = was
