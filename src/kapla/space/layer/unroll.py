"""Spatial choices of one memory level: which loops its array of units unrolls.

A level's unroll (:meth:`kapla.arch.spec.ArchSpec.unroll_of`) says which
loops may be spread over its ``array``; this module lists the choices for a
block of the layer (``extents``: what one unit of the next level out must
cover):

* a PE-mapping template (level 0): the template's mappings, which also fix
  the unit block and some innermost loops;
* ``partition`` (the node level): TANGRAM's hybrid partitions over
  ``N G C K Y X`` using every node; when none exists (a layer too small for
  its block of nodes), partitions of the largest smaller blocks, leaving
  nodes idle;
* ``free``: on each axis of the array, one loop dim, or two where one alone
  cannot fill the axis, spreading evenly (at most 10 % padding), and of those
  the ones that use the most units;
* ``U|V``: the same, with the rows unrolling only ``U`` dims and the columns
  only ``V`` dims; ``+repl`` lets what is left of an axis unroll any other dim.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from kapla.arch.spec import ArchSpec
from kapla.arch.unroll import Unroll
from kapla.dataflow.directives import Loop, Stack
from kapla.dataflow.mapping import PeMapping, covered_extents, pe_mappings, relaxed
from kapla.dataflow.tensors import DIM_INDEX, DIMS, as_block, tensor_roles
from kapla.memo import IdentityMemo
from kapla.model.hardware import hardware
from kapla.model.rules import block_words, fits
from kapla.space.layer.skeletons import PARTITION_DIMS, NodePartition, partitions_by_nodes, splits_evenly
from kapla.workload.layer import Layer

#: Most loop dims one axis of a ``free`` or ``U|V`` array unrolls.
MAX_DIMS_PER_AXIS = 2


@dataclass(frozen=True)
class Spatial:
    """One level's spatial choice: its stacks and, for a template, the unit
    block and innermost loops it fixes."""

    stacks: tuple[Stack, ...] = ()
    unit: tuple[tuple[str, int], ...] = ()
    inner: tuple[Loop, ...] = ()
    note: str = ""
    relaxed: bool = False  # a template's mapping with its fixed loops or unit left to loop blocking

    def covered(self) -> dict[str, int]:
        """Extent of each dim one pass of the level's units covers."""
        return covered_extents(self.unit, self.stacks, self.inner)

    @cached_property
    def covered_row(self) -> tuple[int, ...]:
        """:meth:`covered` per dim in DIMS order (kept: a choice serves many blocks and solves)."""
        covered = self.covered()
        return tuple(covered.get(d, 1) for d in DIMS)

    @cached_property
    def unit_row(self) -> np.ndarray:
        """``(8,)`` its unit block per dim, in DIMS order (read-only: shared by the frames built on it)."""
        given = dict(self.unit)
        row = np.array([given.get(d, 1) for d in DIMS], dtype=np.int64)
        row.setflags(write=False)
        return row

    @cached_property
    def inner_columns(self) -> tuple[tuple[int, int], ...]:
        """Its fixed loops as (dim column, count), outermost first."""
        return tuple((DIM_INDEX[lp.dim], lp.count) for lp in self.inner)

    @cached_property
    def coverage_loops(self) -> tuple[list[int], list[int]]:
        """Its loops innermost first as the coverage rule walks them past the unit (its
        stacks, then its fixed loops), as dim columns and counts (kept: a node
        partition's choice serves many frames, and many solves)."""
        inner = self.inner[::-1]
        return ([DIM_INDEX[st.dim] for st in self.stacks] + [DIM_INDEX[lp.dim] for lp in inner],
                [st.count for st in self.stacks] + [lp.count for lp in inner])

    @cached_property
    def stack_lists(self) -> tuple[list[int], list[int], list[int]]:
        """Its stacks' dim columns, rows and columns of units, as lists (worked out once:
        one choice is shared by the many frames built on it, each costed as arrays of these)."""
        return ([DIM_INDEX[s.dim] for s in self.stacks], [s.rows for s in self.stacks],
                [s.cols for s in self.stacks])

    def describe(self) -> str:
        text = " ".join(f"{s.dim}{s.count}" for s in self.stacks) or "-"
        return f"{text} ({self.note})" if self.note else text


def spatial_options(arch: ArchSpec, level: int, layer: Layer, extents: Mapping[str, int],
                    relax: bool = True) -> list[Spatial]:
    """The spatial choices of ``level`` for a block of ``extents`` (``relax``: with a template's relaxed
    mappings where its fixed blocks do not fit)."""
    unroll = arch.unroll_of(level)
    array = arch.levels[level].array
    if unroll.kind == "template":
        assert unroll.template is not None
        mappings = pe_mappings(unroll.template, layer, extents, array, arch.counting.streams_rows)
        out = [_template_choice(m) for m in mappings]
        if relax and not any(_fixed_blocks_fit(arch, layer, sp) for sp in out):
            # whole rows or filters do not fit: strips and partial filters, left to loop blocking
            out = [s for m, sp in zip(mappings, out, strict=True)
                   for s in [sp] + [_template_choice(v, relaxed=True) for v in relaxed(m)]]
        return out
    if array == (1, 1):
        return [Spatial()]
    if unroll.kind == "partition":
        return next(partition_options(extents, array))
    return _axis_options(unroll, extents, array)


#: A template's mappings as spatial choices, one object per mapping: the blocks of a
#: layer's node partitions, and of its solves in other contexts, are many (GoogLeNet's
#: training DAG: 210,000 mappings made) but their mappings few (1,045 distinct), and a
#: choice works out what it gives once (its loops, unit row), told by identity.
_choices: dict[tuple[PeMapping, str, bool], Spatial] = {}
_CHOICES_KEPT = 1 << 14  # choices kept at most (all are dropped when full: a bound on memory)


def _template_choice(m: PeMapping, relaxed: bool = False) -> Spatial:
    key = (m, m.note, relaxed)  # a mapping's note is not part of its value, but is of the choice's
    found = _choices.get(key)
    if found is None:
        if len(_choices) >= _CHOICES_KEPT:
            _choices.clear()
        found = _choices[key] = Spatial(m.stacks, m.unit, m.inner, m.note, relaxed)
    return found


def partition_options(extents: Mapping[str, int], array: tuple[int, int]) -> Iterator[list[Spatial]]:
    """A node level's spatial choices for a block of ``extents``: its partitions using
    every node of ``array`` (:func:`~kapla.space.layer.skeletons.partitions_by_nodes`),
    then, for whoever asks on, those of ever smaller blocks of nodes; at least one
    choice, no partition, if no block of nodes has any."""
    given = False
    for partitions in partitions_by_nodes(extents, array):
        given = True
        yield list(_as_spatial(partitions))
    if not given:
        yield [Spatial(note="partition")]


#: Per kept tuple of node partitions (by identity, the tuple kept beside its choices so
#: its id stays its own), their spatial choices: a layer's solves in other contexts on
#: a region of the same shape ask for the same hundreds of partitions again (GoogLeNet's
#: training DAG: 48 % of the asks, 400 tuples of 120 choices each for the whole network).
_spatial_of: dict[int, tuple[tuple[NodePartition, ...], tuple[Spatial, ...]]] = {}
_SPATIAL_KEPT = 1 << 10  # tuples kept at most (all are dropped when full: a bound on memory)


def _as_spatial(partitions: tuple[NodePartition, ...]) -> tuple[Spatial, ...]:
    kept = _spatial_of.get(id(partitions))
    if kept is None or kept[0] is not partitions:
        if len(_spatial_of) >= _SPATIAL_KEPT:
            _spatial_of.clear()
        kept = _spatial_of[id(partitions)] = (partitions, tuple(Spatial(p.stacks, note="partition")
                                                                 for p in partitions))
    return kept[1]


_fit_memo = IdentityMemo()


def _fixed_blocks_fit(arch: ArchSpec, layer: Layer, choice: Spatial) -> bool:
    """The smallest blocks a template mapping fixes fit (``choice``: the mapping as a
    spatial choice): its unit in one PE's buffer, and one pass of the PE array in the
    buffer above."""
    # the same mapping blocks recur under many node partitions of a layer: kept per
    # spec (compared by identity: hashing a spec walks all its fields) and choice (by
    # identity, the choice kept beside its answer so its id stays its own)
    known = _fit_memo.of(arch)
    key = (id(choice), layer)
    found = known.get(key)
    if found is None:
        found = known[key] = (choice, _blocks_fit(arch, layer, tuple(sorted(dict(choice.unit).items())),
                                                  tuple(sorted(choice.covered().items()))))
    return found[1]


def _blocks_fit(arch: ArchSpec, layer: Layer, unit: tuple[tuple[str, int], ...],
                one_pass: tuple[tuple[str, int], ...]) -> bool:
    hw = hardware(arch)
    roles = tensor_roles(layer)
    if not fits(block_words(as_block(dict(unit)), layer, roles, hw, 0), hw, 0):
        return False
    if hw.onchip < 2:
        return True
    return bool(fits(block_words(as_block(dict(one_pass)), layer, roles, hw, 1), hw, 1))


def _axis_options(unroll: Unroll, extents: Mapping[str, int], array: tuple[int, int]) -> list[Spatial]:
    rows_dims = unroll.rows if unroll.kind == "dims" else DIMS
    cols_dims = unroll.cols if unroll.kind == "dims" else DIMS
    by_rows = axis_splits(extents, array[0], rows_dims)
    by_cols = axis_splits(extents, array[1], cols_dims)
    out = []
    for r, c in itertools.product(by_rows, by_cols):
        if unroll.replicate:
            r = _replicate(r, extents, array[0], c)
            c = _replicate(c, extents, array[1], r)
        total: dict[str, int] = {}
        for d, n in r + c:
            total[d] = total.get(d, 1) * n
        if not all(splits_evenly(extents[d], n) for d, n in total.items()):
            continue
        stacks = tuple(Stack(d, n, 1) for d, n in r) + tuple(Stack(d, 1, n) for d, n in c)
        out.append(Spatial(stacks, note=unroll.text))
    return _best_used(out) or [Spatial()]


def axis_splits(extents: Mapping[str, int], size: int, dims: Sequence[str],
                most: int = MAX_DIMS_PER_AXIS) -> list[tuple[tuple[str, int], ...]]:
    """Ways to spread at most ``most`` of ``dims`` over ``size`` units (each
    evenly), keeping those that use the most units."""
    dims = [d for d in dims if extents.get(d, 1) > 1]
    best: list[tuple[tuple[str, int], ...]] = [()]
    used = 1
    for k in range(1, most + 1):
        for combo in itertools.combinations(dims, k):
            for counts in itertools.product(*(range(2, min(size, extents[d]) + 1) for d in combo)):
                n = math.prod(counts)
                if n > size or n < used or not all(splits_evenly(extents[d], c)
                                                   for d, c in zip(combo, counts, strict=True)):
                    continue
                if n > used:
                    best, used = [], n
                best.append(tuple(zip(combo, counts, strict=True)))
        if used == size:
            break  # two dims only where one cannot fill the axis
    return best


def _replicate(axis: tuple[tuple[str, int], ...], extents: Mapping[str, int], size: int,
               other: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    """Fill what is left of an axis with one more dim (replication), if any fits."""
    left = size // max(math.prod(n for _, n in axis), 1)
    if left < 2:
        return axis
    taken = {d for d, _ in axis + other}
    for d in DIMS:
        if d in taken or extents.get(d, 1) < 2:
            continue
        n = min(left, extents[d])
        while n > 1 and not splits_evenly(extents[d], n):
            n -= 1
        if n > 1:
            return axis + ((d, n),)
    return axis


def _best_used(options: list[Spatial]) -> list[Spatial]:
    if not options:
        return []
    used = [math.prod(s.count for s in o.stacks) for o in options]
    top = max(used)
    return [o for o, u in zip(options, used, strict=True) if u == top]


__all__ = ["MAX_DIMS_PER_AXIS", "PARTITION_DIMS", "Spatial", "axis_splits", "spatial_options"]
