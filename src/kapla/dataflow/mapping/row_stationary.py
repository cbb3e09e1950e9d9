"""Row stationary (Eyeriss): each PE convolves one filter row with one input row.

Filter rows (``S``) go down the PE array's rows and output rows (``Y``) across
its columns, so an input row is shared diagonally and partial sums accumulate
down a column. Each PE holds one filter row (``R``) and slides over the output
row (``X``) with one new input element per step. A dimension larger than the
array is folded (temporal loops fixed innermost); spare rows replicate the
mapping over input channels or filters, spare columns over samples or filters.
Loop blocking decides the rest (channels, filters and samples).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from kapla.dataflow.directives import Loop, Stack
from kapla.dataflow.mapping import PeMapping, fold
from kapla.workload.layer import Layer


def row_stationary(layer: Layer, extents: Mapping[str, int], pe_array: tuple[int, int]) -> list[PeMapping]:
    rows, cols = pe_array
    s_rows, s_folds = fold(extents["S"], rows)
    y_cols, y_folds = fold(extents["Y"], cols)
    spare_rows, spare_cols = rows // s_rows, cols // y_cols
    # what spare rows and columns replicate over, and how far: the blocks of a layer's node
    # partitions differ mostly in channels, filters and samples, which change the mappings only
    # through these (GoogLeNet's training DAG: 30,000 blocks, 400 distinct sets of mappings)
    over_rows = tuple((d, fold(extents[d], spare_rows)[0]) for d in ("C", "K") if spare_rows > 1 and extents[d] > 1)
    over_cols = tuple((d, fold(extents[d], spare_cols)[0]) for d in ("N", "K") if spare_cols > 1 and extents[d] > 1)
    return list(_mappings(s_rows, s_folds, y_cols, y_folds, extents["X"], extents["R"], over_rows, over_cols))


@lru_cache(maxsize=1 << 12)
def _mappings(s_rows: int, s_folds: int, y_cols: int, y_folds: int, x: int, r: int,
              over_rows: tuple[tuple[str, int], ...], over_cols: tuple[tuple[str, int], ...]
              ) -> tuple[PeMapping, ...]:
    base = [Stack("Y", 1, y_cols), Stack("S", s_rows, 1)]
    # Output-row folds outermost, then filter-row folds (partial sums of a row
    # strip accumulate over them), then the row itself, one output per step.
    inner = tuple(Loop(d, n) for d, n in (("Y", y_folds), ("S", s_folds), ("X", x)) if n > 1)
    unit = (("R", r),)
    out = []
    for rd, row_units in over_rows or ((None, 1),):
        for cd, col_units in over_cols or ((None, 1),):
            stacks = list(base)
            if rd is not None:
                stacks.append(Stack(rd, row_units, 1))
            if cd is not None and cd != rd:
                stacks.append(Stack(cd, 1, col_units))
            out.append(PeMapping("row_stationary", unit, tuple(stacks), inner,
                                 note=f"replicate rows over {rd or '-'}, columns over {cd or '-'}"))
    return tuple(out)
