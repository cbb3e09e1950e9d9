"""PE-array mapping templates: how one node's PE array takes its share of a layer.

A template turns the loop extents a node must cover into the innermost
directives: the unit block one PE holds, the stacks that spread work over
the PE array, and any temporal loops the pattern fixes innermost. Everything
above is left to loop blocking. Each template is one module with one
function, named by the template's entry in the registry of
:mod:`kapla.arch.mapping`, so another template is one more module and one
registry entry.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import cast

from kapla.arch.mapping import get_pe_mapping
from kapla.dataflow.directives import Loop, Stack
from kapla.errors import ArchError
from kapla.memo import kept_hash, without_kept_hash
from kapla.workload.layer import Layer


@dataclass(frozen=True)
class PeMapping:
    """The innermost directives a template fixes for one layer on one PE array."""

    template: str
    unit: tuple[tuple[str, int], ...]
    stacks: tuple[Stack, ...]
    inner: tuple[Loop, ...] = ()  # temporal loops fixed innermost at the PE level (outermost first)
    note: str = field(default="", compare=False)

    # a layer's frames look its mappings up by value, one per block of nodes (GoogLeNet's
    # training DAG: 30,000 blocks for 400 distinct mappings, :func:`streamed_rows`)
    __hash__ = kept_hash
    __getstate__ = without_kept_hash

    @property
    def unit_dims(self) -> dict[str, int]:
        return dict(self.unit)

    def covered(self) -> dict[str, int]:
        """Loop extents one pass of the PE array covers (unit x stacks x fixed loops)."""
        return covered_extents(self.unit, self.stacks, self.inner)


def covered_extents(unit: Iterable[tuple[str, int]], stacks: Iterable[Stack], inner: Iterable[Loop]) -> dict[str, int]:
    """Extent of each dim a unit block, its stacks and fixed loops cover together."""
    out = dict(unit)
    for st in stacks:
        out[st.dim] = out.get(st.dim, 1) * st.count
    for lp in inner:
        out[lp.dim] = out.get(lp.dim, 1) * lp.count
    return out


MappingFn = Callable[[Layer, Mapping[str, int], tuple[int, int]], list[PeMapping]]


def pe_mappings(template: str, layer: Layer, extents: Mapping[str, int],
                pe_array: tuple[int, int], stream_rows: bool = False) -> list[PeMapping]:
    """Candidate innermost mappings of ``layer`` covering ``extents`` on a ``pe_array``
    (``stream_rows``: each with :func:`streamed_rows`)."""
    mappings = _mapping_fn(get_pe_mapping(template).mapping)(layer, extents, pe_array)
    return [_streamed(m, m.note) for m in mappings] if stream_rows else mappings


#: The output dims a PE streams through itself when its register file is
#: counted by its sliding window (counting ``regf_holds: window``).
STREAMED_DIMS = ("Y", "X")


def streamed_rows(mapping: PeMapping) -> PeMapping:
    """``mapping`` with the output rows its PEs slide over (its fixed loops
    over ``Y`` and ``X``) taken into the unit block: the rows are one step of
    the PE, their partial sums kept there. That is how a register file counted
    by its sliding window (counting ``regf_holds: window``, nn_dataflow's
    Eyeriss pass) runs them; other fixed loops stay, and a mapping without
    such loops is unchanged."""
    unit = dict(mapping.unit)
    kept = []
    for lp in mapping.inner:
        if lp.dim in STREAMED_DIMS:
            unit[lp.dim] = unit.get(lp.dim, 1) * lp.count
        else:
            kept.append(lp)
    if len(kept) == len(mapping.inner):
        return mapping
    return PeMapping(mapping.template, tuple(unit.items()), mapping.stacks, tuple(kept),
                     f"{mapping.note}, rows streamed" if mapping.note else "rows streamed")


@lru_cache(maxsize=1 << 12)
def _streamed(mapping: PeMapping, note: str) -> PeMapping:
    """:func:`streamed_rows` of ``mapping``, kept for the blocks that ask for the same one;
    by value and ``note`` (its note, which is not compared but is part of what it gives)."""
    return streamed_rows(mapping)


@cache
def _mapping_fn(path: str) -> MappingFn:
    module, _, name = path.partition(":")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise ArchError(f"PE mapping function {path!r} cannot be imported") from None
    return cast(MappingFn, fn)


def relaxed(mapping: PeMapping) -> list[PeMapping]:
    """Finer variants of a mapping, for buffers too small for the blocks it fixes:
    its innermost loops left to loop blocking (a row processed in strips), then
    its unit block too (a filter split over several passes). The spatial
    pattern (its stacks) stays."""
    out = []
    if mapping.inner:
        out.append(PeMapping(mapping.template, mapping.unit, mapping.stacks, (), f"{mapping.note}, loops free"))
    if mapping.unit:
        out.append(PeMapping(mapping.template, (), mapping.stacks, (), f"{mapping.note}, unit free"))
    return out


def fold(extent: int, units: int) -> tuple[int, int]:
    """Spread ``extent`` over at most ``units``: (units used, temporal folds), with no idle fold."""
    folds = -(-extent // units)
    return -(-extent // folds), folds

__all__ = ["STREAMED_DIMS", "PeMapping", "covered_extents", "fold", "pe_mappings", "relaxed", "streamed_rows"]
