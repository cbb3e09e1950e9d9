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

from kapla.model.nests import Loops, Nests, Stacks
from kapla.model.rules import coverage, coverage_ok
from kapla.workload.layer import Layer, Op

LAYER = Layer("L", Op.CONV, c=6, k=4, h=6, w=6, s=3, r=3, pad=(1, 1, 1, 1))


def _split(rng, n: int, parts: int) -> list[int]:
    """``n`` as a product of ``parts`` random divisors."""
    out = []
    for _ in range(parts - 1):
        divs = [d for d in range(1, n + 1) if n % d == 0]
        d = int(rng.choice(divs))
        out.append(d)
        n //= d
    return out + [n]


def _nests(seed: int, repeat_dims: bool) -> Nests:
    rng = np.random.default_rng(seed)
    levels, F = 2, int(rng.integers(1, 5))
    rows = np.sort(rng.integers(0, F, size=int(rng.integers(F, 4 * F + 1))))
    rows[:F] = np.arange(F)  # every combination used
    M = len(rows)
    full = [1, 1, 6, 4, 6, 6, 3, 3]  # N G C K Y X S R of LAYER at batch 1
    # per combination and dim: unit, then per level a stack and an update count,
    # tiling the layer exactly; now and then one overruns it (idle iterations)
    slots = np.array([[_split(rng, n, 1 + 2 * levels) for n in full] for _ in range(F)])  # (F, 8, slots)
    over = rng.random((F, 8, 1 + 2 * levels)) < 0.05
    slots = slots * np.where(over, 2, 1)
    unit = slots[:, :, 0]
    ident = np.broadcast_to(np.arange(8), (F, 8))
    stacks = tuple(Stacks(ident.copy(), slots[:, :, 1 + 2 * i], np.ones((F, 8), np.int64)) for i in range(levels))
    updates = []
    for i in range(levels):
        counts = slots[:, :, 2 + 2 * i]
        dims = np.stack([rng.permutation(8) for _ in range(M)])
        cnt = np.take_along_axis(counts[rows], dims, axis=1)
        if repeat_dims:
            # a second loop over a dim this level already loops over: order now matters
            dims = np.concatenate([dims, rng.integers(0, 8, size=(F, 1))[rows]], axis=1)
            cnt = np.concatenate([cnt, rng.integers(1, 3, size=(F, 1))[rows]], axis=1)  # shared by a combination
            swap = rng.random(M) < 0.5
            dims[swap] = dims[swap][:, ::-1]
            cnt[swap] = cnt[swap][:, ::-1]
        updates.append(Loops(dims, cnt))
    return Nests(LAYER, 1, unit, stacks, tuple(updates), tuple({} for _ in range(levels)), rows)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_coverage_ok_is_coverage_per_candidate(seed, repeat_dims):
    nests = _nests(seed, repeat_dims)
    np.testing.assert_array_equal(coverage_ok(nests), coverage(nests).ok)


def test_the_samples_reach_both_answers_and_both_paths():
    """The property above is not vacuous: valid and invalid nests, order-free or not."""
    samples = [_nests(seed, repeat) for seed in range(60) for repeat in (False, True)]
    oks = np.concatenate([coverage(n).ok for n in samples])
    assert oks.any() and not oks.all()
    assert any(n.order_free for n in samples) and not all(n.order_free for n in samples)
