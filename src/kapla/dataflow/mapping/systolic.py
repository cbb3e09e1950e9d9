"""Systolic, weight stationary (TPU-like ``C|K``).

Input channels go down the array's rows and output channels across its
columns; each PE keeps the weights of its (c, k) pair while input values flow
right through a row and partial sums flow down a column to neighbour PEs.
Grouped layers without channel reduction (depthwise, pooling, element-wise)
put their channel groups down the rows instead.
"""

from __future__ import annotations

from collections.abc import Mapping

from kapla.dataflow.directives import Stack
from kapla.dataflow.mapping import PeMapping, fold
from kapla.workload.layer import Layer


def systolic(layer: Layer, extents: Mapping[str, int], pe_array: tuple[int, int]) -> list[PeMapping]:
    rows, cols = pe_array
    down = "C" if extents["C"] > 1 else "G"
    stacks = []
    if extents[down] > 1:
        stacks.append(Stack(down, fold(extents[down], rows)[0], 1))
    if extents["K"] > 1:
        stacks.append(Stack("K", 1, fold(extents["K"], cols)[0]))
    unit = tuple((d, extents[d]) for d in ("S", "R") if extents[d] > 1)
    # The fmap streams through the array; how its rows and columns are blocked
    # is left to loop blocking.
    return [PeMapping("systolic", unit, tuple(stacks), note=f"{down}|K")]
