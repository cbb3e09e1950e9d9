"""The intra-layer design space (KAPLA Table II, intra-layer rows), as directives.

A scheme for one layer on a block of nodes is chosen in four steps, each a
part of the directives:

1. **node partition**: GBUF-level stacks splitting batch ``N``, channel
   groups ``G``, input channels ``C``, output channels ``K`` and the output
   fmap ``Y``/``X`` over the nodes (TANGRAM's hybrid partitioning);
2. **buffer sharing**: whether the nodes that need the same input fmap or
   weights store one copy between them (TANGRAM's BSD, ``shr``);
3. **PE mapping**: the hardware's template maps each node's share onto its
   PE array (unit block, PE stacks, fixed innermost loops);
4. **loop blocking**: what is left of ``N, G, C, K, Y, X`` is split between the
   PE register block (``unit``), the loops between GBUF and REGF (REGF-level
   updates) and the loops between DRAM and GBUF (GBUF-level updates), each
   level with a loop order.

Steps 1-3 form a :class:`Skeleton`; :func:`build_scheme` adds step 4. The
skeletons of a layer are not enumerated here: they are the frames of the one
layer space (:mod:`kapla.space.layer.frames`) seen by the fast evaluator of
classic three-level hierarchies (:mod:`kapla.space.layer.classic_view`).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from kapla.dataflow.directives import LayerScheme, LevelScheme, Loop, Stack
from kapla.dataflow.mapping import PeMapping
from kapla.dataflow.tensors import RELEVANT, Kind, layer_dims, tensor_roles
from kapla.model.nests import from_schemes
from kapla.model.rules import coverage
from kapla.workload.layer import Layer

PARTITION_DIMS = ("N", "G", "C", "K", "Y", "X")
BLOCK_DIMS = ("N", "G", "C", "K", "Y", "X")
MAX_PADDING = 0.1  # a partition may pad a dimension by at most 10 % (as nn_dataflow)


@cache
def factorizations(n: int, parts: int) -> tuple[tuple[int, ...], ...]:
    """Every ordered ``parts``-tuple of positive integers whose product is ``n``."""
    if parts == 1:
        return ((n,),)
    out: list[tuple[int, ...]] = []
    for d in range(1, n + 1):
        if n % d == 0:
            out.extend((d,) + rest for rest in factorizations(n // d, parts - 1))
    return tuple(out)


@cache
def divisors(n: int) -> tuple[int, ...]:
    return tuple(d for d in range(1, n + 1) if n % d == 0)


@cache
def prime_factors(n: int) -> tuple[int, ...]:
    """The distinct prime factors of ``n``, smallest first (the steps a descent moves a loop count by)."""
    out, p = [], 2
    while p * p <= n:
        if n % p == 0:
            out.append(p)
            while n % p == 0:
                n //= p
        p += 1
    return tuple(out + ([n] if n > 1 else []))


def splits_evenly(extent: int, parts: int) -> bool:
    """``parts`` blocks of ``ceil(extent / parts)`` cover ``extent`` with little padding
    and none wholly empty."""
    if parts == 1:
        return True
    block = -(-extent // parts)
    return (parts - 1) * block < extent and block * parts - extent <= max(MAX_PADDING * block * parts, 1)


@dataclass(frozen=True)
class NodePartition:
    """How a layer is split over a rows x cols block of nodes (GBUF-level stacks)."""

    stacks: tuple[Stack, ...]

    @property
    def factors(self) -> dict[str, int]:
        return {s.dim: s.count for s in self.stacks}

    def describe(self) -> str:
        return " ".join(f"{s.dim}{s.count}" for s in self.stacks) or "none"


def node_partitions(layer: Layer, batch: int, region: tuple[int, int]) -> list[NodePartition]:
    """Partitions of ``layer`` over a ``region`` of nodes (:func:`node_partitions_of`)."""
    return node_partitions_of(layer_dims(layer, batch), region)


def node_partitions_of(extents: Mapping[str, int], region: tuple[int, int]) -> list[NodePartition]:
    """Partitions of a block of ``extents`` using every node of ``region``, each
    dimension split evenly; if there is none (a block too small for so many
    nodes), those of the largest smaller block of nodes, leaving the others idle."""
    return list(next(partitions_by_nodes(extents, region), (NodePartition(()),)))


def partitions_by_nodes(extents: Mapping[str, int], region: tuple[int, int]
                        ) -> Iterator[tuple[NodePartition, ...]]:
    """The partitions of a block of ``extents`` over each block of nodes of
    ``region`` that has some, the blocks with the most nodes first: those of
    the whole region, then of smaller blocks, leaving the others idle (for a
    layer whose partitions of more nodes leave the levels below nothing that
    tiles it). Each block's are one kept tuple (the same object for the same
    extents and block while it is kept: read-only)."""
    rows, cols = region
    grids = sorted(((r, c) for r in range(1, rows + 1) for c in range(1, cols + 1)),
                   key=lambda g: (-g[0] * g[1], -g[0]))
    sizes = tuple(extents.get(d, 1) for d in PARTITION_DIMS)
    for grid in grids:
        found = _partitions_of(sizes, grid)
        if found:
            yield found


@functools.lru_cache(maxsize=1 << 12)
def _partitions_of(sizes: tuple[int, ...], region: tuple[int, int]) -> tuple[NodePartition, ...]:
    # layers of one shape (a training DAG's forward and backward ones, a deep network's
    # repeated blocks) ask for the partitions of the same extents on the same region
    rows, cols = region
    dims = [d for d, n in zip(PARTITION_DIMS, sizes, strict=True) if n > 1]
    extents = dict(zip(PARTITION_DIMS, sizes, strict=True))
    out = []
    for counts in _even_factorizations(rows * cols, tuple(extents[d] for d in dims)):
        layout = _layout(counts, rows, cols)
        if layout is None:
            continue
        out.append(NodePartition(tuple(Stack(d, r, c) for d, (r, c) in zip(dims, layout, strict=True) if r * c > 1)))
    if rows * cols > 1 and out == [NodePartition(())]:
        return ()  # nothing spread: not a partition of this many nodes
    return tuple(out)


def _even_factorizations(n: int, sizes: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """The :func:`factorizations` of ``n`` into ``len(sizes)`` counts, in their
    order, that split each size evenly (:func:`splits_evenly`): each count is
    chosen among those that split its size, so the many that do not are never built."""
    if not sizes:
        yield ()
        return
    size, more = sizes[0], sizes[1:]
    if not more:
        if splits_evenly(size, n):
            yield (n,)
        return
    for d in divisors(n):
        if splits_evenly(size, d):
            yield from ((d,) + rest for rest in _even_factorizations(n // d, more))


def _layout(counts: Sequence[int], rows: int, cols: int) -> list[tuple[int, int]] | None:
    """Split each count into (rows, cols) so the stacks fill the rows x cols grid."""
    out = []
    left = rows
    for c in counts:
        r = math.gcd(c, left)
        left //= r
        out.append((r, c // r))
    if left != 1 or math.prod(c for _, c in out) != cols:
        return None
    return out


@dataclass(frozen=True)
class Skeleton:
    """A partition, buffer-sharing choice and PE mapping: everything but loop blocking."""

    layer: Layer
    batch: int
    partition: NodePartition
    shr: tuple[tuple[Kind, int], ...]
    mapping: PeMapping
    remaining: tuple[tuple[str, int], ...]  # what loop blocking must still cover, per block dim
    levels: tuple[str, str] = ("REGF", "GBUF")

    @property
    def rest(self) -> dict[str, int]:
        return dict(self.remaining)

    @property
    def partition_grid(self) -> tuple[int, int]:
        stacks = self.partition.stacks
        return (math.prod(s.rows for s in stacks), math.prod(s.cols for s in stacks))

    def describe(self) -> str:
        shared = ",".join(f"{k}/{n}" for k, n in self.shr) or "-"
        return f"nodes {self.partition.describe()} | shr {shared} | {self.mapping.note or self.mapping.template}"


def sharing_options(partition: NodePartition, layer: Layer, enabled: bool) -> list[tuple[tuple[Kind, int], ...]]:
    """Buffer-sharing choices: none, or one copy per group of nodes needing the same data."""
    if not enabled:
        return [()]
    return list(sharing_of(partition.stacks, layer))


def sharing_of(stacks: tuple[Stack, ...], layer: Layer) -> tuple[tuple[tuple[Kind, int], ...], ...]:
    """:func:`sharing_options` (enabled) of the node partition with these stacks (read-only: shared)."""
    return sharing_by_reads(stacks, read_kinds(layer))


def read_kinds(layer: Layer) -> frozenset[Kind]:
    """The kinds of data ``layer`` reads (only those rotate between nodes)."""
    return frozenset(r.kind for r in tensor_roles(layer) if not r.written)


def sharing_by_reads(stacks: tuple[Stack, ...], read: frozenset[Kind]) -> tuple[tuple[tuple[Kind, int], ...], ...]:
    """:func:`sharing_of` for a layer reading ``read``: what it depends on is the
    group of nodes needing the same data of each kind (one size each), so the
    options are kept per pair of sizes; a layer and its partitions, which vary
    from solve to solve, are not in the key."""
    groups = tuple(math.prod(s.count for s in stacks if s.dim not in RELEVANT[kind]) if kind in read else 1
                   for kind in _ROTATING)
    return _sharing_options(groups)


_ROTATING = (Kind.IFM, Kind.WGT)  # sorted: the options list kinds in this order


@functools.lru_cache(maxsize=1 << 10)
def _sharing_options(groups: tuple[int, ...]) -> tuple[tuple[tuple[Kind, int], ...], ...]:
    sized = {kind: n for kind, n in zip(_ROTATING, groups, strict=True) if n > 1}
    options: list[tuple[tuple[Kind, int], ...]] = [()]
    for r in range(1, len(sized) + 1):
        for kinds in itertools.combinations(sorted(sized), r):
            options.append(tuple((k, sized[k]) for k in kinds))
    return tuple(options)


@dataclass(frozen=True)
class Blocking:
    """Loop blocking of the block dims: (unit, REGF-level, GBUF-level) factors and orders."""

    unit: tuple[tuple[str, int], ...]
    regf: tuple[tuple[str, int], ...]  # REGF-level updates, outermost first
    gbuf: tuple[tuple[str, int], ...]  # GBUF-level updates, outermost first


def build_scheme(skel: Skeleton, blocking: Blocking, ifm_name: str | None = None) -> LayerScheme:
    """The complete directives of a skeleton with a loop blocking."""
    m = skel.mapping
    unit = m.unit_dims
    for d, n in blocking.unit:
        unit[d] = unit.get(d, 1) * n
    regf_updates = tuple(Loop(d, n) for d, n in blocking.regf if n > 1) + m.inner
    gbuf_updates = tuple(Loop(d, n) for d, n in blocking.gbuf if n > 1)
    levels = [LevelScheme(skel.levels[0], m.stacks, regf_updates)]
    levels.append(LevelScheme(skel.levels[1], skel.partition.stacks, gbuf_updates, skel.shr))
    return LayerScheme(skel.layer, skel.batch, tuple(unit.items()), tuple(levels), ifm_name=ifm_name)


def coverage_ok(scheme: LayerScheme) -> bool:
    """The blocks reach every dimension's extent and no loop iteration is wholly idle."""
    return bool(coverage(from_schemes([scheme])).ok[0])


#: Candidates one joint search of two levels' splits and orders may cost; beyond
#: it the lower level's orders are thinned to one per choice of innermost loop.
MAX_JOINT_CANDIDATES = 60_000


def innermost_orders(counts: np.ndarray, nd: int) -> np.ndarray:
    """One loop order per choice of innermost looping dim (the other looping dims
    in column order, the dims that do not loop outermost), as column permutations."""
    looping = [j for j in range(nd) if counts[j] > 1]
    still = [j for j in range(nd) if counts[j] <= 1]
    if not looping:
        return np.arange(nd, dtype=np.int64)[None, :]
    return np.array([still + [j for j in looping if j != i] + [i] for i in looping], dtype=np.int64)


def distinct_orders(layer: Layer, dims: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """One loop order (outermost first) per class of orders that cost the same.

    A tensor is reloaded by the loops from the outermost down to its innermost
    relevant one; only that set, and which loop it ends with (a sliding window
    reloads less), depend on the order. Orders giving every tensor the same
    set and last loop are equivalent, so one of each class is enough.
    """
    return _distinct_orders(_kinds(layer), dims)


def order_perms(layer: Layer, dims: tuple[str, ...], looping: int) -> np.ndarray:
    """:func:`distinct_orders` of the ``dims`` whose bit is set in ``looping``, as
    ``(K, len(dims))`` permutations of the columns of ``dims`` (outermost first;
    the dims that do not loop go outermost, in column order). Read-only: the
    table is shared by every solver."""
    return _order_perms(_kinds(layer), dims, looping)


OrderTable = Callable[[int], np.ndarray]


def class_table(layer: Layer, dims: tuple[str, ...]) -> OrderTable:
    """:func:`order_perms` of ``layer`` over ``dims``, by looping mask."""
    kinds = _kinds(layer)
    return lambda looping: _order_perms(kinds, dims, looping)


def innermost_table(nd: int) -> OrderTable:
    """:func:`innermost_orders` of ``nd`` columns, by looping mask."""
    return lambda looping: _innermost_perms(nd, looping)


def order_counts(table: OrderTable, masks: np.ndarray) -> np.ndarray:
    """How many orders ``table`` gives each looping mask of ``masks``."""
    uniq, inv = np.unique(masks, return_inverse=True)
    return np.array([len(table(int(m))) for m in uniq], dtype=np.int64)[inv.reshape(-1)]


def order_product(tables: Sequence[OrderTable], masks: Sequence[np.ndarray],
                  counts: Sequence[np.ndarray] | None = None) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Every row of loop counts (given per level by its looping ``masks``) under
    every combination of one order per level from that level's table, the
    first level's order varying slowest: ``(M,)`` the row of each candidate and,
    per level, its ``(M, nd)`` order. ``counts``: :func:`order_counts` of each
    level, when the caller has them."""
    n = list(counts) if counts is not None else [order_counts(t, m) for t, m in zip(tables, masks, strict=True)]
    per = np.prod(np.stack(n), axis=0) if n else np.ones(0, np.int64)
    rows = np.repeat(np.arange(len(per)), per)
    within = np.arange(len(rows)) - np.repeat(np.cumsum(per) - per, per)
    return rows, orders_of(tables, [m[rows] for m in masks], [c[rows] for c in n], within)


def orders_of(tables: Sequence[OrderTable], masks: Sequence[np.ndarray], counts: Sequence[np.ndarray],
              combos: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per level, the ``(M, nd)`` loop order of each of ``M`` candidates whose
    combination of one order per level is number ``combos`` (the first level's
    order varying slowest), from each level's looping ``masks`` and order
    ``counts`` (``(M,)`` each)."""
    within = np.asarray(combos)
    index = []
    for lvl in reversed(range(len(tables))):
        index.append(within % counts[lvl])
        within = within // counts[lvl]
    index.reverse()
    out = []
    for table, mask, idx in zip(tables, masks, index, strict=True):
        if not len(idx):
            out.append(np.empty((0, table(0).shape[1]), dtype=np.int64))
            continue
        # the distinct masks' orders one after another, each candidate's picked from its mask's run
        uniq, inv = np.unique(mask, return_inverse=True)
        runs = [table(int(m)) for m in uniq]
        sizes = np.array([len(r) for r in runs], dtype=np.int64)
        starts = np.cumsum(sizes) - sizes
        out.append(np.concatenate(runs)[starts[inv.reshape(-1)] + idx])
    return tuple(out)


@cache
def _innermost_perms(nd: int, looping: int) -> np.ndarray:
    perms = innermost_orders(np.array([(looping >> j & 1) + 1 for j in range(nd)]), nd)
    perms.flags.writeable = False
    return perms


def looping_mask(counts: np.ndarray) -> np.ndarray:
    """Per row of loop counts ``(F, nd)``, the bit mask of its columns with a count above 1."""
    return ((counts > 1) * (1 << np.arange(counts.shape[1], dtype=np.int64))).sum(axis=1)


def _kinds(layer: Layer) -> tuple[Kind, ...]:
    return tuple(sorted({r.kind for r in tensor_roles(layer)}))


@cache
def _order_perms(kinds: tuple[Kind, ...], dims: tuple[str, ...], looping: int) -> np.ndarray:
    on = tuple(d for j, d in enumerate(dims) if looping >> j & 1)
    still = [j for j in range(len(dims)) if not looping >> j & 1]
    col = {d: j for j, d in enumerate(dims)}
    orders = _distinct_orders(kinds, on)
    perms = np.array([still + [col[d] for d in o] for o in orders], dtype=np.int64).reshape(len(orders), len(dims))
    perms.flags.writeable = False
    return perms


@cache
def _distinct_orders(kinds: tuple[Kind, ...], dims: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    seen: dict[tuple, tuple[str, ...]] = {}
    for order in itertools.permutations(dims):
        signature = []
        for kind in kinds:
            last = max((i for i, d in enumerate(order) if d in RELEVANT[kind]), default=-1)
            signature.append((frozenset(order[: last + 1]), order[last] if last >= 0 else None))
        seen.setdefault(tuple(signature), order)
    return tuple(seen.values())
