"""The exhaustive intra-layer solver (KAPLA's "S"): the reference optimum.

It searches the whole intra-layer space of
:class:`~kapla.space.layer.layer_space.LayerSpace` (every frame, every
blocking that fits the buffers, one loop order per class at every level),
on any memory hierarchy, by branch and bound, skipping only what provably
cannot win:

* **frames** are visited least bound first (:func:`kapla.space.layer.bound.frame_bound`);
  once the best scheme found is no worse than a frame's bound, that frame
  and every later one are skipped;
* inside a frame, **blockings grow top down**: the outermost level's loop
  counts first, then the next level's, down to the register block. A partial
  blocking whose blocks overflow a buffer is dropped; the others are bounded
  with their fixed levels' reloads counted, first as if each tensor had its
  best order, then, for what that leaves, with what one order serving every
  tensor adds (:func:`kapla.space.layer.bound.partial_bounds`), visited least
  bound first and cut off once their bound reaches the best scheme found;
* **loop orders** are only tried for complete factor combinations whose
  bound can still win, each level's best order found with the others fixed
  (:meth:`_Search._cost`).

Results are cached by (layer shape, batch, hardware, objective, feed), so
repeated layers are solved once.

With a ``feed`` (a layer inside a segment, :class:`kapla.model.evaluate.Feed`)
every candidate is costed with it, candidates that break its constraints
(a forwarded input or pinned weights fetched more than once, an output kept
on chip spilling partial sums) are never chosen, and the bounds charge only
what the feed leaves.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.tensors import DIMS
from kapla.model.evaluate import FROM_DRAM, evaluate
from kapla.model.hardware import STATIC
from kapla.search.base import IntraResult, IntraSolver
from kapla.space.layer.bound import SLACK
from kapla.space.layer.diagnose import feed_unmet, no_scheme
from kapla.space.layer.frames import CHUNK, Blockings, FrameEvaluator, split_rows
from kapla.space.layer.layer_space import Found, LayerSpace, key_below
from kapla.space.layer.skeletons import class_table, looping_mask, order_counts, order_product, orders_of
from kapla.space.problem import Problem

_CHILDREN = 1 << 12  # partial blockings bounded per call: enough to amortise numpy, few enough to prune between


class _Solved(NamedTuple):
    """One exhaustive search: the optimum (None: nothing valid), candidates costed, seconds."""

    scheme: LayerScheme | None
    evaluated: int
    seconds: float
    complete: bool = True  # False: the budget stopped the search before it was exhaustive


class ExhaustiveIntraSolver(IntraSolver):
    """The reference optimum over the whole intra-layer space (slow by design).

    A solver remembers the layers it solved (by shape, hardware, objective and
    feed) for as long as it lives: one network run solves each shape once."""

    name = "exhaustive"

    def __init__(self, time_budget: float | None = None) -> None:
        self.time_budget = time_budget
        self._solved: dict[Problem, _Solved] = {}

    def run(self, problem: Problem) -> IntraResult:
        key = problem.key
        if key not in self._solved:
            self._solved[key] = _solve(key, self.time_budget)
        scheme, evaluated, seconds, complete = self._solved[key]
        layer, batch, arch, feed = problem.layer, problem.batch, problem.arch, problem.feed
        if scheme is None:
            if evaluated and feed != FROM_DRAM:
                raise feed_unmet(layer, batch, arch, feed, evaluated)
            raise no_scheme(layer, batch, arch)
        scheme = LayerScheme(layer, batch, scheme.unit, scheme.levels, ifm_name=problem.ifm_name)
        return IntraResult(scheme, evaluate(scheme, arch, feed), evaluated, seconds, complete)


def _solve(problem: Problem, budget: float | None, prune: bool = True) -> _Solved:
    """Branch and bound over the problem's space (``prune=False``: every candidate costed, for tests)."""
    search = _Search(LayerSpace(problem), budget, prune)
    search.run()
    best = search.best
    return _Solved(None if best is None else best.scheme, search.evaluated, search.seconds, not search.stopped)


class _OutOfTime(Exception):
    pass


class _Search:
    """One branch and bound (see the module): the best scheme found, what it costed, whether the budget stopped it."""

    def __init__(self, space: LayerSpace, budget: float | None, prune: bool) -> None:
        self.space = space
        self.budget = budget
        self.prune = prune
        self.start = time.perf_counter()
        self.best: Found | None = None
        self.evaluated = 0
        self.stopped = False

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.start

    def _tick(self) -> None:
        if self.budget is not None and self.seconds > self.budget:
            raise _OutOfTime

    def _beaten(self, key: tuple[float, float]) -> bool:
        """Nothing bounded by ``key`` can beat the best found (ties keep the first found)."""
        return self.prune and self.best is not None and key >= self.best.key

    def run(self) -> None:
        if not self.prune:
            self._everything()
            return
        space = self.space
        keys = {f: space.bound_key(f) for f in range(len(space))}
        try:
            for f in sorted(keys, key=keys.__getitem__):
                if self._beaten(keys[f]):
                    break  # frames come least bound first: no later one can win either
                self._tick()
                ev = space.evaluator(f)
                rest = np.array(space.frames[f].rest, dtype=np.int64)[None, :]
                self._descend(f, ev, ev.levels - 1, [], rest)
        except _OutOfTime:
            self.stopped = True

    def _everything(self) -> None:
        """Every candidate of the space costed, every combination of orders (what the pruning must agree with)."""
        for f in range(len(self.space)):
            for b in self.space.blockings(f):
                self._take(self.space.best(f, b), len(b))

    def _take(self, found: Found | None, costed: int) -> None:
        self.evaluated += costed
        if found is not None and (self.best is None or found.key < self.best.key):
            self.best = found

    def _descend(self, f: int, ev: FrameEvaluator, level: int, top: list[np.ndarray], left: np.ndarray) -> None:
        """Every completion of the partial blockings ``top`` (the counts of the levels
        above ``level``, innermost first) with ``left`` still to cover, that can win."""
        src, taken = split_rows(left, ev.frame.dims)
        top = [taken] + [t[src] for t in top]
        left = left[src] // taken
        ok = ev.fits(level, ev.block(level, left, [np.ones_like(left)] * level))
        top, left = [t[ok] for t in top], left[ok]
        if not len(left):
            return
        cutoff = self.best.key if self.best is not None else None
        keys = self.space.partial_keys(f, top, left, cutoff)
        order = np.lexsort((keys[:, 1], keys[:, 0]))
        if cutoff is not None:
            order = order[key_below(keys[order], cutoff)]
        top, left, keys = [t[order] for t in top], left[order], keys[order]
        if level == 0:
            self._cost(f, ev, (left, tuple(top)), keys)
            return
        sizes = _children(left, ev.frame.dims)
        start = 0
        while start < len(left):
            if self._beaten(tuple(keys[start])):
                return
            stop = start + max(1, int(np.searchsorted(np.cumsum(sizes[start:]), _CHILDREN, side="right")))
            part = slice(start, stop)
            self._descend(f, ev, level - 1, [t[part] for t in top], left[part])
            start = stop

    def _cost(self, f: int, ev: FrameEvaluator, combos: tuple[np.ndarray, tuple[np.ndarray, ...]],
              keys: np.ndarray) -> None:
        """The best loop orders of complete factor combinations (least bound first) that can still win.

        A combination's energy less its static part is a sum of one term per
        level, each depending on that level's order alone: a tensor's traffic
        across a boundary is set by the innermost loop it depends on above it,
        which lies in the lowest level above with such a loop (fixed by the
        counts), at a place only that level's order decides. So each level's
        best order is found with the others fixed (one order per class at one
        level at a time, not every combination), and where the combination of
        them runs at its compute bound, valid, it is the combination's
        optimum. Elsewhere (a feed's rule broken, a bus or DRAM slower than
        the PEs) every combination of orders is costed, if its bound can win."""
        unit, counts = combos
        table = class_table(ev.frame.layer, DIMS)
        tables = [table] * len(counts)
        masks = [looping_mask(c) for c in counts]
        n = [order_counts(table, m) for m in masks]
        every = np.prod(np.stack(n), axis=0)
        per = 2 + sum(c - 1 for c in n)  # the first classes, each other class of each level, the pick
        direct = every <= per  # fewer combinations of orders than one-level-at-a-time costs
        ends = np.cumsum(np.where(direct, every, per))
        start = 0
        while start < unit.shape[0]:
            if self._beaten(tuple(keys[start])):
                return
            self._tick()
            base = int(ends[start - 1]) if start else 0
            stop = max(start + 1, int(np.searchsorted(ends, base + CHUNK, side="right")))
            part = slice(start, stop)
            b = Blockings(unit[part], tuple(c[part] for c in counts), np.zeros(0, np.int64), ())
            m_part, n_part = [m[part] for m in masks], [c[part] for c in n]
            few = direct[part]
            if few.any():
                self._every_order(f, b, m_part, n_part, np.flatnonzero(few))
            if few.all():
                start = stop
                continue
            rows, index, level = _one_level_at_a_time(n_part)
            variants = replace_orders(b, rows, orders_of(tables, [m[rows] for m in m_part],
                                                          [c[rows] for c in n_part], index))
            costs = self.space.score(f, variants)
            self.evaluated += len(variants)
            dyn = costs.total - costs.energy[STATIC]
            F = stop - start
            at_base = np.zeros(F)
            at_base[rows[level < 0]] = dyn[level < 0]
            least = at_base.copy()
            best_index = np.zeros(F, dtype=np.int64)
            for lvl in range(len(n_part)):
                sel = np.flatnonzero(level == lvl)
                if not len(sel):
                    continue
                delta = dyn[sel] - at_base[rows[sel]]
                lowest = np.full(F, np.inf)
                np.minimum.at(lowest, rows[sel], delta)
                gain = np.minimum(lowest, 0.0)
                least += gain
                # the first variant of the row reaching its level's least, where it beats the first class
                hit = sel[(delta == lowest[rows[sel]]) & (delta < 0)]
                chosen = np.zeros(F, dtype=np.int64)
                chosen[rows[hit][::-1]] = index[hit][::-1]
                best_index += chosen
            finals = replace_orders(b, np.arange(F), orders_of(tables, m_part, n_part, best_index))
            fcosts = self.space.score(f, finals)
            self.evaluated += len(finals)
            self._take(self.space.best(f, finals, fcosts), 0)
            compute = fcosts.compute
            exact = few | fcosts.valid & (fcosts.time <= compute * (1 + SLACK))
            exact &= np.abs(fcosts.total - fcosts.energy[STATIC] - least) <= SLACK * np.abs(least)
            if not exact.all():
                energy = (least + compute * ev.hw.static) * (1 - SLACK)
                value = np.asarray(self.space.objective.of(energy, compute * (1 - SLACK)), dtype=float)
                rest = np.flatnonzero(~exact)
                if self.best is not None:
                    rest = rest[key_below(np.stack([value[rest], energy[rest]], axis=1), self.best.key)]
                self._every_order(f, b, m_part, n_part, rest)
            start = stop

    def _every_order(self, f: int, b: Blockings, masks: list[np.ndarray], n: list[np.ndarray],
                     which: np.ndarray) -> None:
        """Every combination of orders of the factor combinations ``which`` of ``b``."""
        table = class_table(self.space.frames[f].layer, DIMS)
        for at in range(0, len(which), 256):
            pick = which[at:at + 256]
            rows, orders = order_product([table] * len(n), [m[pick] for m in masks], [c[pick] for c in n])
            full = Blockings(b.unit[pick], tuple(c[pick] for c in b.counts), rows, orders)
            self._take(self.space.best(f, full), len(full))


def _one_level_at_a_time(n: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per combination with ``n[lvl]`` order classes at each level: the first
    class everywhere, then every other class of one level with the others at
    their first, as ``(rows, index, level)`` (index: the combination of
    classes, the first level's varying slowest, as :func:`orders_of` takes it;
    level: the one moved, -1 for none)."""
    F = n[0].shape[0] if n else 0
    rows = [np.arange(F)]
    index = [np.zeros(F, dtype=np.int64)]
    level = [np.full(F, -1, dtype=np.int64)]
    stride = np.ones(F, dtype=np.int64)
    for lvl in range(len(n) - 1, -1, -1):
        extra = n[lvl] - 1
        r = np.repeat(np.arange(F), extra)
        k = np.arange(int(extra.sum())) - np.repeat(np.cumsum(extra) - extra, extra) + 1
        rows.append(r)
        index.append(k * stride[r])
        level.append(np.full(len(r), lvl, dtype=np.int64))
        stride = stride * n[lvl]
    return np.concatenate(rows), np.concatenate(index), np.concatenate(level)


def replace_orders(b: Blockings, rows: np.ndarray, orders: tuple[np.ndarray, ...]) -> Blockings:
    return Blockings(b.unit, b.counts, rows, orders)


def _children(left: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """``(F,)`` how many ways each row of ``left`` splits (:func:`split_rows`)."""
    out = np.ones(left.shape[0], dtype=np.int64)
    for d in dims:
        values, inv = np.unique(left[:, d], return_inverse=True)
        out *= np.array([sum(1 for k in range(1, int(v) + 1) if v % k == 0) for v in values],
                        dtype=np.int64)[inv.reshape(-1)]
    return out
