"""KAPLA's bottom-up cost descent (Sec. IV-C, Algorithm 1) over any memory hierarchy.

The classic three-level hierarchy (registers, node buffer, DRAM) has its own,
finely tuned implementation (:mod:`kapla.search.layer.kapla.classic`); this one works
level by level on the frames of :mod:`kapla.space.layer.frames`, so depth, bypassed
tensors and per-tensor buffers come for free:

1. **frames** are ranked by the cost of one canonical blocking each (the
   smallest blocks below, everything left looping at the top), all costed
   by the cost model;
2. on the best ``top`` frames, from the registers out:

   * *unit*: every register block that fits level 0 is costed with everything
     else one level up, under each choice of innermost level-0 loop; the best
     ``beam`` go on;
   * *each middle level*: every count of its loops that keeps the next
     level's block within its buffers, under every distinct loop order,
     with what is left looping at the top; the best ``beam`` go on;
   * *the top two levels together*: every split of what is left between them
     that fits, under every pair of distinct loop orders, with the segment's
     feed: the best valid blocking is the frame's answer;
3. the best ``seeds`` blockings the descents end with (over all frames, each
   frame offering its best few) are **refined locally** by steepest descent,
   costed under the feed: a prime factor of one dim moved to any other level,
   one factor moved up while another moves down between adjacent levels
   (each with the loop orders of the levels it changes re-chosen), every
   split of two levels' factors between them, or one level's loop order
   alone, until no neighbour is better.

Frames in which no register block fits are passed over when ranking, so the
``top`` frames descended all have one.

Candidates are costed in batches by :func:`kapla.model.cost.evaluate_nests`
and checked against every buffer before they can win.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.tensors import DIMS
from kapla.model.evaluate import evaluate
from kapla.model.objective import better
from kapla.search.base import IntraResult, Outcome, memoised
from kapla.space.layer.diagnose import feed_unmet, no_scheme
from kapla.space.layer.frames import Blockings, FrameEvaluator, order_classes, split_rows, totals_of_many
from kapla.space.layer.layer_space import Found, LayerSpace
from kapla.space.layer.skeletons import MAX_JOINT_CANDIDATES, divisors, innermost_orders, prime_factors
from kapla.space.problem import NoSchemeError, Problem

ND = len(DIMS)
_ROWS_PER_STATE = 4  # candidates looked at per state kept: several best ones may share one factor row
_MAX_REFINED = 4  # frames re-ranked by their register blocks, at most, per frame wanted with a block that fits
SEEDS = 2  # descended blockings refined locally: the best of all frames' (each frame offering its best SEEDS)
_REFINE_STEPS = 16  # most steps of the local refinement of a descent's result
_MAX_CLASSES = 64  # classes of loop orders a refinement step tries at one level, at most
_MAX_RESPLIT = 4096  # splits of two levels' factors a refinement step tries, at most, per pair of levels


@dataclass
class _State:
    """A blocking grown up to some level: unit factors, and counts and orders of the levels done."""

    unit: np.ndarray  # (8,)
    counts: list[np.ndarray]  # per level done, (8,)
    orders: list[np.ndarray]  # per level done, (8,) permutation
    left: np.ndarray  # (8,) what the levels above must still cover


def solve_levels(problem: Problem, top: int = 4, beam: int = 3, refine: int = 16,
                 seeds: int = SEEDS) -> tuple[LayerScheme | None, int]:
    """The best scheme KAPLA's descent finds (None if none is valid), and the candidates costed."""
    return solve_levels_each(problem, (problem.objective,), top, beam, refine, seeds)[0]


def solve_levels_each(problem: Problem, objectives: Sequence[str], top: int = 4, beam: int = 3,
                      refine: int = 16, seeds: int = SEEDS) -> list[tuple[LayerScheme | None, int]]:
    """:func:`solve_levels` under each objective: the frames and their ranking
    (by energy, whatever the objective) are shared, each objective descending on its own."""
    space = LayerSpace(problem)
    if not len(space):
        return [(None, 0)] * len(objectives)
    ranked, ranking = _rank(space, top, refine, beam)
    spaces = {objective: space.under(objective) for objective in objectives}
    evaluated = dict.fromkeys(objectives, ranking)
    best: dict[str, Found | None] = dict.fromkeys(objectives)
    points: dict[str, list[tuple[tuple[float, float], int, _Point]]] = {objective: [] for objective in objectives}
    going = list(spaces)  # the objectives still descending
    for i, states in ranked:
        # frame by frame, each objective's descent in turn: they share the steps
        # where their states agree, kept only while this frame is searched
        memo: dict = {}
        if states is None:  # past the frames ranked best: an objective that found a scheme stops
            going = [objective for objective in going if best[objective] is None]
            if not going:
                break
            states, _, count = _register_blocks(space, i, beam)
            for objective in going:
                evaluated[objective] += count
        for objective in going:
            found, count, ends = _descend(spaces[objective], i, states, beam, memo, seeds)
            evaluated[objective] += count
            points[objective] += [(key, i, point) for key, point in ends]
            now = best[objective]
            if found is not None and (now is None or better(found.key, now.key)):
                best[objective] = found
    # the descents' best ends, whatever their frame, refined locally; a point's
    # neighbours and their costs do not depend on the objective, so the
    # refinements of several objectives share them where they pass the same point
    steps: dict = {}
    for objective in objectives:
        for _, i, point in sorted(points[objective], key=lambda end: end[0])[:seeds]:
            found, count = _refine(spaces[objective], i, point, steps)
            evaluated[objective] += count
            now = best[objective]
            if found is not None and (now is None or better(found.key, now.key)):
                best[objective] = found
    return [(_scheme(best[objective]), evaluated[objective]) for objective in objectives]


def _scheme(found: Found | None) -> LayerScheme | None:
    return None if found is None else found.scheme


def solve_any(problem: Problem) -> IntraResult:
    """:func:`solve_levels` as an intra-layer solver's result (NoSchemeError if nothing is valid)."""
    found = solve_any_each(problem, (problem.objective,))[0]
    if isinstance(found, NoSchemeError):
        raise found
    return found


def solve_any_each(problem: Problem, objectives: Sequence[str], top: int = 4, beam: int = 3) -> list[Outcome]:
    """:func:`solve_any` under each objective (:func:`solve_levels_each`, ``top`` frames descended,
    ``beam`` states kept per step): the result, or why there is none."""
    start = time.perf_counter()
    layer, batch, arch = problem.layer, problem.batch, problem.arch
    out: list[Outcome] = []
    for scheme, evaluated in solve_levels_each(problem, objectives, top, beam):
        if scheme is None:
            if problem.fed is not None and evaluated:

                out.append(feed_unmet(layer, batch, arch, problem.feed, evaluated))
            else:
                out.append(no_scheme(layer, batch, arch))
            continue
        cost = evaluate(scheme, arch, problem.feed)
        out.append(IntraResult(scheme, cost, evaluated + 1, time.perf_counter() - start))
        start = time.perf_counter()
    return out


def _rank(space: LayerSpace, top: int, refine: int, beam: int) -> tuple[list[tuple[int, list[_State] | None]], int]:
    """The frames to descend, in order, each with its best register blocks, and
    the candidates costed. Frames are ranked by the energy of their canonical
    blocking (smallest blocks, the rest at the top); the first ``refine`` are
    re-ranked by their best register block's energy. The best ``top`` of either
    ranking are descended; the others follow (blocks None), for when none of
    those has a valid scheme."""
    evs = [space.evaluator(i) for i in range(len(space))]
    values = [float(v[0]) for v in totals_of_many([(ev, _canonical(ev)) for ev in evs])]
    order = sorted(range(len(space)), key=lambda i: values[i])
    evaluated = len(space)
    blocks: dict[int, list[_State]] = {}
    refined: list[tuple[float, int]] = []
    for i in order:
        # frames in which no register block fits count for nothing: go on down the ranking
        if len(refined) >= refine or len(blocks) >= _MAX_REFINED * refine:
            break
        blocks[i], energy, count = _register_blocks(space, i, beam)
        evaluated += count
        if blocks[i]:
            refined.append((energy, i))
    refined.sort()
    canonical = [i for i in order if blocks.get(i)][:top]
    first = list(dict.fromkeys([i for _, i in refined[:top]] + canonical))
    chosen = set(first)
    rest = [i for i in order if i not in chosen]
    return [(i, blocks[i]) for i in first] + [(i, None) for i in rest], evaluated


def _canonical(ev: FrameEvaluator) -> Blockings:
    n = ev.levels
    counts = [np.ones((1, ND), np.int64) for _ in range(n)]
    counts[-1] = np.array([ev.frame.rest], dtype=np.int64)
    ident = np.arange(ND, dtype=np.int64)[None, :]
    return Blockings(np.ones((1, ND), np.int64), tuple(counts), np.zeros(1, np.int64), tuple([ident] * n))


def _blockings(states: list[_State], level: int, taken: np.ndarray, src: np.ndarray, n: int,
               orders_here: list[np.ndarray], top_orders: list[np.ndarray] | None = None
               ) -> tuple[Blockings, np.ndarray]:
    """Candidates extending ``states`` (``src`` picks the state of each factor row)
    with loop counts ``taken`` at ``level`` and the rest at the top; each factor
    row tried under each of its ``orders_here`` (and ``top_orders``)."""
    F = len(src)
    unit = np.stack([states[s].unit for s in src])
    left = np.stack([states[s].left for s in src]) // taken
    counts = []
    for lvl in range(n):
        if lvl < level:
            counts.append(np.stack([states[s].counts[lvl] for s in src]))
        elif lvl == level:
            counts.append(taken if level < n - 1 else taken * left)
        elif lvl == n - 1:
            counts.append(left)
        else:
            counts.append(np.ones((F, ND), np.int64))
    rows: list[int] = []
    ords: list[list[np.ndarray]] = [[] for _ in range(n)]
    ident = np.arange(ND, dtype=np.int64)
    for f in range(F):
        here = orders_here[f]
        tops = top_orders[f] if top_orders is not None else ident[None, :]
        for a, b in itertools.product(range(len(here)), range(len(tops))):
            rows.append(f)
            for lvl in range(n):
                if lvl < level:
                    ords[lvl].append(states[src[f]].orders[lvl])
                elif lvl == level:
                    ords[lvl].append(here[a])
                elif lvl == n - 1:
                    ords[lvl].append(tops[b])
                else:
                    ords[lvl].append(ident)
    found = Blockings(unit, tuple(counts), np.array(rows, dtype=np.int64),
                      tuple(np.array(o, dtype=np.int64).reshape(-1, ND) for o in ords))
    return found, left


def _register_blocks(space: LayerSpace, index: int, beam: int) -> tuple[list[_State], float, int]:
    """The frame's best ``beam`` register blocks (every block that fits level 0
    and leaves room above, costed with everything else one level up under each
    innermost loop there), the least energy among them (inf: none fits), and
    the candidates costed."""
    ev = space.evaluator(index)
    rest = np.array(ev.frame.rest, dtype=np.int64)
    _, units = split_rows(rest[None, :], ev.frame.dims)
    units = units[ev.fits_above(0, units, ())]
    if len(units) == 0:
        return [], math.inf, 0
    states = [_State(u, [], [], rest // u) for u in units]
    if ev.levels == 1:
        return states, 0.0, 0
    lefts = rest[None, :] // units
    b, _ = _blockings(states, 0, lefts, np.arange(len(states)), ev.levels, [innermost_orders(x, ND) for x in lefts])
    # the block one level up holds everything left: its own buffers are judged later
    costs = ev.costs(b, rules=False)
    energy = np.full(len(states), np.inf)
    np.minimum.at(energy, b.rows, costs.total)
    keep = np.argsort(energy, kind="stable")[:beam]
    return [states[i] for i in keep], float(energy[keep[0]]), len(b)


def _descend(space: LayerSpace, index: int, states: list[_State], beam: int,
             memo: dict | None = None, ends: int = 0
             ) -> tuple[Found | None, int, list[tuple[tuple[float, float], _Point]]]:
    """The frame's best blocking grown from its register blocks ``states``, the
    candidates costed, and its best ``ends`` blockings (distinct factors, with
    their keys) for :func:`_refine`. ``memo`` keeps each step's candidates and
    costs, which do not depend on the objective: the descents of several
    objectives on one space share the steps where their states agree."""
    memo = {} if memo is None else memo
    objective = space.objective
    evaluated = 0
    if not states:
        return None, evaluated, []

    # ---- middle levels, one at a time, the rest at the top
    for level in range(0, space.evaluator(index).levels - 2):
        step = memoised(memo, ("middle", index, level, _states_key(states)), _middle, space, index, states, level)
        if step is None:
            return None, evaluated, []
        src, taken, b, left, costs = step
        evaluated += len(b)
        order = np.lexsort((costs.total, objective.of(costs.total, costs.time)))[: beam * _ROWS_PER_STATE]
        nxt, seen = [], set()
        for i in order:
            f = b.rows[i]
            if f in seen:
                continue
            seen.add(f)
            s = states[src[f]]
            nxt.append(_State(s.unit, s.counts + [taken[f]], s.orders + [b.orders[level][i]], left[f]))
            if len(nxt) == beam:
                break
        states = nxt

    # ---- the top two levels together (the top alone on a one-level chip), with the feed
    top = memoised(memo, ("top", index, _states_key(states)), _top, space, index, states)
    if top is None:
        return None, evaluated, []
    b, costs = top
    return space.best(index, b, costs), evaluated + len(b), _points(b, costs, objective, ends)


def _states_key(states: list[_State]) -> tuple[bytes, ...]:
    return tuple(b"".join(a.tobytes() for a in (s.unit, *s.counts, *s.orders, s.left)) for s in states)


def _middle(space: LayerSpace, index: int, states: list[_State], level: int):
    """A middle level's candidates from ``states`` and their costs: (the state of
    each factor row, its loop counts here, the blockings, what is left above,
    their costs), or None if no count fits."""
    ev = space.evaluator(index)
    n, dims, layer = ev.levels, ev.frame.dims, ev.frame.layer
    src, taken = split_rows(np.stack([s.left for s in states]), dims)
    cand_counts = [states[s].counts + [taken[k]] for k, s in enumerate(src)]
    # the next level's block fits, and leaves room for every level above
    ok = ev.fits_above(level + 1, np.stack([states[s].unit for s in src]),
                       [np.stack([c[lvl] for c in cand_counts]) for lvl in range(level + 1)])
    src, taken = src[ok], taken[ok]
    if len(src) == 0:
        return None
    b, left = _blockings(states, level, taken, src, n, list(order_classes(layer, taken)))
    return src, taken, b, left, ev.costs(b, rules=False)


def _top(space: LayerSpace, index: int, states: list[_State]):
    """The top two levels' candidates from ``states`` (the top alone on a
    one-level chip) and their costs under the feed, or None if no split fits."""
    ev = space.evaluator(index)
    n, dims, layer = ev.levels, ev.frame.dims, ev.frame.layer
    level = max(n - 2, 0)
    if n == 1:
        src = np.arange(len(states))
        taken = np.stack([s.left for s in states])
        b, _ = _blockings(states, 0, taken, src, n, list(order_classes(layer, taken)))
        return b, space.score(index, b)
    src, taken = split_rows(np.stack([s.left for s in states]), dims)
    unit_rows = np.stack([states[s].unit for s in src])
    counts_below = [np.stack([states[s].counts[lvl] for s in src]) for lvl in range(level)]
    ok = ev.fits(level + 1, ev.block(level + 1, unit_rows, counts_below + [taken]))
    src, taken = src[ok], taken[ok]
    if len(src) == 0:
        return None
    left = np.stack([states[s].left for s in src]) // taken
    here = list(order_classes(layer, taken))
    tops = list(order_classes(layer, left))
    if sum(len(a) * len(t) for a, t in zip(here, tops, strict=True)) > MAX_JOINT_CANDIDATES:
        here = [innermost_orders(t, ND) for t in taken]
    b, _ = _blockings(states, level, taken, src, n, here, tops)
    return b, space.score(index, b)


@dataclass
class _Point:
    """One complete blocking of a frame: unit factors, and each level's loop counts and order."""

    unit: np.ndarray  # (8,)
    counts: tuple[np.ndarray, ...]  # per level, (8,)
    orders: tuple[np.ndarray, ...]  # per level, (8,) permutation

    def key(self) -> bytes:
        return b"".join(a.tobytes() for a in (self.unit, *self.counts, *self.orders))

    def blockings(self) -> Blockings:
        return Blockings(self.unit[None, :], tuple(c[None, :] for c in self.counts), np.zeros(1, np.int64),
                         tuple(o[None, :] for o in self.orders))


def _points(b: Blockings, costs, objective, k: int) -> list[tuple[tuple[float, float], _Point]]:
    """The best ``k`` valid candidates of ``b`` with distinct factors, best first, with their keys."""
    if k <= 0:
        return []
    value = costs.value(objective)
    out: list[tuple[tuple[float, float], _Point]] = []
    seen: set[int] = set()
    for i in np.lexsort((costs.total, value)):
        if not math.isfinite(value[i]):
            break
        f = int(b.rows[i])
        if f in seen:
            continue
        seen.add(f)
        out.append(((float(value[i]), float(costs.total[i])),
                    _Point(b.unit[f], tuple(c[f] for c in b.counts), tuple(o[i] for o in b.orders))))
        if len(out) == k:
            break
    return out




def _refine(space: LayerSpace, index: int, point: _Point, steps: dict | None = None) -> tuple[Found | None, int]:
    """Local refinement of one complete blocking: steepest descent over its
    neighbours (:func:`_neighbours`: a prime factor of one dim moved to another
    level, or one factor moved up while another moves down between adjacent
    levels, each with the loop orders of the levels it changes re-chosen; or
    one level's loop order alone), costed under the feed, until no neighbour
    is better or ``_REFINE_STEPS`` steps. The best valid blocking reached
    (None if even ``point`` is not valid), and the candidates costed.
    ``steps`` keeps each point's scored neighbours for other refinements."""
    steps = {} if steps is None else steps
    b = point.blockings()
    costs = space.score(index, b)
    evaluated = 1
    value = costs.value(space.objective)
    if not math.isfinite(value[0]):
        return None, evaluated
    key = (float(value[0]), float(costs.total[0]))
    for _ in range(_REFINE_STEPS):
        nb, c = memoised(steps, (index, point.key()), _scored_neighbours, space, index, point)
        if nb is None:
            break
        evaluated += len(nb)
        v = c.value(space.objective)
        i = space.objective.argbest(v, c.total)
        new = (float(v[i]), float(c.total[i]))
        if not math.isfinite(new[0]) or not better(new, key):
            break
        f = int(nb.rows[i])
        point = _Point(nb.unit[f], tuple(x[f] for x in nb.counts), tuple(o[i] for o in nb.orders))
        key = new
    return space.best(index, point.blockings()), evaluated


def _scored_neighbours(space: LayerSpace, index: int, point: _Point):
    """The point's neighbours and their costs under the feed (None, None: it has none)."""
    nb = _neighbours(space.evaluator(index), point)
    return (None, None) if nb is None else (nb, space.score(index, nb))


def _neighbours(ev: FrameEvaluator, point: _Point) -> Blockings | None:
    """The blockings next to ``point`` that fit every buffer (see :func:`_refine`)."""
    n = ev.levels
    dims = ev.frame.dims
    slots = np.stack([point.unit, *point.counts])  # slot 0: the unit, slot j + 1: level j's counts
    moves: list[np.ndarray] = [slots]
    for d in dims:
        for a in range(n + 1):
            for p in prime_factors(int(slots[a, d])):
                for c in range(n + 1):
                    if c != a:
                        s = slots.copy()
                        s[a, d] //= p
                        s[c, d] *= p
                        moves.append(s)
    for a in range(n):  # one factor up and another down across adjacent slots: blocks keep about their size
        ups = [(d, p) for d in dims for p in prime_factors(int(slots[a, d]))]
        downs = [(d, p) for d in dims for p in prime_factors(int(slots[a + 1, d]))]
        for (d, p), (e, q) in itertools.product(ups, downs):
            if d != e:
                s = slots.copy()
                s[a, d] //= p
                s[a + 1, d] *= p
                s[a + 1, e] //= q
                s[a, e] *= q
                moves.append(s)
    cand = _fitting(ev, np.unique(np.stack(moves), axis=0))
    # every split of two slots' factors between them, under the current orders
    resplit = []
    for a, c in itertools.combinations(range(n + 1), 2):
        both = (slots[a] * slots[c])[None, :]
        if math.prod(len(divisors(int(v))) for v in both[0, list(dims)]) > _MAX_RESPLIT:
            continue
        _, taken = split_rows(both, dims)
        s = np.repeat(slots[None, :, :], len(taken), axis=0)
        s[:, a], s[:, c] = taken, both // taken
        resplit.append(s)
    if resplit:
        whole = _fitting(ev, np.unique(np.concatenate(resplit), axis=0))
        known = {x.tobytes() for x in cand}
        extra = [x for x in whole if x.tobytes() not in known]
    else:
        extra = []
    if len(cand) == 0 and not extra:
        return None
    layer = ev.frame.layer
    rows: list[int] = []
    ords: list[list[np.ndarray]] = [[] for _ in range(n)]
    for f, s in enumerate(cand):
        changed = np.any(s != slots, axis=1)
        if not changed.any():
            levels = set(range(n))  # the same factors: each level's order alone
        else:
            levels = {max(int(j) - 1, 0) for j in np.flatnonzero(changed)}
        # the current orders, then each changed level under each of its classes of orders
        rows.append(f)
        for lvl in range(n):
            ords[lvl].append(point.orders[lvl])
        for lvl in sorted(levels):
            classes = order_classes(layer, s[lvl + 1][None, :])[0]
            if len(classes) > _MAX_CLASSES:
                classes = innermost_orders(s[lvl + 1], ND)
            for o in classes:
                rows.append(f)
                for m in range(n):
                    ords[m].append(o if m == lvl else point.orders[m])
    if extra:
        base = len(cand)
        cand = np.concatenate([cand, np.stack(extra)])
        for f in range(base, len(cand)):
            s = cand[f]
            rows.append(f)
            for lvl in range(n):
                ords[lvl].append(point.orders[lvl])
            # each changed level under each choice of its innermost loop
            for lvl in sorted({max(int(j) - 1, 0) for j in np.flatnonzero(np.any(s != slots, axis=1))}):
                for o in innermost_orders(s[lvl + 1], ND):
                    rows.append(f)
                    for m in range(n):
                        ords[m].append(o if m == lvl else point.orders[m])
    return Blockings(cand[:, 0], tuple(cand[:, j + 1] for j in range(n)), np.array(rows, dtype=np.int64),
                     tuple(np.array(o, dtype=np.int64).reshape(-1, ND) for o in ords))


def _fitting(ev: FrameEvaluator, cand: np.ndarray) -> np.ndarray:
    """The rows of ``cand`` ``(F, levels + 1, 8)`` (unit factors, then each level's
    counts) whose blocks fit every buffer."""
    ok = np.ones(len(cand), dtype=bool)
    for level in range(ev.levels):
        ok &= ev.fits(level, ev.block(level, cand[:, 0], [cand[:, j + 1] for j in range(level)]))
    return cand[ok]


__all__ = ["solve_any", "solve_any_each", "solve_levels", "solve_levels_each"]
