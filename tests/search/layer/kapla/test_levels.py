"""The any-depth descent's refinement neighbourhoods (kapla.search.layer.kapla.levels)."""

from pathlib import Path

import numpy as np
import pytest

from kapla.arch import load_arch
from kapla.search.layer.kapla import levels
from kapla.space.layer.frames import factor_combos
from kapla.space.layer.layer_space import LayerSpace
from kapla.space.problem import Problem
from kapla.workload.layer import Layer, Op

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"
ND = 8


@pytest.mark.parametrize("design", ["four_level_pe_buffer", "four_level_l2", "eyeriss_lbuf", "simba", "multinode"])
def test_three_level_splits_keep_each_dims_product_and_fit(design):
    """Every candidate of ``_resplits`` moves factors only among three adjacent
    loop levels (their product per dim, and every other slot, unchanged),
    fits every buffer, and keeps the point's orders; hierarchies with fewer
    than three loop levels get none."""
    path = EXAMPLES / f"{design}.yaml"
    arch = load_arch(str(path) if path.exists() else design)
    layer = Layer("pw", Op.CONV, c=64, k=128, h=14, w=14, s=1, r=1)
    space = LayerSpace(Problem(layer, 1, arch))
    rng = np.random.default_rng(0)
    checked = 0
    for frame in range(min(len(space), 6)):
        ev = space.evaluator(frame)
        units, counts = factor_combos(ev)
        for row in rng.choice(len(units), size=min(len(units), 5), replace=False):
            orders = tuple(np.arange(ND, dtype=np.int64) for _ in range(ev.levels))
            point = levels._Point(units[row], tuple(c[row] for c in counts), orders)
            nb = levels._resplits(ev, point)
            checked += 1
            if ev.levels < 3:
                assert nb is None
                continue
            assert nb is not None
            slots = np.stack([point.unit, *point.counts])
            cand = np.stack([nb.unit, *nb.counts], axis=1)
            assert any((c == slots).all() for c in cand)  # the point itself is one of its splits
            fits = np.ones(len(cand), dtype=bool)
            for level in range(ev.levels):
                fits &= ev.fits(level, ev.block(level, cand[:, 0], [cand[:, j + 1] for j in range(level)]))
            assert fits.all()
            for c in cand:
                trios = [[a, a + 1, a + 2] for a in range(1, ev.levels - 1)]
                moved = [t for t in trios
                         if (np.delete(c, t, axis=0) == np.delete(slots, t, axis=0)).all()
                         and (c[t].prod(axis=0) == slots[t].prod(axis=0)).all()]
                assert moved
            for m in range(ev.levels):
                assert (nb.orders[m] == orders[m]).all()
    assert checked
