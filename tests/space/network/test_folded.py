"""Folded node regions: their geometry against a brute-force walk of the node array, and their allocation."""

from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.dataflow.segment import FoldedRegion, Region
from kapla.model.segment import dram_distance, region_arch
from kapla.space.network.segments import fold_allocation

MULTINODE = load_arch("multinode")


def walk(array, sources):
    """Hops from the nearest of ``sources`` to every node of the mesh, by breadth-first search."""
    rows, cols = array
    hops = {s: 0 for s in sources}
    queue = deque(sources)
    while queue:
        r, c = queue.popleft()
        for nxt in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if 0 <= nxt[0] < rows and 0 <= nxt[1] < cols and nxt not in hops:
                hops[nxt] = hops[(r, c)] + 1
                queue.append(nxt)
    return hops


def connected(cells):
    cells = set(cells)
    first = next(iter(cells))
    seen, queue = {first}, deque([first])
    while queue:
        r, c = queue.popleft()
        for nxt in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if nxt in cells and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen == cells


def path_cells(array, stripe):
    """Every node of the array in zig-zag path order, worked out by walking the stripes."""
    rows, cols = array
    out = []
    for k in range(rows // stripe):
        columns = range(cols) if k % 2 == 0 else range(cols - 1, -1, -1)
        out.extend([(k * stripe + r, c) for r in range(stripe)] for c in columns)
    return out  # one list of `stripe` nodes per path position


@st.composite
def folded_regions(draw):
    stripe = draw(st.integers(1, 4))
    stripes = draw(st.integers(1, 5))
    width = draw(st.integers(1, 9))
    positions = stripes * width
    start = draw(st.integers(0, positions - 1))
    columns = draw(st.integers(1, positions - start))
    return (stripe * stripes, width), FoldedRegion(0, stripe, width, start, columns)


@settings(max_examples=200, deadline=None)
@given(folded_regions())
def test_a_folded_region_is_the_run_of_the_path_it_names(case):
    array, region = case
    cells = region.cells()
    expected = [cell for column in path_cells(array, region.stripe)[region.start:region.start + region.columns]
                for cell in column]
    assert list(cells) == expected
    assert len(set(cells)) == len(cells) == region.nodes == region.shape[0] * region.shape[1]
    assert region.origin == cells[0]
    assert connected(cells)
    rows = {r for r, _ in cells}
    center = (sum(r for r, _ in cells) / len(cells), sum(c for _, c in cells) / len(cells))
    assert region.center == pytest.approx(center)
    assert region.folded == (len(rows) > region.stripe)
    rect = region.rectangle()
    if rect is None:
        assert region.folded
    else:
        assert set(rect.cells()) == set(cells) and rect.center == pytest.approx(center)
    # logical neighbours along the path: one hop apart, or the stripe's height at a turn
    for j in range(region.columns - 1):
        a, b = region.cell(0, j), region.cell(0, j + 1)
        hop = walk(array, [a])[b]
        turn = (region.start + j + 1) % region.width == 0
        assert hop == (region.stripe if turn else 1)


@st.composite
def segments(draw):
    height = draw(st.sampled_from([1, 2, 3, 4, 6, 8, 16]))
    width = draw(st.integers(1 if height > 1 else 2, 16))
    slots = draw(st.integers(2, min(6, height * width)))
    ops = draw(st.lists(st.integers(1, 10**7), min_size=slots, max_size=slots))
    channels = draw(st.lists(st.tuples(st.integers(0, height - 1), st.integers(0, width - 1)),
                             min_size=1, max_size=4, unique=True))
    return (height, width), ops, channels


@settings(max_examples=150, deadline=None)
@given(segments())
def test_folded_allocation_uses_each_node_once_along_one_path(case):
    array, ops, _ = case
    regions = fold_allocation(ops, array)
    assert regions is not None and len(regions) == len(ops)
    seen: set = set()
    for region in regions:
        cells = set(region.cells())
        assert len(cells) == region.nodes and not cells & seen  # every node used at most once
        assert all(0 <= r < array[0] and 0 <= c < array[1] for r, c in cells)
        assert connected(cells)  # a region is one piece of the fold
        seen |= cells
    assert len(seen) == array[0] * array[1]  # and every node used
    folded = [r for r in regions if isinstance(r, FoldedRegion)]
    # one stripe height, regions contiguous in the fold: each starts where the previous ended
    stripe = {r.stripe for r in folded} | {r.shape[0] for r in regions if isinstance(r, Region)}
    assert len(stripe) == 1
    (h,) = stripe
    order = path_cells(array, h)
    at = 0
    for region in regions:
        cells = set(region.cells())
        spots = [p for p, column in enumerate(order) if set(column) <= cells]
        assert spots == list(range(at, at + region.nodes // h))  # whole path positions, one run of them
        assert cells == {cell for p in spots for cell in order[p]}
        at += region.nodes // h
    # counts follow the work: the slot with the most work per node is no slower than one node's share allows
    slowest = max(o / r.nodes for o, r in zip(ops, regions, strict=True))
    assert slowest <= max(ops) / min(r.nodes for r in regions) + 1e-9
    assert sum(ops) / (slowest * array[0] * array[1]) <= 1 + 1e-9


@settings(max_examples=150, deadline=None)
@given(segments())
def test_distances_of_folded_regions_equal_a_walk_of_the_array(case):
    array, ops, channels = case
    arch = MULTINODE.replace(levels=[*MULTINODE.to_dict()["levels"][:-2],
                                     {**MULTINODE.to_dict()["levels"][-2], "array": list(array)},
                                     MULTINODE.to_dict()["levels"][-1]],
                             dram_channels=[list(c) for c in channels])
    hops = walk(array, [tuple(c) for c in channels])
    regions = fold_allocation(ops, array)
    assert regions is not None
    for region in regions:
        cells = region.cells()
        assert dram_distance(arch, region) == pytest.approx(sum(hops[c] for c in cells) / len(cells))
        local = region_arch(arch, region)
        assert local.node_array == region.shape and local.num_nodes == region.nodes
    for a in regions:
        for b in regions:
            ca, cb = a.cells(), b.cells()
            mean_a = (sum(r for r, _ in ca) / len(ca), sum(c for _, c in ca) / len(ca))
            mean_b = (sum(r for r, _ in cb) / len(cb), sum(c for _, c in cb) / len(cb))
            # the forwarding distance: hops between the regions' mean nodes, walked on the mesh
            assert a.distance(b) == pytest.approx(abs(mean_a[0] - mean_b[0]) + abs(mean_a[1] - mean_b[1]))


def test_mlp_l_counts_follow_the_work():
    """MLP-L's four layers on 16x16 nodes: 94/120/40/2 by nn_dataflow's allocation;
    kapla's unit of 4 nodes keeps every slot at least 95 % as busy as the busiest."""
    ops = [784 * 1500, 1500 * 1000, 1000 * 500, 500 * 10]
    regions = fold_allocation(ops, (16, 16))
    assert regions is not None
    assert [r.nodes for r in regions] == [92, 120, 40, 4]
    assert [r.folded for r in regions] == [True, True, False, False]
    assert fold_allocation([5], (4, 4)) is None and fold_allocation([1] * 17, (4, 4)) is None
