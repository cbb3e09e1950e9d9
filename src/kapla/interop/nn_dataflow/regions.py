"""Where nn_dataflow ran each layer: its node regions, as kapla's regions.

nn_dataflow gives each segment the whole processing region and splits it
among the segment's spatial stages stripe by stripe: the stripe height is
the greatest common divisor of the region's height and the stages' node
counts, each stage takes its nodes as that many rows by the rest in
columns, and the stages follow one another along a zig-zag path (left to
right over the first stripe, right to left over the next, ...), a stage
wider than what is left of a stripe folding into the next. That is
kapla's :class:`~kapla.dataflow.segment.FoldedRegion` (a rectangle where it
does not turn). A layer whose output stays on chip records its region in
its output layout: those must agree with the reconstruction.
"""

from __future__ import annotations

import math
from collections import defaultdict

from kapla.dataflow.segment import AnyRegion, FoldedRegion
from kapla.errors import InteropError
from kapla.interop.nn_dataflow.reader import NnDataflowRun, NodeRegion


class RegionError(InteropError):
    """An nn_dataflow run whose node regions kapla cannot place."""


def layer_regions(run: NnDataflowRun) -> dict[str, AnyRegion]:
    """Each layer's nodes on the chip (in ``run.schedules`` order)."""
    proc = run.resource.proc_region
    if proc.dist != (1, 1) or proc.origin[1] != 0:
        raise RegionError(f"{run.source}: resource.proc_region: only a region of adjacent nodes from the "
                          f"array's first column can be placed (origin {proc.origin}, dist {proc.dist})")
    stages: dict[int, dict[int, int]] = defaultdict(dict)  # segment -> spatial stage -> nodes
    for name, s in run.schedules.items():
        seg, spatial, _ = s.sched_seq
        known = stages[seg].setdefault(spatial, s.num_nodes)
        if known != s.num_nodes:
            raise RegionError(f"{run.source}: schedules.{name}.num_nodes: {s.num_nodes} nodes, but its spatial "
                              f"stage's other layers have {known}")
    placed: dict[tuple[int, int], AnyRegion] = {}
    for seg, nodes in stages.items():
        order = sorted(nodes)
        stripe = math.gcd(proc.dim[0], *(nodes[sp] for sp in order))
        start = 0
        for sp in order:
            region = FoldedRegion(proc.origin[0], stripe, proc.dim[1], start, nodes[sp] // stripe)
            placed[(seg, sp)] = region.rectangle() or region
            start += region.columns
    out = {name: placed[(s.sched_seq[0], s.sched_seq[1])] for name, s in run.schedules.items()}
    for name, s in run.schedules.items():
        for recorded in s.ofmap_layout.regions:
            if recorded.type == 0 and _cells(recorded) != set(out[name].cells()):
                raise RegionError(f"{run.source}: schedules.{name}: its output layout's region "
                                  f"{recorded.dim} at {recorded.origin} (wbeg {recorded.wbeg}) is not where "
                                  "nn_dataflow's allocation puts the layer")
    return out


def _cells(region: NodeRegion) -> set[tuple[int, int]]:
    """The nodes of an nn_dataflow region, folded or not (its zig-zag path, as :class:`FoldedRegion` walks it)."""
    (h, w), (r0, c0), wtot, wbeg = region.dim, region.origin, region.wtot, region.wbeg
    cells = set()
    for j in range(w):
        turns, offset = divmod(j + wtot - abs(wbeg), wtot)
        rightward = (wbeg > 0) == (turns % 2 == 0)
        col = offset if rightward else wtot - 1 - offset
        first = wtot - wbeg if wbeg > 0 else -wbeg - 1  # the column of the path's boundary before the origin
        for r in range(h):
            cells.add((r0 + turns * h + r, c0 + col - first))
    return cells


__all__ = ["RegionError", "layer_regions"]
