"""The reload sweep of :mod:`kapla.model.traffic` against the loop nest read one nest at a time.

The model finds, for each tensor and level, the innermost loop above the
level that iterates and that the tensor depends on, level by level and for
all nests at once (the level's own loops first, the levels above only for
the nests whose level has none). Here the same is read off each nest's loops
written out outermost first, as the module docstring defines it: what every
loop up to that one multiplies to, and for an input window the loop's count
and how far it moves the window.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kapla.dataflow.tensors import RELEVANT_MASK, WINDOW_AXIS, Kind
from kapla.model.traffic import _Loops, _sweep
from tests.model.random_nests import random_nests

SHIFT = np.array([0, 0, 0, 0, 1, 1, 1, 1])  # stride and dilation 1: a window moves by the loop's step


def _by_hand(nests, kind, level, m):
    """(upto, dim, count, step, its level) of nest ``m``'s innermost loop above
    ``level`` that iterates over a dim ``kind`` depends on, or None if none does."""
    f = int(nests.rows[m])
    loops = []  # (level, dim, count), outermost first
    for lvl in range(nests.levels - 1, level - 1, -1):
        up = nests.updates[lvl]
        loops += [(lvl, int(d), int(c)) for d, c in zip(up.dims[m], up.counts[m], strict=True)]
    last = max((k for k, (_, d, c) in enumerate(loops) if RELEVANT_MASK[kind][d] and c > 1), default=None)
    if last is None:
        return None
    lvl, dim, count = loops[last]
    upto = int(np.prod([c for _, _, c in loops[:last + 1]]))
    inside = int(np.prod([c for k, (at, d, c) in enumerate(loops) if k > last and at == lvl and d == dim]))
    reach = int((nests.nominal_tiles[lvl] * nests.spatial[lvl])[f, dim])
    return upto, dim, count, reach * inside, lvl


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans(), st.integers(1, 3))
def test_the_sweep_finds_each_nests_innermost_reloading_loop(seed, repeat_dims, levels):
    nests = random_nests(seed, repeat_dims, levels)
    loops = _Loops(nests)
    for kind in (Kind.IFM, Kind.WGT, Kind.OFM):
        for level in range(nests.levels):
            sw = _sweep(kind, nests, level, SHIFT, loops)
            for m in range(len(nests)):
                want = _by_hand(nests, kind, level, m)
                if want is None:
                    assert not sw.has[m] or sw.upto[m] == 1
                    continue
                assert sw.has[m]
                upto, dim, count, step, _ = want
                assert sw.upto[m] == upto
                if kind == Kind.IFM and WINDOW_AXIS[dim] >= 0:
                    assert sw.slides is not None and sw.slides[m]
                    assert (sw.count[m], sw.step[m]) == (count, step)
                elif sw.slides is not None:
                    assert not sw.slides[m]


def test_the_samples_reach_every_path():
    """The property above is not vacuous: nests whose innermost reloading loop
    lies a level up from the one asked about, and nests looping twice over a
    dimension at one level (the step of a loop is what everything inside it
    covers: by hand, the loops of its dim inside it count)."""
    above = twice = 0
    for seed in range(80):
        nests = random_nests(seed, True, 3)
        for m in range(len(nests)):
            for level in range(nests.levels):
                want = _by_hand(nests, Kind.IFM, level, m)
                if want is not None:
                    above += want[4] > level
            twice += not nests.order_free
    assert above and twice
