"""Data movement a directive scheme implies, derived from the directives alone.

For every boundary between an on-chip level ``i`` and its parent ``i + 1``
(DRAM above the outermost buffer) and every tensor, this module counts words
(KAPLA Sec. III-B: sizes from ``tensor``, parallelism from ``stack``, access
counts from ``update`` and ``tensor`` together):

* **fills**: words written into the level-``i`` buffers, summed over units.
  A unit re-loads its block whenever a temporal loop above it that the
  tensor depends on advances; loops the tensor does not depend on reuse the
  block, unless they enclose one that does. When the advancing loop slides a
  window (``Y``/``X``/``S``/``R`` of an input fmap), only the new rows or
  columns are loaded.
* **reads**: words the parent reads to serve those fills. Units stacked over
  dimensions the tensor does not depend on receive the same data, which the
  parent reads once and multicasts; overlapping windows of neighbouring units
  are read once.
* for a tensor the layer **writes**, ``fills`` are partial sums read back and
  ``writebacks`` the blocks written out; units stacked over dimensions the
  output does not depend on (a reduction) are combined before they reach the
  parent, which sees ``parent_writes`` / ``parent_reads``.
* **shared**: with buffer sharing (``shr``), a group of units stores one copy
  of a block; each unit gets ``1/shr`` of it from the parent and the rest from
  its neighbours (``rotated`` words).

The numbers are pure functions of the scheme; costs per word live in
:mod:`kapla.model`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from kapla.dataflow.directives import LayerScheme, Loop
from kapla.dataflow.tensors import RELEVANT, Kind, footprint, ifm_extent, window
from kapla.workload.layer import Layer

_WINDOW_AXIS = {"Y": 0, "S": 0, "X": 1, "R": 1}


@dataclass(frozen=True, slots=True)
class TensorTraffic:
    """Words of one tensor crossing one boundary (all units of the level together)."""

    tensor: str
    kind: Kind
    written: bool
    fills: float  # into child buffers from the parent (for outputs: partial sums read back)
    parent_reads: float  # parent-side reads serving the fills (multicast counted once)
    writebacks: float = 0.0  # out of child buffers (outputs only)
    parent_writes: float = 0.0  # parent-side writes after reduction (outputs only)
    rotated: float = 0.0  # words passed between neighbour units (buffer sharing)
    reduced: float = 0.0  # partial sums combined between neighbour units
    copies: int = 1  # same-shaped operands counted together (element-wise inputs)


@dataclass(frozen=True, slots=True)
class BoundaryTraffic:
    """All tensors crossing the boundary between level ``child`` and the next one out."""

    child: int
    units: int  # child units in use
    parent_units: int
    tensors: tuple[TensorTraffic, ...]


def _block_volume(kind: Kind, block: Mapping[str, int], layer: Layer, loops: tuple[Loop, ...],
                  steps: Mapping[int, int]) -> tuple[float, int]:
    """Words loaded to keep ``block`` current through ``loops`` (outermost first),
    and how many distinct blocks those loops visit."""
    relevant = RELEVANT[kind]
    size = footprint(kind, block, layer)
    # A loop of one iteration changes nothing, so it cannot be the one that reloads.
    last = max((j for j, lp in enumerate(loops) if lp.dim in relevant and lp.count > 1), default=None)
    distinct = math.prod(lp.count for lp in loops if lp.dim in relevant)
    if last is None:
        return float(size), distinct
    outer = math.prod(lp.count for lp in loops[:last])
    sweep = loops[last]
    if kind == Kind.IFM and sweep.dim in _WINDOW_AXIS and sweep.count > 1:
        axis = _WINDOW_AXIS[sweep.dim]
        extent = ifm_extent(block, layer)[axis]
        stride = layer.stride[axis] if sweep.dim in "YX" else layer.dilation[axis]
        shift = steps[last] * stride
        whole = ifm_extent({d: layer_extent(layer, d) for d in "YXSR"}, layer)[axis]
        union = min(extent + (sweep.count - 1) * min(extent, shift), whole)
        return outer * size / extent * union, distinct
    return float(outer * sweep.count * size), distinct


def layer_extent(layer: Layer, dim: str) -> int:
    return layer.loops[dim]


def _steps(scheme: LayerScheme, index: int) -> dict[int, int]:
    """Step (in loop-dim units) of each temporal loop above level ``index``, keyed by position."""
    steps: dict[int, int] = {}
    pos = 0
    for lvl_index in range(len(scheme.levels) - 1, index - 1, -1):
        lvl = scheme.levels[lvl_index]
        reach = {d: scheme.nominal_tile(lvl_index)[d] * lvl.factor(d, spatial=True) for d in "NGCKYXSR"}
        inner_first = []
        for loop in reversed(lvl.updates):
            inner_first.append(reach[loop.dim])
            reach[loop.dim] *= loop.count
        for step in reversed(inner_first):
            steps[pos] = step
            pos += 1
    return steps


def boundary_traffic(scheme: LayerScheme, index: int) -> BoundaryTraffic:
    """Traffic between on-chip level ``index`` and its parent."""
    layer = scheme.layer
    lvl = scheme.levels[index]
    loops = scheme.temporal_loops(index)
    steps = _steps(scheme, index)
    child = scheme.tile(index)
    full = scheme.dims
    # a group of units never holds more of a dimension than the layer has (padding is not data)
    group = {d: min(child[d] * lvl.factor(d, spatial=True), full[d]) for d in child}
    parent_units = math.prod(lv.parallelism for lv in scheme.levels[index + 1:])
    units = parent_units * lvl.parallelism
    out = []
    for role in scheme.roles:
        vol_child, distinct = _block_volume(role.kind, child, layer, loops, steps)
        vol_group, _ = _block_volume(role.kind, group, layer, loops, steps)
        per_block = footprint(role.kind, child, layer)
        group_block = footprint(role.kind, group, layer)
        copies = role.copies
        shr = lvl.sharing(role.kind)
        if role.written:
            writebacks = units * vol_child * copies
            first = units * distinct * per_block * copies
            parent_writes = parent_units * vol_group * copies
            parent_first = parent_units * distinct * group_block * copies
            out.append(TensorTraffic(
                role.name, role.kind, True,
                fills=writebacks - first,
                parent_reads=parent_writes - parent_first,
                writebacks=writebacks,
                parent_writes=parent_writes,
                reduced=writebacks - parent_writes,
                copies=copies,
            ))
            continue
        fills = units * vol_child * copies
        out.append(TensorTraffic(
            role.name, role.kind, False,
            fills=fills / shr,
            parent_reads=parent_units * vol_group * copies,
            rotated=fills * (shr - 1) / shr,
            copies=copies,
        ))
    return BoundaryTraffic(index, units, parent_units, tuple(out))


def scheme_traffic(scheme: LayerScheme) -> tuple[BoundaryTraffic, ...]:
    """Traffic across every boundary, innermost first (the last one is with DRAM)."""
    return tuple(boundary_traffic(scheme, i) for i in range(len(scheme.levels)))


__all__ = ["BoundaryTraffic", "TensorTraffic", "boundary_traffic", "scheme_traffic", "window"]
