"""Many loop blockings of classic-hierarchy skeletons, costed at once.

A skeleton (node partition, buffer sharing, PE mapping: :mod:`kapla.space.layer.skeletons`)
fixes the stacks of both on-chip levels and the PE mapping's unit block and
innermost loops; a blocking adds, per block dimension, the unit factor, the
REGF-level and GBUF-level loop counts and the loop order at both levels.
This module turns arrays of blockings (of one skeleton, or of several at
once: :func:`joint_nests`) into the cost model's
:class:`~kapla.model.nests.Nests` and costs them with
:func:`kapla.model.cost.evaluate_nests` -- the evaluator's own code, so the
numbers are the evaluator's, a few microseconds per candidate. Every entry
point takes a ``feed`` (:class:`kapla.model.feed.Feed`, a layer inside a
segment); candidates that break its constraints, or that leave a loop with a
wholly idle iteration, are marked invalid and get objective ``inf``.

Entry points:

* :func:`batch_costs` - costs of given blockings;
* :func:`enumerate_blockings` - the candidates of
  :func:`kapla.search.layer.exhaustive.solver._blockings` (capacity-feasible factors x
  equivalence classes of loop orders), as arrays, in its order;
* :func:`enumerate_and_cost` - both: the best blocking of a skeleton (the
  exhaustive solver's on the classic hierarchy).

This module reads the solver's :class:`~kapla.space.layer.skeletons.Skeleton` and
builds its :class:`~kapla.space.layer.skeletons.Blocking`; those are imported where
used, so importing :mod:`kapla.model` never pulls in :mod:`kapla.solve`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from kapla.arch.spec import ArchSpec
from kapla.dataflow.tensors import DIM_INDEX, DIMS, layer_dims
from kapla.model.cost import evaluate_nests
from kapla.model.feed import FROM_DRAM, Feed
from kapla.model.hardware import ITCN, hardware
from kapla.model.nests import Loops, Nests, Stacks
from kapla.model.objective import objective_of
from kapla.model.rules import buffer_words, coverage, held_words

if TYPE_CHECKING:  # pragma: no cover
    from kapla.space.layer.skeletons import Blocking, Skeleton  # noqa: F401

__all__ = [
    "BatchEvaluator",
    "BatchResult",
    "BestBlocking",
    "active_dims",
    "batch_costs",
    "enumerate_and_cost",
    "enumerate_blockings",
]

_DEFAULT_CHUNK = 1 << 13  # candidates per array pass (fastest around here: the temporaries stay in cache)


def _space():
    from kapla.space.layer import skeletons as space  # the solver's design space (see the module docstring)

    return space


def active_dims(skel: Skeleton) -> tuple[str, ...]:
    """The block dims loop blocking splits (more than one step left): the
    columns of the factor arrays by default, as the exhaustive solver."""
    rest = skel.rest
    return tuple(d for d in _space().BLOCK_DIMS if rest.get(d, 1) > 1)


@dataclass(frozen=True)
class BatchResult:
    """Costs of ``M`` blockings, one entry per candidate.

    Candidate ``i`` is :meth:`blocking` ``(i)``; its numbers equal
    ``evaluate(build_scheme(skel, blocking(i)), arch, check=False)``:
    ``energy`` = ``total_energy`` (J), ``time`` (cycles), ``objective``,
    ``accesses[level]`` = ``level_accesses(level)`` (words; the hardware's
    level names and ``"ITCN"``), ``noc_hops``, ``compute_time`` /
    ``bus_time`` / ``dram_time`` (``time_parts``), and ``regf_words`` /
    ``gbuf_words`` = ``scheme.buffer_words(0)`` / ``(1)`` (for capacity masks).
    ``regf_orders`` / ``gbuf_orders`` hold each candidate's loop order as
    column indices into ``dims``, outermost first.
    """

    dims: tuple[str, ...]
    combo_units: np.ndarray  # (F, len(dims)) unit (register block) factors of each factor combination
    combo_mids: np.ndarray  # (F, len(dims)) REGF-level loop counts
    combo_tops: np.ndarray  # (F, len(dims)) GBUF-level loop counts
    rows: np.ndarray  # (M,) the factor combination of each candidate
    regf_orders: np.ndarray  # (M, len(dims))
    gbuf_orders: np.ndarray  # (M, len(dims))
    objective_name: str
    energy: np.ndarray
    time: np.ndarray
    objective: np.ndarray
    accesses: Mapping[str, np.ndarray]
    noc_hops: np.ndarray
    compute_time: np.ndarray
    bus_time: np.ndarray
    dram_time: np.ndarray
    regf_words: np.ndarray
    gbuf_words: np.ndarray
    ok: np.ndarray | None = None  # (M,) bool: see ``valid`` (None: every candidate is)

    @property
    def valid(self) -> np.ndarray:
        """(M,) bool: candidate ``i`` meets the feed's constraints (``_check_feed``)
        and leaves no loop iteration wholly idle; the others have objective ``inf``."""
        if self.ok is None:
            return np.ones(len(self), dtype=bool)
        return self.ok

    def __len__(self) -> int:
        return int(self.energy.shape[0])

    @property
    def units(self) -> np.ndarray:
        """(M, len(dims)) unit factors of every candidate."""
        return self.combo_units[self.rows]

    @property
    def mids(self) -> np.ndarray:
        return self.combo_mids[self.rows]

    @property
    def tops(self) -> np.ndarray:
        return self.combo_tops[self.rows]

    def blocking(self, i: int) -> Blocking:
        """Candidate ``i`` as a :class:`~kapla.space.layer.skeletons.Blocking` (loops of
        count 1 left out, as the exhaustive solver writes them)."""
        row = self.rows[i]
        return blocking_of(self.dims, self.combo_units[row], self.combo_mids[row], self.combo_tops[row],
                           self.regf_orders[i], self.gbuf_orders[i])

    def best(self) -> int:
        """Index of the smallest objective; ties go to the lower energy (under
        latency many schemes take the compute steps), then to the first."""
        i = int(np.argmin(self.objective))
        if self.objective_name == "energy" or not math.isfinite(self.objective[i]):
            return i
        tied = np.flatnonzero(self.objective == self.objective[i])
        return int(tied[np.argmin(self.energy[tied])])


def blocking_of(dims: Sequence[str], units, mids, tops, regf_order, gbuf_order) -> Blocking:
    """One blocking (factors over ``dims``, orders as column permutations,
    outermost first) as a :class:`~kapla.space.layer.skeletons.Blocking`, loops of count 1 left out."""
    return _space().Blocking(
        tuple((d, int(units[j])) for j, d in enumerate(dims)),
        tuple((dims[j], int(mids[j])) for j in regf_order if mids[j] > 1),
        tuple((dims[j], int(tops[j])) for j in gbuf_order if tops[j] > 1),
    )


@dataclass(frozen=True)
class BestBlocking:
    """What :func:`enumerate_and_cost` found for one skeleton."""

    blocking: Blocking | None  # None when no blocking fits the buffers
    value: float  # its objective (inf if none)
    evaluated: int  # candidates costed (capacity-feasible factors x order classes)
    energy: float = math.inf
    time: float = math.inf
    rejected: int = 0  # of those, the invalid ones (feed constraints, idle loop iterations)


def shared_capacity_words(arch: ArchSpec, level: int) -> int:
    """Words per unit of on-chip ``level`` whose one buffer every tensor shares
    (the classic hardware the batch evaluator models; ArchError for a split level)."""
    capacity = arch.capacity_bytes(level)
    assert capacity is not None, f"level {level} of hardware {arch.name!r} has no capacity"
    return capacity // arch.word_bytes


class BatchEvaluator:
    """Loop blockings of one skeleton on ``arch``, as the cost model's nests.

    The skeleton fixes the stacks of both levels and the PE mapping's unit
    block and innermost loops; a blocking adds, per block dimension, the unit
    factor, the REGF-level and GBUF-level loop counts and the loop order at
    both levels. This class turns arrays of blockings into
    :class:`~kapla.model.nests.Nests` and costs them with
    :func:`kapla.model.cost.evaluate_nests` (the evaluator's own code).
    """

    def __init__(self, skel: Skeleton, arch: ArchSpec) -> None:
        if len(arch.levels) != 3 or tuple(skel.levels) != arch.level_names[:2]:
            raise ValueError(f"batch evaluation needs the skeleton's levels {tuple(skel.levels)} to be the "
                             f"hardware's on-chip levels, REGF-like then GBUF-like (got {arch.level_names})")
        self.skel, self.arch = skel, arch
        self.hw = hardware(arch)
        layer, m = skel.layer, skel.mapping
        self.layer = layer
        self.full = np.array([layer_dims(layer, skel.batch)[d] for d in DIMS], dtype=np.int64)
        self.rest = skel.rest
        unit = m.unit_dims
        self.mu = np.array([unit.get(d, 1) for d in DIMS], dtype=np.int64)
        self.stacks0 = tuple((st.dim, st.rows, st.cols) for st in m.stacks)
        self.stacks1 = tuple((st.dim, st.rows, st.cols) for st in skel.partition.stacks)
        self.inner = tuple((DIM_INDEX[lp.dim], lp.count) for lp in m.inner)
        self.shr = {k: np.int64(n) for k, n in skel.shr}
        self.regf_cap = shared_capacity_words(arch, 0)
        self.gbuf_cap = shared_capacity_words(arch, 1)
        # the skeleton's part of every nest, as rows of arrays (see joint_nests)
        self._stack_lists = tuple(([DIM_INDEX[d] for d, _, _ in sts], [r for _, r, _ in sts], [c for _, _, c in sts])
                                  for sts in (self.stacks0, self.stacks1))
        self._stack_rows = tuple(tuple(np.array(col, dtype=np.int64).reshape(-1) for col in cols)
                                 for cols in self._stack_lists)
        self._inner_dims = np.array([d for d, _ in self.inner], dtype=np.int64)
        self._inner_counts = np.array([c for _, c in self.inner], dtype=np.int64)
        self._s0 = np.ones(len(DIMS), dtype=np.int64)  # PE stacks per dim
        for d, r, c in self.stacks0:
            self._s0[DIM_INDEX[d]] *= r * c
        self._in0 = np.ones(len(DIMS), dtype=np.int64)  # the mapping's innermost loops per dim
        for col, c in self.inner:
            self._in0[col] *= c
        # a nest of this skeleton: what the buffer-word rules read (layer, roles, sharing, bypass)
        self._probe = Nests(layer, skel.batch, np.ones((1, len(DIMS)), np.int64),
                            tuple(Stacks(*(col[None, :] for col in st)) for st in self._stack_rows),
                            (Loops.empty(1), Loops.empty(1)), ({}, {k: np.full(1, n) for k, n in self.shr.items()}),
                            np.zeros(1, np.int64), ifm_name=None, level_names=arch.level_names[:2])

    def dim_cols(self, dims: Sequence[str]) -> np.ndarray:
        """Columns of ``dims`` in :data:`DIMS`."""
        return _dim_cols(tuple(dims))

    # ------------------------------------------------------------ nests

    def part(self, u: np.ndarray, a: np.ndarray, t: np.ndarray, rows: np.ndarray, ord1: np.ndarray,
             ord2: np.ndarray, dims: Sequence[str]) -> Part:
        """Blockings of this skeleton as a :class:`Part` of a joint evaluation: full unit, REGF-level and
        GBUF-level factors ``(F, 8)``, each candidate's combination ``rows`` and its orders (columns of ``dims``)."""
        M = rows.shape[0]
        cols = self.dim_cols(dims)
        if len(dims):
            d1, d2 = cols[ord1], cols[ord2]
        else:
            d1 = d2 = np.zeros((M, 0), np.int64)
        return Part(self, u, a, t, rows, d1, d2, cols)

    def full_factors(self, dims: Sequence[str], arr: np.ndarray) -> np.ndarray:
        """Factors over ``dims`` ``(M, len(dims))`` as factors over every loop dim ``(M, 8)``."""
        out = np.ones((arr.shape[0], len(DIMS)), dtype=np.int64)
        for j, d in enumerate(dims):
            out[:, DIM_INDEX[d]] = arr[:, j]
        return out

    # ------------------------------------------------------------ blocks

    def buffer_words(self, block: np.ndarray, level: int) -> np.ndarray:
        """Words one unit of ``level`` (0 REGF, 1 GBUF) holds for clipped blocks ``(M, 8)``."""
        words = held_words(block, self._probe, self.hw, level, self.shr if level == 1 else {})
        return sum(words.values(), np.zeros(block.shape[0], dtype=np.int64))

    def unit_tile(self, dims: Sequence[str], units: np.ndarray) -> np.ndarray:
        """Clipped unit blocks ``(M, 8)`` of unit factors ``(M, len(dims))``."""
        return np.minimum(self.mu * self.full_factors(dims, units), self.full)

    def node_tile(self, dims: Sequence[str], units: np.ndarray, mids: np.ndarray) -> np.ndarray:
        """Clipped GBUF blocks ``(M, 8)``."""
        return np.minimum(self.mu * self.full_factors(dims, units * mids) * self._s0 * self._in0, self.full)

    def coverage_ok(self, u: np.ndarray, a: np.ndarray, t: np.ndarray) -> np.ndarray:
        """(M,) bool: the blocking leaves no loop or stack with a wholly idle
        iteration (:func:`kapla.model.rules.coverage`), from the full unit,
        REGF-level and GBUF-level factors ``(M, 8)``."""
        return joint_coverage([(self, u, a, t)])

    # ------------------------------------------------------------- costs

    def costs(self, units, mids, tops=None, regf_orders=None, gbuf_orders=None,
              objective: str = "energy", dims: Sequence[str] | None = None, rows=None,
              feed: Feed | None = None) -> BatchResult:
        """See :func:`batch_costs`. With ``rows`` (an ``(M,)`` index array), the
        factor arrays are distinct combinations and candidate ``i`` uses row
        ``rows[i]`` of them (its orders are still row ``i`` of the order arrays)."""
        objective_of(objective)
        feed = _as_feed(feed)
        block_dims = _space().BLOCK_DIMS
        dims = tuple(active_dims(self.skel) if dims is None else dims)
        if len(set(dims)) != len(dims) or not set(dims) <= set(block_dims):
            raise ValueError(f"dims must be distinct block dims {block_dims} (got {dims})")
        nd = len(dims)
        units = _as_factors(units, nd, "units")
        mids = _as_factors(mids, nd, "mids")
        F = units.shape[0]
        if tops is None:
            rest = np.array([self.rest.get(d, 1) for d in dims], dtype=np.int64)
            tops = rest // (units * mids)
            if np.any(tops * units * mids != rest):
                raise ValueError("units x mids must divide the skeleton's remaining counts (or pass tops)")
        tops = _as_factors(tops, nd, "tops")
        if mids.shape[0] != F or tops.shape[0] != F:
            raise ValueError("units, mids and tops need the same number of rows")
        if rows is None:
            rows = np.arange(F)
        else:
            rows = np.asarray(rows, dtype=np.int64)
            if rows.ndim != 1 or (rows.size and (rows.min() < 0 or rows.max() >= F)):
                raise ValueError(f"rows must index the {F} factor rows")
        ord1 = _as_orders(regf_orders, dims, mids[rows], "regf_orders")
        ord2 = _as_orders(gbuf_orders, dims, tops[rows], "gbuf_orders")
        return self._costs(dims, units, mids, tops, rows, ord1, ord2, objective, feed)

    def _costs(self, dims, units, mids, tops, rows, ord1, ord2, objective, feed: Feed | None = None) -> BatchResult:
        """The costs; ``feed`` is None or a :class:`Feed` other than ``FROM_DRAM`` (:func:`_as_feed`)."""
        return joint_costs([(self, dims, units, mids, tops, rows, ord1, ord2)], objective, feed)[0]


@lru_cache(maxsize=256)
def _dim_cols(dims: tuple[str, ...]) -> np.ndarray:
    out = np.array([DIM_INDEX[d] for d in dims], dtype=np.int64)
    out.flags.writeable = False  # shared by every caller
    return out


class Part(NamedTuple):
    """Blockings of one skeleton inside a joint evaluation (:func:`joint_nests`):
    full unit, REGF-level and GBUF-level factors ``(F, 8)``, each candidate's
    combination ``rows`` ``(M,)`` and the dims of its REGF-level loops (without
    the PE mapping's innermost ones) and GBUF-level loops, outermost first,
    ``(M, K)`` columns of :data:`DIMS`; ``cols``: the dims that may loop
    (the others have REGF-level and GBUF-level counts 1), None for all."""

    ev: BatchEvaluator
    u: np.ndarray
    a: np.ndarray
    t: np.ndarray
    rows: np.ndarray
    d1: np.ndarray
    d2: np.ndarray
    cols: np.ndarray | None = None


def _left_padded(blocks: Sequence[tuple[np.ndarray, np.ndarray]]) -> Loops:
    """Loop columns of several parts ``(M_i, K_i)`` stacked into one ``(sum M_i, max K_i)``,
    the narrower ones padded with loops of count 1 on the outside (they change nothing)."""
    if len(blocks) == 1:
        return Loops(*blocks[0])
    width = max(d.shape[1] for d, _ in blocks)
    M = sum(d.shape[0] for d, _ in blocks)
    dims = np.zeros((M, width), dtype=np.int64)
    counts = np.ones((M, width), dtype=np.int64)
    at = 0
    for d, c in blocks:
        m, k = d.shape
        dims[at:at + m, width - k:] = d
        counts[at:at + m, width - k:] = c
        at += m
    return Loops(dims, counts)


def _joint_stacks(parts: Sequence[Part], level: int, combos: Sequence[int]) -> Stacks:
    """The stacks of ``level`` of each part, one row per factor combination;
    a part with fewer stacks gets stacks of one unit (they change nothing)."""
    if len(parts) == 1:
        return Stacks(*(np.broadcast_to(x, (combos[0], len(x))) for x in parts[0].ev._stack_rows[level]))
    width = max(len(p.ev._stack_lists[level][0]) for p in parts)
    table = np.array([[col + [pad] * (width - len(col))
                       for col, pad in zip(p.ev._stack_lists[level], (0, 1, 1), strict=True)]
                      for p in parts], dtype=np.int64).reshape(len(parts), 3, width)
    reps = np.asarray(combos, dtype=np.int64)
    return Stacks(*(np.repeat(table[:, j], reps, axis=0) for j in range(3)))


def joint_nests(parts: Sequence[Part]) -> Nests:
    """The blockings of several skeletons of one layer, batch and hardware as
    one :class:`~kapla.model.nests.Nests`: part ``i``'s factor combinations and
    candidates follow those of the parts before it. Costing them together gives
    each candidate the numbers costing its part alone gives (every number of a
    nest is worked out from its own row): parts with fewer stacks or loops are
    padded with ones, a sharing a skeleton does not use is 1."""
    ev0 = parts[0].ev
    combos = [p.u.shape[0] for p in parts]
    F = sum(combos)
    unit = np.concatenate([p.ev.mu * p.u for p in parts]) if len(parts) > 1 else ev0.mu * parts[0].u
    stacks = (_joint_stacks(parts, 0, combos), _joint_stacks(parts, 1, combos))
    regf_blocks, gbuf_blocks, rows = [], [], []
    at = 0
    for p, f in zip(parts, combos, strict=True):
        M = p.rows.shape[0]
        r2 = p.rows[:, None]
        ev = p.ev
        if len(ev.inner):
            dims = np.concatenate([p.d1, np.broadcast_to(ev._inner_dims, (M, len(ev.inner)))], axis=1)
            counts = np.concatenate([p.a[r2, p.d1], np.broadcast_to(ev._inner_counts, (M, len(ev.inner)))], axis=1)
        else:
            dims, counts = p.d1, p.a[r2, p.d1]
        regf_blocks.append((dims, counts))
        gbuf_blocks.append((p.d2, p.t[r2, p.d2]))
        rows.append(p.rows + at if at else p.rows)
        at += f
    kinds = list(dict.fromkeys(k for p in parts for k in p.ev.shr))
    if len(parts) == 1:
        shr = {k: np.full(F, n) for k, n in ev0.shr.items()}
    else:
        reps = np.asarray(combos, dtype=np.int64)
        shr = {k: np.repeat(np.array([p.ev.shr.get(k, 1) for p in parts], dtype=np.int64), reps) for k in kinds}
    return Nests(ev0.layer, ev0.skel.batch, unit, stacks, (_left_padded(regf_blocks), _left_padded(gbuf_blocks)),
                 ({}, shr), rows[0] if len(rows) == 1 else np.concatenate(rows), ifm_name=None,
                 level_names=ev0.arch.level_names[:2])


def joint_coverage(items: Sequence[tuple]) -> np.ndarray:
    """:meth:`BatchEvaluator.coverage_ok` of several ``(evaluator, u, a, t)``
    or ``(evaluator, u, a, t, cols)`` (skeletons of one layer, batch and
    hardware; ``cols``: the only dims, columns of :data:`DIMS`, whose counts
    in ``a`` and ``t`` may exceed 1) in one pass, their rows one after the
    other. The loop order does not matter to coverage here (each level loops
    over a dim once), nor do loops of count 1 (they are left out)."""
    parts = []
    for ev, u, a, t, *rest in items:
        cols = rest[0] if rest and rest[0] is not None else _ALL_DIMS
        M = u.shape[0]
        order = np.broadcast_to(cols, (M, len(cols)))
        parts.append(Part(ev, u, a, t, np.arange(M), order, order))
    return coverage(joint_nests(parts)).ok


_ALL_DIMS = np.arange(len(DIMS), dtype=np.int64)
_ALL_DIMS.flags.writeable = False

Request = tuple  # (evaluator, dims, units, mids, tops, rows, regf orders, gbuf orders): see joint_costs


def _joint_evaluate(requests: Sequence[Request], feed: Feed | None):
    """The parts, joint nests and costs of :func:`joint_costs`' requests."""
    parts = []
    for ev, dims, units, mids, tops, rows, ord1, ord2 in requests:
        u, a, t = (ev.full_factors(dims, x) for x in (units, mids, tops))
        parts.append(ev.part(u, a, t, rows, ord1, ord2, dims))
    nests = joint_nests(parts)
    return parts, nests, evaluate_nests(nests, parts[0].ev.hw, feed, rules=False)


def _joint_valid(parts: Sequence[Part], nests: Nests, costs) -> np.ndarray:
    """(M,) bool: the candidates :meth:`BatchResult.valid` accepts."""
    # the enumeration guarantees capacities, arrays and sharing; what it cannot
    # see is a split of factors leaving an idle iteration, and the feed
    valid = joint_coverage([(p.ev, p.u, p.a, p.t, p.cols) for p in parts])[nests.rows]
    for v in costs.feed_violations:
        valid &= ~v.mask
    return valid


def joint_costs(requests: Sequence[Request], objective: str = "energy", feed: Feed | None = None) -> list[BatchResult]:
    """:meth:`BatchEvaluator.costs` of several skeletons of one layer, batch and
    hardware, costed by one :func:`~kapla.model.cost.evaluate_nests` call (see
    :func:`joint_nests`). Each request is ``(evaluator, dims, units, mids, tops,
    rows, regf_orders, gbuf_orders)`` in the checked form of
    :meth:`BatchEvaluator._costs`; ``feed`` is None or not ``FROM_DRAM``."""
    obj = objective_of(objective)
    parts, nests, costs = _joint_evaluate(requests, _as_feed(feed))
    ev0 = parts[0].ev
    names = ev0.arch.level_names
    tr = costs.traffic
    accesses = {names[i]: costs.level_words(i) for i in range(3)}
    accesses[ITCN] = tr.bus[0].sum(axis=0)
    hops = tr.hops.sum(axis=0)
    F = nests.combos
    regf_words = sum(buffer_words(nests, ev0.hw, 0).values(), np.zeros(F, np.int64))
    gbuf_words = sum(buffer_words(nests, ev0.hw, 1).values(), np.zeros(F, np.int64))
    valid = _joint_valid(parts, nests, costs)
    value = np.where(valid, obj.of(costs.total, costs.time), np.inf)
    out = []
    f0 = m0 = 0
    for (_, dims, units, mids, tops, rows, ord1, ord2), p in zip(requests, parts, strict=True):
        f1, m1 = f0 + p.u.shape[0], m0 + rows.shape[0]
        cut = slice(m0, m1)
        ok = valid[cut]
        out.append(BatchResult(dims, units, mids, tops, rows, ord1, ord2, obj.name, costs.total[cut],
                               costs.time[cut], value[cut], {k: v[cut] for k, v in accesses.items()},
                               hops[cut], costs.compute[cut], costs.bus_time[cut],
                               costs.dram_time[cut], regf_words[f0:f1][rows], gbuf_words[f0:f1][rows],
                               None if ok.all() else ok))
        f0, m0 = f1, m1
    return out


def _as_factors(x, ncols: int, what: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.int64)
    if arr.ndim == 1 and ncols == 0:
        arr = arr.reshape(-1, 0)
    if arr.ndim != 2 or arr.shape[1] != ncols:
        raise ValueError(f"{what} must have shape (M, {ncols}) (got {arr.shape})")
    if np.any(arr < 1):
        raise ValueError(f"{what}: loop counts must be positive")
    return arr


def _perm(order: Sequence[str], dims: tuple[str, ...], what: str) -> tuple[int, ...]:
    """An order over some of ``dims`` as a permutation of their columns; the
    dims it leaves out go outermost (they must have count 1)."""
    col = {d: j for j, d in enumerate(dims)}
    if len(set(order)) != len(order) or not set(order) <= set(dims):
        raise ValueError(f"{what}: an order lists distinct dims of {dims} (got {tuple(order)})")
    listed = [col[d] for d in order]
    return tuple(j for j in range(len(dims)) if j not in listed) + tuple(listed)


def _as_orders(orders, dims: tuple[str, ...], counts: np.ndarray, what: str) -> np.ndarray:
    """Loop orders in any accepted form as ``(M, len(dims))`` column permutations, outermost first."""
    M, nd = counts.shape
    if orders is None:
        return np.broadcast_to(np.arange(nd, dtype=np.int64), (M, nd))
    if isinstance(orders, np.ndarray) and orders.dtype.kind in "iu":
        perms = orders.astype(np.int64)
        if perms.shape != (M, nd) or np.any(np.sort(perms, axis=1) != np.arange(nd)):
            raise ValueError(f"{what}: expected ({M}, {nd}) permutations of the dims' columns")
        return perms
    elif isinstance(orders, str) or all(isinstance(o, str) and o in dims for o in orders):
        orders = tuple(orders)
        perm = _perm(orders, dims, what)
        perms = np.broadcast_to(np.array(perm, dtype=np.int64), (M, nd))
        listed = np.isin(np.arange(nd), [dims.index(d) for d in orders])
        if np.any(counts[:, ~listed] > 1):
            raise ValueError(f"{what}: order {tuple(orders)} leaves out dims with loop counts > 1")
        return perms
    else:
        if len(orders) != M:
            raise ValueError(f"{what}: expected one order per candidate ({M}), got {len(orders)}")
        cache: dict[tuple, tuple[int, ...]] = {}
        orders = [tuple(o) for o in orders]
        perms = np.array([cache[o] if o in cache else cache.setdefault(o, _perm(o, dims, what)) for o in orders],
                         dtype=np.int64).reshape(M, nd)
        # the dims an order leaves out are its outermost entries; they must not loop
        counted = np.array([len(o) for o in orders], dtype=np.int64)
        left_out = np.arange(nd)[None, :] < (nd - counted)[:, None]
        if np.any(left_out & (np.take_along_axis(counts, perms, axis=1) > 1)):
            raise ValueError(f"{what}: an order leaves out dims with loop counts > 1")
        return perms


def _as_feed(feed: Feed | None) -> Feed | None:
    """None for everything through DRAM (the plain, faster path), else the feed."""
    if feed is None or feed == FROM_DRAM:
        return None
    if not isinstance(feed, Feed):
        raise TypeError(f"feed must be a kapla.model.evaluate.Feed (got {type(feed).__name__})")
    return feed


def batch_costs(skel: Skeleton, arch: ArchSpec, units, mids, tops=None, regf_orders=None, gbuf_orders=None,
                objective: str = "energy", dims: Sequence[str] | None = None, rows=None,
                feed: Feed | None = None) -> BatchResult:
    """Costs of ``M`` blockings of ``skel`` on ``arch``, as
    ``evaluate(build_scheme(skel, blocking), arch, feed, check=False)`` gives them.

    ``units``, ``mids``, ``tops``: integer arrays of shape ``(M, len(dims))``,
    the unit (register block) factors, REGF-level and GBUF-level loop counts
    over ``dims`` (default :func:`active_dims`; other dims are 1). ``tops``
    defaults to what the skeleton's remaining counts leave. The orders
    (outermost first), at each level, are one of: ``None`` (``dims`` as
    listed); one order for all, a sequence of dim names; one such sequence per
    candidate; or an ``(M, len(dims))`` integer array of column permutations.
    An order may leave out dims whose count is 1. ``rows``: optional ``(M,)``
    indices into the factor arrays when candidates share factor combinations
    (each combination's blocks are then worked out once).

    ``feed`` (default: everything through DRAM) charges the top-level traffic
    as :func:`kapla.model.evaluate.evaluate` does for a layer inside a segment;
    candidates that break its constraints (``_check_feed``: a forwarded input
    or pinned weights read more than once, partial sums of an output kept on
    chip spilled) are marked in ``valid`` and get objective ``inf``; their
    other numbers are what the traffic would cost.
    """
    return BatchEvaluator(skel, arch).costs(units, mids, tops, regf_orders, gbuf_orders, objective, dims, rows,
                                            feed)


# ------------------------------------------------------------- enumeration


@lru_cache(maxsize=4096)
def _divisors(n: int) -> np.ndarray:
    return np.array(_space().divisors(n), dtype=np.int64)


def _divisor_lists(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every divisor (ascending) of each value: (how many per value, all of them in a row)."""
    uniq, inv = np.unique(values, return_inverse=True)
    tables = [_divisors(int(v)) for v in uniq]
    width = max((len(tb) for tb in tables), default=0)
    table = np.zeros((len(uniq), width), dtype=np.int64)
    for i, tb in enumerate(tables):
        table[i, :len(tb)] = tb
    counts = np.array([len(tb) for tb in tables], dtype=np.int64)[inv.reshape(-1)]
    starts = np.cumsum(counts) - counts
    within = np.arange(int(counts.sum())) - np.repeat(starts, counts)
    return counts, table[np.repeat(inv.reshape(-1), counts), within]


def _factor_combos(ev: BatchEvaluator, chunk: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Capacity-feasible (units, mids) of ``ev``'s skeleton, in ``_blockings``' order, in chunks."""
    skel = ev.skel
    dims = active_dims(skel)
    nd = len(dims)
    rest = np.array([skel.rest[d] for d in dims], dtype=np.int64)
    units = np.zeros((1, 0), dtype=np.int64)
    for i in range(nd):  # itertools.product order: the last dim varies fastest
        counts, vals = _divisor_lists(np.full(len(units), rest[i]))
        units = np.concatenate([np.repeat(units, counts, axis=0), vals[:, None]], axis=1)
    units = units[ev.buffer_words(ev.unit_tile(dims, units), 0) <= ev.regf_cap]
    per_unit = np.ones(len(units), dtype=np.int64)
    for i in range(nd):
        counts, _ = _divisor_lists(rest[i] // units[:, i])
        per_unit *= counts
    ends = np.cumsum(per_unit)
    begin = 0
    while begin < len(units):
        base = int(ends[begin - 1]) if begin else 0
        end = max(begin + 1, int(np.searchsorted(ends, base + chunk, side="right")))
        block = units[begin:end]
        rows = np.arange(len(block))
        mids = np.zeros((len(block), 0), dtype=np.int64)
        for i in range(nd):
            counts, vals = _divisor_lists(rest[i] // block[rows, i])
            mids = np.concatenate([np.repeat(mids, counts, axis=0), vals[:, None]], axis=1)
            rows = np.repeat(rows, counts)
        uu = block[rows]
        keep = ev.buffer_words(ev.node_tile(dims, uu, mids), 1) <= ev.gbuf_cap
        if np.any(keep):
            yield uu[keep], mids[keep]
        begin = end


def _candidates(ev: BatchEvaluator, chunk: int):
    """``_blockings``' candidates in its order, in chunks: (units, mids, tops) of
    distinct factor combinations, each candidate's combination (``rows``) and its
    regf and gbuf orders (column permutations of :func:`active_dims`)."""
    skel = ev.skel
    dims = active_dims(skel)
    rest = np.array([skel.rest[d] for d in dims], dtype=np.int64)
    space = _space()
    table = space.class_table(skel.layer, dims)
    for units, mids in _factor_combos(ev, max(1, chunk // 4)):
        tops = rest // (units * mids)
        m1, m2 = space.looping_mask(mids), space.looping_mask(tops)
        # Each factor combo takes every (regf order class, gbuf order class) pair, regf order major.
        n1, n2 = space.order_counts(table, m1), space.order_counts(table, m2)
        ends = np.cumsum(n1 * n2)
        start = 0
        while start < len(units):
            base = int(ends[start - 1]) if start else 0
            stop = max(start + 1, int(np.searchsorted(ends, base + chunk, side="right")))
            part = slice(start, stop)
            rows, (o1, o2) = space.order_product((table, table), (m1[part], m2[part]), (n1[part], n2[part]))
            yield units[start:stop], mids[start:stop], tops[start:stop], rows, o1, o2
            start = stop


def enumerate_blockings(skel: Skeleton, arch: ArchSpec, chunk: int = _DEFAULT_CHUNK):
    """The candidates of ``exhaustive._blockings(skel, arch)`` in its order, as
    ``(units, mids, tops, regf_orders, gbuf_orders)`` array chunks of about
    ``chunk`` candidates (the arguments of :func:`batch_costs`, orders as
    column permutations of :func:`active_dims`)."""
    for units, mids, tops, rows, o1, o2 in _candidates(BatchEvaluator(skel, arch), chunk):
        yield units[rows], mids[rows], tops[rows], o1, o2


def enumerate_and_cost(skel: Skeleton, arch: ArchSpec, objective: str = "energy",
                       chunk: int = _DEFAULT_CHUNK, feed: Feed | None = None) -> BestBlocking:
    """The best blocking of ``skel`` over the exhaustive solver's candidates
    (:func:`enumerate_blockings`), ties going to the first in its order.

    Under ``feed`` (see :func:`batch_costs`), only candidates meeting its
    constraints are chosen; ``blocking`` is None if none does (``rejected``
    then equals ``evaluated``)."""
    objective_of(objective)
    feed = _as_feed(feed)
    ev = BatchEvaluator(skel, arch)
    dims = active_dims(skel)
    best = BestBlocking(None, math.inf, 0)
    evaluated = rejected = 0
    for units, mids, tops, rows, o1, o2 in _candidates(ev, chunk):
        res = ev._costs(dims, units, mids, tops, rows, o1, o2, objective, feed)
        evaluated += len(res)
        if res.ok is not None:
            rejected += len(res) - int(np.count_nonzero(res.ok))
        i = res.best()
        value = float(res.objective[i])
        if math.isfinite(value) and (value, float(res.energy[i])) < (best.value, best.energy):
            best = BestBlocking(res.blocking(i), value, 0, float(res.energy[i]), float(res.time[i]))
    return BestBlocking(best.blocking, best.value, evaluated, best.energy, best.time, rejected)
