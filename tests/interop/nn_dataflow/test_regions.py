"""Where nn_dataflow ran each layer, placed as kapla's regions (kapla.interop.nn_dataflow.regions)."""

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kapla.dataflow.segment import FoldedRegion, Region
from kapla.interop.nn_dataflow.reader import NodeRegion, read_nn_dataflow
from kapla.interop.nn_dataflow.regions import _cells, layer_regions

DATA = Path(__file__).resolve().parent / "data"


def allocated(requests, height, width):
    """nn_dataflow's stripe-wise zig-zag allocation of ``requests`` nodes on a ``height`` x ``width``
    region at (0, 0), as its NodeRegion.allocate documents it: each request's region record."""
    stripe = math.gcd(height, *requests)
    out, row, col, right = [], 0, 0, True
    for req in requests:
        cols = req // stripe
        if right:
            out.append(NodeRegion(dim=(stripe, cols), origin=(row, col), type=0, wtot=width,
                                  wbeg=min(width - col, cols)))
        else:
            out.append(NodeRegion(dim=(stripe, cols), origin=(row, width - col - 1), type=0, wtot=width,
                                  wbeg=-min(width - col, cols)))
        col += cols
        while col >= width:
            col -= width
            row += stripe
            right = not right
    return stripe, out


@settings(max_examples=200, deadline=None)
@given(data=st.data(), side=st.sampled_from([(4, 4), (8, 8), (16, 16), (6, 10)]))
def test_kaplas_folded_regions_hold_the_nodes_nn_dataflow_allocates(data, side):
    height, width = side
    stripe = data.draw(st.sampled_from([s for s in (1, 2, 4, 8, 16) if height % s == 0]))
    columns = data.draw(st.lists(st.integers(1, height * width // stripe), min_size=1, max_size=5)
                        .filter(lambda cs: sum(cs) * stripe <= height * width))
    requests = [c * stripe for c in columns]
    stripe_used, records = allocated(requests, height, width)
    start, seen = 0, set()
    for req, record in zip(requests, records, strict=True):
        region = FoldedRegion(0, stripe_used, width, start, req // stripe_used)
        start += region.columns
        cells = set(region.cells())
        assert cells == _cells(record)  # the same nodes as nn_dataflow's own placement
        assert len(cells) == req and not cells & seen  # each node used at most once
        assert all(0 <= r < height and 0 <= c < width for r, c in cells)
        seen |= cells
        rect = region.rectangle()
        assert rect is None or set(rect.cells()) == cells


@pytest.mark.parametrize(("name", "shapes"), [
    ("nn_dataflow_mlp_m_tangram.json", [(2, 71), (2, 45), (2, 11), (2, 1)]),
    ("nn_dataflow_mlp_s_tangram.json", [(4, 48), (4, 15), (4, 1)]),
    ("nn_dataflow_alexnet_per_layer.json", None),
])
def test_each_layer_runs_where_nn_dataflow_put_it(name, shapes):
    """The recorded regions of layers whose output stays on chip agree with the reconstruction
    (layer_regions checks them); a layer per segment gets the whole chip."""
    run = read_nn_dataflow(DATA / name)
    regions = layer_regions(run)
    if shapes is None:
        assert set(regions.values()) == {Region((0, 0), (16, 16))}
        return
    assert [r.shape for r in regions.values()] == shapes
    cells = [set(r.cells()) for r in regions.values()]
    assert sum(map(len, cells)) == len(set().union(*cells)) <= 256
