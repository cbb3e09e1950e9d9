"""KAPLA's bottom-up cost descent (Sec. IV-C, Algorithm 1), one for every memory hierarchy.

It works level by level on the frames of :mod:`kapla.space.layer.frames`, so
depth, bypassed tensors and per-tensor buffers come for free:

1. **frames** are ranked by KAPLA's analytic estimates
   (:mod:`kapla.search.layer.kapla.estimates`); the first ``refine`` (and
   ``refine_regf`` more by the register-aware estimate, and a third as many
   relaxed ones) are re-ranked by their best register block: its energy with
   everything else one level up (the cost model's) plus what the analytic
   DRAM-level blockings must re-fetch once it is fixed; blocks that leave
   wholly idle iterations are passed over.
   Relaxed mappings (strips, partial filters) are ranked beside the
   template's whole rows and filters, never in place of them: the best
   ``top`` template frames are descended, and the best ``top // 2`` relaxed
   ones. Where the estimates see only the two ends of a deeper hierarchy,
   the cost model's own ranking (one canonical blocking per frame) adds its
   best few;
2. on those frames, from the registers out:

   * *unit*: the frame's best ``beam`` register blocks, from the ranking (on
     a relaxed frame twice as many, descended ``beam`` at a time);
   * *each middle level*: every count of its loops that keeps the next
     level's block within its buffers, under every distinct loop order,
     with what is left looping at the top; the best ``beam`` go on;
   * *the top two levels together*: every split of what is left between them
     that fits, under every pair of distinct loop orders (when those are too
     many, each split first under one innermost loop per level, past
     ``_COARSE_SPLITS`` only those on a coarse grid, the best ``_KEPT_SPLITS``
     then under every pair), with the segment's feed: the
     best valid blocking is the frame's answer;

   where the buffers or a feed rule frames out, the descent goes on down the
   ranking until ``top`` frames gave a scheme;
3. the best ``seeds`` blockings the descents end with (over all frames, each
   frame offering its best few) are **refined locally** by steepest descent,
   costed under the feed: a prime factor of one dim moved to any other level,
   one factor moved up while another moves down between adjacent levels
   (each with the loop orders of the levels it changes re-chosen), every
   split of two levels' factors between them, or one level's loop order
   alone, until no neighbour is better.

Candidates are costed in batches by :func:`kapla.model.cost.evaluate_nests`
and checked against every buffer before they can win.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.tensors import DIMS
from kapla.model.cost import evaluate_nests
from kapla.model.evaluate import LayerCost, evaluate
from kapla.model.feed import Feed
from kapla.model.hardware import hardware
from kapla.model.objective import better, objective_of
from kapla.search.base import IntraResult, Outcome, memoised
from kapla.search.layer.kapla import estimates
from kapla.search.layer.kapla.estimates import FrameArrays, frame_arrays
from kapla.space.layer.diagnose import feed_unmet, no_scheme
from kapla.space.layer.frames import (
    CHUNK,
    Blockings,
    Frame,
    FrameEvaluator,
    coverage_of_units,
    fits_above_many,
    frame_totals,
    merged_nests,
    order_classes,
    split_rows,
    totals_of_many,
)
from kapla.space.layer.layer_space import Found, LayerSpace
from kapla.space.layer.skeletons import (
    divisors,
    innermost_orders,
    innermost_table,
    looping_mask,
    order_product,
    prime_factors,
)
from kapla.space.problem import Problem

ND = len(DIMS)
_ROWS_PER_STATE = 4  # candidates looked at per state kept: several best ones may share one factor row
REFINE = 30  # frames re-ranked by their best register block's estimate, the first by the frame's estimate
_RELAXED_SHARE = 3  # relaxed frames re-ranked: this fraction of ``refine``, the best by the frame estimate
_RELAXED_BEAM = 2  # times as many register blocks descended on a relaxed frame
REFINE_REGF = 12  # and this many more, the first by the register-aware estimate
_RELAXED_SEED = True  # the best end of a relaxed frame is refined too
_BEST_SIBLING = True  # the frame of the best scheme brings its most-shared sibling
_SHARED_SIBLINGS = True  # with a middle level, each template frame descended brings its most-shared sibling
_ALONE_UNRANKED = True  # a frame alone is descended without its estimates worked out
_FEED_COSTS = True  # register blocks and the model's own ranking costed under the problem's feed
_FED_SIBLINGS = True  # under a feed, each frame descended brings its sibling sharing none of the data kept on chip
SEEDS = 2  # descended blockings refined locally: the best of all frames' (each frame offering its best SEEDS)
# candidates of the top two levels past which each split is first tried under
# one innermost loop per level, and only the best ``_KEPT_SPLITS`` splits under
# every pair of orders, at most ``_KEPT_CANDIDATES`` (on the benchmark's 570
# layers, the same schemes as trying every split under every pair, at a
# fraction of the candidates; 1024, 32 and 60,000 find the same)
_STAGED_CANDIDATES = 256
_KEPT_SPLITS = 8  # splits of the top two levels searched under every pair of orders, when they are many
_KEPT_CANDIDATES = 8192
_MAX_EXTRA = 3  # frames descended past the best ranked, per frame wanted, once a scheme was found
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


def solve_levels_each(problem: Problem, objectives: Sequence[str], top: int = 4, beam: int = 3,
                      refine: int = REFINE, seeds: int = SEEDS, refine_regf: int = REFINE_REGF
                      ) -> list[tuple[LayerScheme | None, int]]:
    """The best scheme KAPLA's descent finds under each objective (None if none
    is valid), and the candidates costed: the frames and their ranking (by
    energy, whatever the objective) are shared, each objective descending on its own."""
    space = LayerSpace(problem)
    if not len(space):
        return [(None, 0)] * len(objectives)
    head, rest, ranking, arr = _rank(space, top, refine, beam, refine_regf)
    ranked = itertools.chain(head, rest)
    # the top levels of every frame ranked first, searched together: one model call per stage
    # for all of them (where no middle level comes first, their states are the register blocks)
    known = _prefetched_tops(space, head, beam)
    spaces = {objective: space.under(objective) for objective in objectives}
    evaluated = dict.fromkeys(objectives, ranking)
    best: dict[str, Found | None] = dict.fromkeys(objectives)
    points: dict[str, list[tuple[tuple[float, float], int, _Point]]] = {objective: [] for objective in objectives}
    schemes = dict.fromkeys(objectives, 0)  # frames in which each objective's descent found a scheme
    extra = 0  # frames descended past the best ranked, once some scheme was found
    going = list(spaces)  # the objectives still descending
    best_frame: dict[str, int] = {}
    descended: set[int] = set()

    def visit(i: int, states: list[_State], objectives_: Sequence[str],
              into: dict[str, list[tuple[tuple[float, float], int, _Point]]]) -> None:
        # frame by frame, each objective's descent in turn: they share the steps
        # where their states agree, kept only while this frame is searched
        memo: dict = known.pop(i, {})
        descended.add(i)
        for objective in objectives_:
            # ``beam`` register blocks at a time (a relaxed frame has more): each
            # group descends as a frame with fewer would, the others beside it
            gave = False
            for group in range(0, len(states), beam):
                # only the first group's ends are refined: the others' would
                # crowd out the seeds a frame with ``beam`` blocks would give
                found, count, ends = _descend(spaces[objective], i, states[group:group + beam], beam, memo,
                                              0 if group else seeds)
                evaluated[objective] += count
                into[objective] += [(key, i, point) for key, point in ends]
                now = best[objective]
                if found is not None:
                    gave = True
                    if now is None or better(found.key, now.key):
                        best[objective] = found
                        best_frame[objective] = i
            schemes[objective] += gave

    for i, states in ranked:
        if states is None:
            # past the frames ranked best: where the buffers or a feed ruled some
            # out, go on down the ranking until ``top`` frames gave a scheme
            going = [objective for objective in going if schemes[objective] < top]
            if any(schemes[objective] for objective in going):
                extra += 1
            if not going or extra > _MAX_EXTRA * top:
                break
            blocks, _, count = _register_blocks(space, [i], arr, beam)
            states = blocks.get(i, [])
            for objective in going:
                evaluated[objective] += count
        visit(i, states, going, points)
    # ends of descents added after the ranked ones: refined beside the best
    # ends of those, never in place of them
    late: dict[str, list[tuple[tuple[float, float], int, _Point]]] = {objective: [] for objective in objectives}
    if _BEST_SIBLING:
        # the frame that gave the best scheme brings its most-shared sibling
        # too, where the ranking did not: the room sharing frees in the node
        # buffers is worth more than the estimates tell (VGG-16 conv1_2 on a 4x4
        # block at batch 64: a strip frame sharing the weights among all 16
        # nodes is 11 % lower, ranked 184th; with a middle level, see _rank)
        for objective in objectives:
            at = best_frame.get(objective)
            j = None if at is None else _most_shared_siblings(space, [at], set(descended)).get(at)
            if j is not None:
                found_blocks, _, count = _register_blocks(space, [j], arr, beam)
                evaluated[objective] += count
                if found_blocks.get(j):
                    visit(j, found_blocks[j], [objective], late)
    # the descents' best ends, whatever their frame, refined locally; a point's
    # neighbours and their costs do not depend on the objective, so the
    # refinements of several objectives share them where they pass the same point
    steps: dict = {}
    jobs: list[tuple[str, tuple[float, float], int, _Point]] = []
    for objective in objectives:
        ranked_ends = sorted(points[objective], key=lambda end: end[0])
        seeded = ranked_ends[:seeds]
        if seeds and _RELAXED_SEED and not any(space.frames[i].relaxed for _, i, _ in seeded):
            # a relaxed frame's descent ends further from its best blocking (its
            # register blocks judged with a partial filter looped above them, or a
            # strip reloading its halo): its best end is refined too (AlexNet conv2
            # at batch 16 on the four-level example: 7.17 -> 6.00 mJ, where the
            # best two ends of the template's frames stay at 6.54)
            seeded += [end for end in ranked_ends[seeds:] if space.frames[end[1]].relaxed][:1]
        seeded += sorted(late[objective], key=lambda end: end[0])[:1 if seeds else 0]
        jobs += [(objective, key, i, point) for key, i, point in seeded]
    refined = _refine_all(space, [(spaces[objective], i, point, key) for objective, key, i, point in jobs], steps)
    for (objective, *_), (found, count) in zip(jobs, refined, strict=True):
        evaluated[objective] += count
        now = best[objective]
        if found is not None and (now is None or better(found.key, now.key)):
            best[objective] = found
    return [(_scheme(best[objective]), evaluated[objective]) for objective in objectives]


def _prefetched_tops(space: LayerSpace, head: Sequence[tuple[int, list[_State]]], beam: int) -> dict[int, dict]:
    """Per frame of ``head`` (with its register blocks), the memo of its
    descents holding :func:`_top` of each group of ``beam`` blocks, worked out
    for all frames together (:func:`_tops`); none where a frame has a level
    between the registers and its top two levels (its states there depend on
    the objective)."""
    jobs = [(i, states[g:g + beam]) for i, states in head for g in range(0, len(states), beam)]
    if len(jobs) < 2 or any(space.evaluator(i).levels > 2 for i, _ in jobs):
        return {}
    memos: dict[int, dict] = {}
    for (i, states), top in zip(jobs, _tops(space, jobs), strict=True):
        memos.setdefault(i, {})[("top", i, _states_key(states))] = top
    return memos


def _feed_of(space: LayerSpace) -> Feed | None:
    """The feed the cost model takes for the space's problem (None: everything through DRAM)."""
    return space.problem.fed if _FEED_COSTS else None


def _scheme(found: Found | None) -> LayerScheme | None:
    return None if found is None else found.scheme


def solve_any_each(problem: Problem, objectives: Sequence[str], top: int = 4, beam: int = 3, refine: int = REFINE,
                   refine_regf: int = REFINE_REGF) -> list[Outcome]:
    """:func:`solve_levels_each` as an intra-layer solver's outcomes (``top`` frames
    descended, ``beam`` states kept per step, ``refine`` and ``refine_regf`` frames
    re-ranked): per objective the result, or why there is none."""
    start = time.perf_counter()
    layer, batch, arch = problem.layer, problem.batch, problem.arch
    out: list[Outcome] = []
    costs: dict[LayerScheme, LayerCost] = {}  # the objectives mostly agree on the scheme: costed once
    for scheme, evaluated in solve_levels_each(problem, objectives, top, beam, refine, SEEDS, refine_regf):
        if scheme is None:
            if problem.fed is not None and evaluated:
                out.append(feed_unmet(layer, batch, arch, problem.feed, evaluated))
            else:
                out.append(no_scheme(layer, batch, arch))
            continue
        cost = memoised(costs, scheme, evaluate, scheme, arch, problem.feed)
        out.append(IntraResult(scheme, cost, evaluated + 1, time.perf_counter() - start))
        start = time.perf_counter()
    return out


def _rank(space: LayerSpace, top: int, refine: int, beam: int, refine_regf: int = REFINE_REGF
          ) -> tuple[list[tuple[int, list[_State]]], Iterator[tuple[int, list[_State] | None]], int, FrameArrays]:
    """The frames to descend, in order, each with its best register blocks, and
    the candidates costed. Frames are ranked by their analytic estimate
    (:func:`kapla.search.layer.kapla.estimates.estimates`); the first ``refine``
    of them, and the first ``refine_regf`` others by the register-aware
    estimate, are re-ranked together by their best register block's estimate
    (:func:`_register_blocks`). The best ``top`` frames with a register block
    that fits are descended; the others follow (blocks None), for when none of
    those has a valid scheme. Also the frames' rows for the estimates."""
    arch = space.problem.arch
    arr = frame_arrays(space.frames, arch)
    est = _Estimates(arr, arch)
    # a relaxed mapping's strips and partial filters are estimated less
    # faithfully than whole rows and filters: they are searched beside the
    # template's frames, never in place of them
    relaxed = np.array([f.relaxed for f in space.frames], dtype=bool)
    everything = np.arange(len(space.frames), dtype=np.int64)
    plain = everything[~relaxed]
    # relaxed frames have a re-ranking budget of their own: the frame estimate
    # ranks them behind the template's (it assumes strips reload their halos
    # and partial filters their windows), but their best register block can
    # be the best of all (AlexNet conv1 on a 4x4 block of nodes: a third lower)
    # a frame alone is first whatever its estimate (a chip of one node: most solves on ``edge``),
    # which is then not worked out (a DRAM estimate is about a twentieth of such a solve)
    alone = _ALONE_UNRANKED and len(everything) == 1 and refine > 0
    if alone:
        head = everything.tolist()
    else:
        among = int(relaxed[est.least(everything, refine, est.on)].sum())  # those ranked among the first
        head = (est.least(plain, refine, est.on).tolist()
                + est.least(everything[relaxed], max(among, refine // _RELAXED_SHARE), est.on).tolist())
    if refine_regf and not alone:
        # the on-chip bound assumes registers that hold a PE's whole block;
        # where they cannot, a frame it ranks low can be the best
        # worked out only for the frames the ranking reaches, once per kind of frame
        # (frames that differ only at the node level have the same estimate)
        static = arr.trips * arch.static_energy
        one, kind = estimates.regf_rows(arr)
        values = np.full(len(one), np.nan)
        by_regf = np.full(len(everything), np.nan)

        def fill(idx: np.ndarray) -> None:
            kinds = np.unique(kind[idx])
            kinds = kinds[np.isnan(values[kinds])]
            if len(kinds):
                values[kinds] = estimates.regf(arr.take(one[kinds]), arch)
            by_regf[idx] = static[idx] + values[kind[idx]]

        floor = static + estimates.regf_floor(arr.take(one), arch)[kind]
        left = plain[~np.isin(plain, head)]
        head += est.least(left, refine_regf, by_regf, floor, fill).tolist()
    # a relaxed frame's best blocking is further from its best register blocks
    # by the estimate (a partial filter looped above them, a strip reloading
    # its halo): more of them are descended
    wide = [i for i in head if relaxed[i]]
    narrow = [i for i in head if not relaxed[i]]
    blocks, refined, evaluated = _register_blocks(space, narrow, arr, beam)
    if wide:
        wide_blocks, wide_refined, count = _register_blocks(space, wide, arr, beam * _RELAXED_BEAM)
        blocks.update(wide_blocks)
        evaluated += count
        by_frame = dict(zip(narrow + wide, refined.tolist() + wide_refined.tolist(), strict=True))
        refined = np.array([by_frame[i] for i in head])
    chosen = set(head)
    order = [head[j] for j in np.argsort(refined, kind="stable")]
    # the best ``top`` template frames, and the best half as many relaxed ones
    with_blocks = [i for i in order if blocks.get(i)]
    # frames alike in both estimates and in what they leave to blocking (as a
    # multiset) are mirror images (stacks over Y or X, or the same stacks in
    # another order, on a symmetric layer): one of them stands for all, so that
    # the descents go to frames that differ (a relaxed frame whose unit is free
    # can tie with one whose loops are, and holds more). Not under
    # a feed: the estimates ignore it, and where the data come from or go to
    # can tell mirror images apart
    fed = space.problem.fed is not None
    twins: dict[int, tuple]
    if alone:  # no other frame to be a mirror image of
        twins = {i: (i,) for i in head}
    else:
        twins = {i: (est.key(i), float(refined[j]), bool(relaxed[i]), tuple(sorted(space.frames[i].rest)))
                 + ((i,) if fed else ()) for j, i in enumerate(head)}
    with_blocks = _first_of_each(with_blocks, twins)
    kept = set([i for i in with_blocks if not relaxed[i]][:top]
               + [i for i in with_blocks if relaxed[i]][:max(top // 2, 1)])
    first = [i for i in with_blocks if i in kept]
    if arr.below.shape[1] and _SHARED_SIBLINGS:
        # with a level between the registers and the node buffer, sharing a
        # tensor among nodes frees node-buffer room that lets that level keep
        # its partial sums across a whole reduction: the estimates, which see
        # the hierarchy through its two ends, charge the rotation and miss
        # that, so each template frame descended brings its most-shared sibling
        first, count = _with_siblings(space, first, _most_shared_siblings(
            space, [i for i in first if not relaxed[i]], set(first)), arr, beam, blocks)
        evaluated += count
    if space.problem.fed is not None and _FED_SIBLINGS:
        # data a segment keeps on chip (a forwarded input, pinned weights, an
        # output left for its consumers) cross DRAM at most once whatever the
        # blocking: sharing them among nodes saves no DRAM fetch, yet costs its
        # rotation. The estimates ignore the feed and rank sharing them high, so
        # each frame descended brings its sibling that shares none of them
        # (MLP-S fc3 at the end of a spatial pipeline: 10 % lower)
        first, count = _with_siblings(space, first, _unshared_siblings(space, first, set(first)), arr, beam,
                                      blocks)
        evaluated += count
    if not estimates.faithful(arch):
        # the estimates see a deeper hierarchy through its two ends only: the
        # cost model's own ranking of the frames adds its best few
        more, count = _model_ranked(space, top, beam)
        evaluated += count
        kinds = {twins[i] for i in first if i in twins}
        for i, states in more:
            if i not in first and twins.get(i) not in kinds:
                first.append(i)
                blocks[i] = states
                if i in twins:
                    kinds.add(twins[i])
    taken = set(first)

    def rest() -> Iterator[tuple[int, list[_State] | None]]:
        # the frames past those descended, in the estimate's order: only
        # reached where the buffers or a feed rule the first ones out
        yield from ((i, None) for i in order if i not in taken)
        if len(chosen) < len(everything):  # (else none is left: a frame alone is not ranked)
            yield from ((i, None) for i in est.least(everything, len(everything), est.on).tolist()
                        if i not in taken and i not in chosen)

    return [(i, blocks[i]) for i in first], rest(), evaluated, arr


class _Estimates:
    """The frames' analytic estimates (:func:`kapla.search.layer.kapla.estimates.estimates`),
    their DRAM part computed only where a ranking needs it: what fetching
    every tensor once costs bounds it from below, so a frame whose bound is
    past the ``k``-th best value known cannot be among the best ``k``. A
    frame none of whose DRAM-level blockings fits ranks behind every frame
    that fits (among them, by the rest of its estimate)."""

    def __init__(self, arr: FrameArrays, arch: ArchSpec) -> None:
        self.arr, self.arch = arr, arch
        self.dram = np.full(len(arr.rest), np.nan)

    # worked out when a ranking first needs them: a frame alone needs none
    @functools.cached_property
    def on(self) -> np.ndarray:
        return estimates.on_chip(self.arr, self.arch)

    @functools.cached_property
    def once(self) -> np.ndarray:
        return estimates.fetch_once(self.arr, self.arch)

    def _compute(self, idx: np.ndarray) -> None:
        missing = idx[np.isnan(self.dram[idx])]
        for a in range(0, len(missing), _ROWS_PER_CALL):
            part = missing[a:a + _ROWS_PER_CALL]
            self.dram[part] = estimates.dram(self.arr.take(part), self.arch, unfit=np.inf)

    def _keys(self, idx: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = self.dram[idx]
        unfit = ~np.isfinite(d)
        return unfit, np.where(unfit, base[idx], base[idx] + d)

    def key(self, i: int) -> tuple[bool, float]:
        """Frame ``i``'s place by :attr:`on` plus the DRAM estimate (computed)."""
        unfit, value = self._keys(np.array([i]), self.on)
        return bool(unfit[0]), float(value[0])

    def least(self, pool: np.ndarray, k: int, base: np.ndarray, floor: np.ndarray | None = None,
              fill: Callable[[np.ndarray], None] | None = None) -> np.ndarray:
        """The ``k`` frames of ``pool`` least by ``base`` plus the DRAM estimate,
        best first (ties by index). ``base`` may be worked out lazily too: NaN
        where not yet, ``fill(idx)`` working it out in place, ``floor`` bounding
        it from below.

        Both terms are worked out lazily, best first: a frame's lower bound is
        each term where known, else its floor (``floor``, :attr:`once`); batches
        of the frames least by it have their base, then (those still in the
        running) their DRAM estimate worked out, until no frame not fully known
        has a bound at most the ``k``-th best value known. A weak floor (the
        base's) so costs a DRAM estimate only of the frames whose base leaves
        them a chance."""
        if k <= 0 or not len(pool):
            return pool[:0]
        lower = base[pool] if floor is None else np.where(np.isnan(base[pool]), floor[pool], base[pool])
        step = max(8 * k, 256)  # few calls: each has a fixed cost
        while True:
            b, d = base[pool], self.dram[pool]
            complete = ~np.isnan(b) & ~np.isnan(d)
            done = pool[complete]
            unfit, value = self._keys(done, base)
            best = np.lexsort((done, value, unfit))
            # the k-th best known so far: an open frame whose bound is past it cannot be among the k
            cut = (float(value[best[k - 1]]) if len(best) >= k and not unfit[best[k - 1]] else math.inf)
            bound = np.where(np.isnan(b), lower, b) + np.where(np.isnan(d), self.once[pool], d)
            open_ = ~complete & (bound <= cut)
            if not open_.any():
                return done[best[:k]]
            cand, cb = pool[open_], bound[open_]
            if len(cand) > step:
                part = np.argpartition(cb, step)[:step]
                cand, cb = cand[part], cb[part]
            step *= 2
            missing = cand[np.isnan(base[cand])]
            if len(missing):
                assert fill is not None  # a base with gaps comes with what fills them
                fill(missing)
                # those its base now puts past the cut wait (a later batch may still need them)
                cb = base[cand] + np.where(np.isnan(self.dram[cand]), self.once[cand], self.dram[cand])
                cand = cand[cb <= cut]
            self._compute(cand)


def _with_siblings(space: LayerSpace, first: list[int], siblings: Mapping[int, int], arr: FrameArrays, beam: int,
                   blocks: dict[int, list[_State]]) -> tuple[list[int], int]:
    """``first`` with each frame's sibling (``siblings``) right after it where
    one of its register blocks fits (their blocks added to ``blocks``), and
    the candidates costed."""
    if not siblings:
        return first, 0
    found, _, count = _register_blocks(space, list(siblings.values()), arr, beam)
    grown = []
    for i in first:
        grown.append(i)
        j = siblings.get(i)
        if j is not None and found.get(j):
            grown.append(j)
            blocks[j] = found[j]
    return grown, count


def _most_shared_siblings(space: LayerSpace, frames: Sequence[int], taken: set[int]) -> dict[int, int]:
    """Per frame of ``frames`` that has one not in ``taken``, its sibling
    (:meth:`LayerSpace.siblings`) that shares the most (nodes per copy,
    multiplied over the tensors shared; ties: the first)."""
    def shared(j: int) -> int:
        return math.prod(n for _, n in space.frames[j].shr)

    out = {}
    for i in frames:
        best = max(space.siblings(i), key=lambda j: (shared(j), -j))
        if best not in taken and shared(best) > shared(i):
            out[i] = best
            taken.add(best)
    return out


def _unshared_siblings(space: LayerSpace, frames: Sequence[int], taken: set[int]) -> dict[int, int]:
    """Per frame of ``frames`` that shares a tensor the problem's feed keeps on
    chip, its sibling (:meth:`LayerSpace.siblings`) sharing the rest alike and
    none of those, where it is not in ``taken``."""
    kept = space.problem.feed.kept
    out = {}
    for i in frames:
        shr = space.frames[i].shr
        want = tuple((k, n) for k, n in shr if k not in kept)
        if want == shr:
            continue
        j = next((j for j in space.siblings(i) if space.frames[j].shr == want), None)
        if j is not None and j not in taken:
            out[i] = j
            taken.add(j)
    return out


def _first_of_each(items: Sequence[int], kind: Mapping[int, tuple]) -> list[int]:
    """``items`` in order, each kind (``kind[item]``) only at its first."""
    seen: set[tuple] = set()
    out = []
    for i in items:
        if kind[i] not in seen:
            seen.add(kind[i])
            out.append(i)
    return out


_MODEL_REFINE = 16  # frames the cost model's ranking re-ranks by their best register block


def _model_ranked(space: LayerSpace, top: int, beam: int) -> tuple[list[tuple[int, list[_State]]], int]:
    """The best frames by the cost model alone, with their register blocks, and
    the candidates costed: frames ranked by the energy of one canonical blocking
    each (the smallest blocks, the rest at the top), the first ``_MODEL_REFINE``
    with a register block re-ranked by their best one's energy (everything else
    one level up); the best ``top`` of either ranking."""
    shared: dict[tuple[int, tuple[int, ...]], Blockings] = {}  # frames alike in depth and rest share one
    values = [float(v[0]) for v in frame_totals([(f, _canonical(f, shared)) for f in space.frames],
                                                hardware(space.problem.arch), _feed_of(space))]
    order = sorted(range(len(space)), key=lambda i: values[i])
    evaluated = len(space)
    blocks: dict[int, list[_State]] = {}
    refined: list[tuple[float, int]] = []
    for a in range(0, min(len(order), 4 * _MODEL_REFINE), _MODEL_REFINE):
        if len(refined) >= _MODEL_REFINE:
            break
        batch = order[a:a + _MODEL_REFINE]
        found, energy, count = _register_blocks(space, batch, None, beam)
        evaluated += count
        blocks.update(found)
        refined += [(float(energy[k]), i) for k, i in enumerate(batch) if found.get(i)]
    refined = sorted(refined)[:_MODEL_REFINE]
    canonical = [i for i in order if blocks.get(i)][:top]
    first = list(dict.fromkeys([i for _, i in refined[:top]] + canonical))
    return [(i, blocks[i]) for i in first], evaluated


_ROWS_PER_CALL = 2048  # register blocks per DRAM estimate call (bounds its memory)


def _register_blocks(space: LayerSpace, frames: Sequence[int], arr: FrameArrays | None, beam: int
                     ) -> tuple[dict[int, list[_State]], np.ndarray, int]:
    """Each frame's best ``beam`` register blocks, the estimate of its best one
    (inf: none fits), and the candidates costed. A register block is every
    block that fits level 0 and leaves room above; its estimate is its energy
    with everything else one level up under the best innermost loop there (the
    cost model's, all frames costed in one batch), plus
    what the analytic DRAM-level blockings must re-fetch once it is fixed
    (:func:`kapla.search.layer.kapla.estimates.dram`: a block stacked over the
    PE array sets the smallest block the node buffer can hold). ``arr``: the
    frames' rows for the estimates (None: the cost model's energy alone)."""
    # a frame's register blocks and their energies do not depend on who asks: worked out once per space
    known = space.scratch.setdefault("register blocks", {})
    below = space.scratch.setdefault("register units", {})  # sharing variants have the same blocks below the node level
    new = [i for i in dict.fromkeys(frames) if i not in known]
    evs = [space.evaluator(i) for i in new]
    # every new frame's blocks at once: numpy calls on a few rows each cost what they cost on many
    _units_below(evs, below)
    unit_sets = [below[(ev.frame.spatial, ev.frame.rest)] for ev in evs]
    if evs and evs[0].levels > 1:
        # the node level: its buffer sharing changes what fits there
        which = np.repeat(np.arange(len(evs), dtype=np.int64), [len(u) for u in unit_sets])
        ok = fits_above_many(evs, which, np.concatenate(unit_sets), evs[0].levels - 1)
        unit_sets = [u[o] for u, o in zip(unit_sets, np.split(ok, np.cumsum([len(u) for u in unit_sets])[:-1]),
                                          strict=True)]
    arrs, fresh = [], []
    some = [(i, ev, units, np.array(ev.frame.rest, dtype=np.int64)[None, :] // units)
            for i, ev, units in zip(new, evs, unit_sets, strict=True) if len(units)]
    known.update((i, None) for i, units in zip(new, unit_sets, strict=True) if not len(units))
    blockings: Sequence[Blockings | None] = [None] * len(some)
    if some and evs[0].levels > 1:
        blockings = _unit_blockings([(units, lefts) for _, _, units, lefts in some], evs[0].levels)
    for (i, ev, units, lefts), b in zip(some, blockings, strict=True):
        if b is not None:
            arrs.append((ev, b))
        fresh.append((i, lefts, units, b))
    # under the problem's feed: data kept on chip cost what they cost there (a split reduction's
    # partial sums combined on chip, not through DRAM; pinned weights never fetched)
    totals = iter(totals_of_many(arrs, _feed_of(space)))
    evaluated = sum(len(b) for _, b in arrs)
    for i, lefts, units, b in fresh:
        energy = np.zeros(len(units))
        if b is not None:
            # the block one level up holds everything left: its own buffers are judged later
            energy = np.full(len(units), np.inf)
            np.minimum.at(energy, b.rows, next(totals))
        known[i] = (lefts, units, b, energy)
    found = [(i, *known[i][:3]) for i in frames if known[i] is not None]
    values = [known[i][3] for i in frames if known[i] is not None]
    items = [(space.evaluator(i), units, b) for i, _, units, b in found]
    if arr is not None and found and len(space.problem.arch.levels) >= 3:
        keep, values = _with_dram_extra(items, values, arr.take(np.array([i for i, *_ in found], dtype=np.int64)),
                                        space.problem.arch, beam)
    else:
        keep = _coverable_first([(ev, units, b, np.argsort(value, kind="stable"))
                                 for (ev, units, b), value in zip(items, values, strict=True)], beam)
    blocks: dict[int, list[_State]] = {}
    best = dict.fromkeys(frames, math.inf)
    for (i, lefts, units, _), value, kept in zip(found, values, keep, strict=True):
        if len(kept):
            blocks[i] = [_State(units[j], [], [], lefts[j]) for j in kept]
            best[i] = float(value[kept[0]])
    return blocks, np.array([best[i] for i in frames]), evaluated


def _units_below(evs: Sequence[FrameEvaluator], below: dict) -> None:
    """Into ``below``, per frame's (spatial choices, rest) not there yet: every
    register block (divisors of the rest) whose blocks fit every level below
    the node level, worked out for all such frames together (by the dims they
    still loop over: :func:`split_rows` takes many rows at once)."""
    todo: dict[tuple, FrameEvaluator] = {}
    for ev in evs:
        key = (ev.frame.spatial, ev.frame.rest)
        if key not in below:
            todo.setdefault(key, ev)
    if not todo:
        return
    by_dims: dict[tuple[int, ...], list[tuple]] = {}
    for key, ev in todo.items():
        by_dims.setdefault(ev.frame.dims, []).append(key)
    keys: list[tuple] = []
    units, whose = [], []
    for dims, group in by_dims.items():
        src, taken = split_rows(np.array([key[1] for key in group], dtype=np.int64).reshape(len(group), ND), dims)
        units.append(taken)
        whose.append(src + len(keys))
        keys += group
    unit, which = np.concatenate(units), np.concatenate(whose)
    firsts = [todo[key] for key in keys]
    ok = fits_above_many(firsts, which, unit, 0, upto=firsts[0].levels - 1)
    unit, which = unit[ok], which[ok]
    # split_rows keeps each source row's blocks together, in the order it gives for that row alone
    order = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[order], np.arange(len(keys) + 1))
    for n, key in enumerate(keys):
        below[key] = unit[order[bounds[n]:bounds[n + 1]]]


_COVERAGE_CHUNK = 4  # register blocks checked for coverage at a time, best first


def _coverable_first(items: Sequence[tuple[FrameEvaluator, np.ndarray, Blockings | None, np.ndarray]],
                     k: int) -> list[np.ndarray]:
    """Per frame ``(evaluator, register blocks, their candidates one level up,
    their order)``, the first ``k`` blocks in that order that leave no wholly
    idle iteration (:func:`kapla.model.rules.coverage`) with all that is left of
    each dim either one level up (under some of the candidates' orders) or at
    the top: a block failing both is rarely rescued by a split in between, and
    only costs the descent a wasted search. Blocks are checked a few at a time,
    best first, every frame's in one batch (the best usually pass). On a
    one-level chip (no candidates) every block is kept, in order: the register
    block is all there is to choose."""
    out: list[list[int]] = [[] for _ in items]
    at = [0] * len(items)
    todo = []
    for n, (_, _, b, order) in enumerate(items):
        if b is None:
            out[n] = [int(j) for j in order]
        else:
            todo.append(n)
    while todo:
        chunks = []
        for n in todo:
            order = items[n][3]
            chunks.append(order[at[n]:at[n] + _COVERAGE_CHUNK])
            at[n] += len(chunks[-1])
        oks = _coverable([(items[n][0], items[n][1], items[n][2], idx) for n, idx in zip(todo, chunks, strict=True)])
        still = []
        for n, idx, ok in zip(todo, chunks, oks, strict=True):
            out[n] += [int(j) for j in idx[ok]]
            if len(out[n]) < k and at[n] < len(items[n][3]):
                still.append(n)
        todo = still
    return [np.array(o[:k] if items[n][2] is not None else o, dtype=np.int64) for n, o in enumerate(out)]


def _coverable(items: Sequence[tuple[FrameEvaluator, np.ndarray, Blockings | None, np.ndarray]]) -> list[np.ndarray]:
    """Per frame ``(evaluator, register blocks, their candidates one level up,
    the blocks to check)``, which of those blocks pass :func:`_coverable_first`'s
    test (all pass without candidates), every frame's in one batch. A
    candidate one level up loops over all that is left there: its loop orders
    cannot change which blocks it visits, so each block is checked once that
    way and once with all that is left at the top."""
    out: list[np.ndarray] = [np.ones(len(idx), dtype=bool) for _, _, _, idx in items]
    checked = [n for n, (_, _, b, idx) in enumerate(items) if b is not None and len(idx)]
    if not checked:
        return out
    evs = [items[n][0] for n in checked]
    units = np.concatenate([items[n][1][items[n][3]] for n in checked])
    which = np.repeat(np.arange(len(checked), dtype=np.int64), [len(items[n][3]) for n in checked])
    ok = coverage_of_units(evs, which, units, 0)
    if not ok.all():  # most blocks pass at level 0 already
        ok[~ok] = coverage_of_units(evs, which[~ok], units[~ok], evs[0].levels - 1)
    for n, part in zip(checked, np.split(ok, np.cumsum([len(items[n][3]) for n in checked])[:-1]), strict=True):
        out[n] = part
    return out


_FIRST_EXTRAS = 8  # register blocks per frame whose DRAM estimate is worked out first (then twice as many)
# and at least this many blocks in all: a call's cost is mostly fixed, and where the re-fetch outweighs
# the blocks' energy differences (an element-wise layer on one node) few are sure after each batch, so
# growing from 8 took four calls a solve (EfficientNet-B0 on ``edge``: its scalings and poolings 10 % faster)
_FIRST_ROWS = 64


def _with_dram_extra(items: Sequence[tuple[FrameEvaluator, np.ndarray, Blockings | None]],
                     energies: Sequence[np.ndarray], rows: FrameArrays, arch: ArchSpec, k: int
                     ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """:func:`_coverable_first` of each frame's register blocks ordered by their
    energy (``energies``) plus what the analytic DRAM-level blockings must
    re-fetch once the block is fixed (:func:`kapla.search.layer.kapla.estimates.dram`,
    ``rows``: the frames' rows), and those values (inf where not worked out).

    The re-fetch is never negative, so a block's energy bounds its value from
    below: the re-fetch is worked out for the blocks cheapest by energy first,
    and a block whose value is below the energy of every block not yet worked
    out has its place in the order. Blocks that pass :func:`_coverable` are
    taken in that order until ``k`` are found; only where too few are, more
    blocks are worked out (every frame's in one call each time). A block none
    of whose DRAM-level blockings fits ranks behind every block that fits
    (among them, by energy)."""
    n = len(items)
    by_energy = [np.argsort(e, kind="stable") for e in energies]
    values = [np.full(len(e), np.inf) for e in energies]
    unfit = [np.zeros(len(e), dtype=bool) for e in energies]
    done = [0] * n  # blocks worked out, cheapest by energy first
    order = [by_energy[f][:0] for f in range(n)]  # the blocks whose place is sure, in order
    at = [0] * n  # blocks of ``order`` checked for coverage
    out: list[list[int]] = [[] for _ in range(n)]
    todo = list(range(n))
    while todo:
        need = [f for f in todo if at[f] == len(order[f]) and done[f] < len(by_energy[f])]
        if need:
            first = max(_FIRST_EXTRAS, _FIRST_ROWS // len(need))
            idxs = [by_energy[f][done[f]:max(first, 2 * done[f])] for f in need]
            units = np.concatenate([items[f][1][idx] for f, idx in zip(need, idxs, strict=True)])
            whole = rows.take(np.repeat(np.array(need, dtype=np.int64), [len(idx) for idx in idxs])).with_units(units)
            extra = np.concatenate([estimates.dram(whole.take(np.arange(a, min(a + _ROWS_PER_CALL, len(units)))),
                                                   arch, once=True, unfit=np.inf)
                                    for a in range(0, len(units), _ROWS_PER_CALL)])
            start = 0
            for f, idx in zip(need, idxs, strict=True):
                x = extra[start:start + len(idx)]
                start += len(idx)
                unfit[f][idx] = ~np.isfinite(x)
                values[f][idx] = energies[f][idx] + np.where(unfit[f][idx], 0.0, x)
                done[f] += len(idx)
                computed = by_energy[f][:done[f]]
                if done[f] < len(by_energy[f]):
                    # blocks not worked out are worth at least the next one's energy, and may fit
                    sure = computed[~unfit[f][computed] & (values[f][computed] < energies[f][by_energy[f][done[f]]])]
                else:
                    sure = computed
                order[f] = sure[np.lexsort((sure, values[f][sure], unfit[f][sure]))]
        chunks = []
        for f in todo:
            chunks.append(order[f][at[f]:at[f] + _COVERAGE_CHUNK])
            at[f] += len(chunks[-1])
        oks = _coverable([(items[f][0], items[f][1], items[f][2], idx) for f, idx in zip(todo, chunks, strict=True)])
        still = []
        for f, idx, ok in zip(todo, chunks, oks, strict=True):
            out[f] += [int(j) for j in idx[ok]]
            if len(out[f]) < k and (at[f] < len(order[f]) or done[f] < len(by_energy[f])):
                still.append(f)
        todo = still
    return [np.array(o[:k], dtype=np.int64) for o in out], values


def _unit_blockings(parts: Sequence[tuple[np.ndarray, np.ndarray]], n: int) -> list[Blockings]:
    """Per frame's ``(units, lefts)``: its register blocks ``units`` with all that is
    left of each (``lefts``) looping at level 0, under each choice of its innermost
    loop there (one candidate per looping dim; one with nothing left). Every frame's
    rows in one :func:`~kapla.space.layer.skeletons.order_product` (a solve re-ranks
    dozens of frames of a few dozen blocks each)."""
    rows, (orders,) = order_product([innermost_table(ND)], [looping_mask(np.concatenate([lf for _, lf in parts]))])
    out = []
    row0 = cand0 = 0
    for units, left in parts:
        k = len(units)
        m = int(np.searchsorted(rows, row0 + k) - cand0)
        ident = np.broadcast_to(np.arange(ND, dtype=np.int64), (m, ND))
        ones = np.ones_like(units)
        out.append(Blockings(units, (left,) + (ones,) * (n - 1), rows[cand0:cand0 + m] - row0,
                             (orders[cand0:cand0 + m],) + (ident,) * (n - 1)))
        row0, cand0 = row0 + k, cand0 + m
    return out


def _canonical(frame: Frame, known: dict[tuple[int, tuple[int, ...]], Blockings]) -> Blockings:
    """The frame's blocking of the smallest blocks, the rest looping at the top (kept in ``known``
    by depth and rest: it depends on nothing else, and the model ranks thousands of frames)."""
    key = (len(frame.spatial), frame.rest)
    found = known.get(key)
    if found is None:
        found = known[key] = _canonical_of(*key)
    return found


def _canonical_of(n: int, rest: tuple[int, ...]) -> Blockings:
    # one row of ones serves the unit and every level below the top (the nests only read them)
    ones = np.ones((1, ND), np.int64)
    counts = (ones,) * (n - 1) + (np.array([rest], dtype=np.int64),)
    ident = np.arange(ND, dtype=np.int64)[None, :]
    return Blockings(ones, counts, np.zeros(1, np.int64), (ident,) * n)


def _blockings(states: list[_State], level: int, taken: np.ndarray, src: np.ndarray, n: int,
               orders_here: Sequence[np.ndarray], top_orders: Sequence[np.ndarray] | None = None
               ) -> tuple[Blockings, np.ndarray]:
    """Candidates extending ``states`` (``src`` picks the state of each factor row)
    with loop counts ``taken`` at ``level`` and the rest at the top; each factor
    row tried under each of its ``orders_here`` (and ``top_orders``)."""
    F = len(src)
    units, below = _state_arrays(states, level)
    unit = units[src]
    left = np.stack([s.left for s in states])[src] // taken
    ones = np.ones((F, ND), np.int64)
    counts = []
    for lvl in range(n):
        if lvl < level:
            counts.append(below[lvl][src])
        elif lvl == level:
            counts.append(taken if level < n - 1 else taken * left)
        elif lvl == n - 1:
            counts.append(left)
        else:
            counts.append(ones)
    # each factor row's candidates: its orders here (outer) by its orders at the top (inner)
    ident = np.arange(ND, dtype=np.int64)[None, :]
    n_here = np.array([len(h) for h in orders_here], dtype=np.int64)
    tops = top_orders if top_orders is not None else [ident] * F
    n_top = np.array([len(t) for t in tops], dtype=np.int64)
    per_row = n_here * n_top
    rows = np.repeat(np.arange(F, dtype=np.int64), per_row)
    k = np.arange(len(rows), dtype=np.int64) - np.repeat(np.cumsum(per_row) - per_row, per_row)
    across = np.repeat(n_top, per_row)
    here = np.concatenate(orders_here)[np.repeat(np.cumsum(n_here) - n_here, per_row) + k // across]
    top = np.concatenate(tops)[np.repeat(np.cumsum(n_top) - n_top, per_row) + k % across]
    ords = []
    for lvl in range(n):
        if lvl < level:
            ords.append(np.stack([s.orders[lvl] for s in states])[src[rows]])
        elif lvl == level:
            ords.append(here)
        elif lvl == n - 1:
            ords.append(top)
        else:
            ords.append(np.broadcast_to(ident, (len(rows), ND)))
    return Blockings(unit, tuple(counts), rows, tuple(ords)), left


def _descend(space: LayerSpace, index: int, states: list[_State], beam: int,
             memo: dict | None = None, ends: int = 0
             ) -> tuple[Found | None, int, list[tuple[tuple[float, float], _Point]]]:
    """The frame's best blocking grown from its register blocks ``states``, the
    candidates costed, and its best ``ends`` blockings (distinct factors, with
    their keys) for :func:`_refine_steps`. ``memo`` keeps each step's candidates and
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
    units, counts = _state_arrays(states, level)
    # the next level's block fits, and leaves room for every level above
    ok = ev.fits_above(level + 1, units[src], [c[src] for c in counts] + [taken])
    src, taken = src[ok], taken[ok]
    if len(src) == 0:
        return None
    b, left = _blockings(states, level, taken, src, n, list(order_classes(layer, taken)))
    return src, taken, b, left, ev.costs(b, rules=False)


def _top(space: LayerSpace, index: int, states: list[_State]):
    """The top two levels' candidates from ``states`` (the top alone on a
    one-level chip) and their costs under the feed, or None if no split fits."""
    return _tops(space, [(index, states)])[0]


def _tops(space: LayerSpace, jobs: Sequence[tuple[int, list[_State]]]) -> list:
    """:func:`_top` of each ``(frame, states)``, the candidates of every job
    costed together at each stage (a model call has a fixed cost that is most
    of it at a few hundred candidates)."""
    steps = [_top_steps(space, index, states) for index, states in jobs]
    return _lockstep(steps, lambda asks: _scores_chunked(space, [(jobs[k][0], b) for k, b in asks.items()]))


def _lockstep(runs: Sequence[Generator], answer: Callable[[dict[int, Any]], list]) -> list:
    """What each generator of ``runs`` returns, all run step by step together:
    at each step ``answer`` gets what every one still running yields (by its
    place in ``runs``) and gives the replies sent back, in that order (several
    searches' requests answered in one model call)."""
    out: list = [None] * len(runs)
    asks: dict[int, Any] = {}

    def resume(k: int, reply: Any) -> None:
        try:
            asks[k] = runs[k].send(reply)
        except StopIteration as done:
            out[k] = done.value

    for k in range(len(runs)):
        resume(k, None)
    while asks:
        pending, asks = asks, {}
        for k, reply in zip(pending, answer(pending), strict=True):
            resume(k, reply)
    return out


def _scores_chunked(space: LayerSpace, parts: Sequence[tuple[int, Blockings]]) -> list:
    """:func:`_scores` of ``parts``, merged only up to a model call's worth of candidates:
    past it a call's fixed cost is small, and the merged arrays of large searches only cost memory."""
    out: list = []
    group: list[tuple[int, Blockings]] = []
    rows = 0
    for part in parts:
        if group and rows + len(part[1].rows) > CHUNK:
            out += _scores(space, group)
            group, rows = [], 0
        group.append(part)
        rows += len(part[1].rows)
    if group:
        out += _scores(space, group)
    return out


def _scores(space: LayerSpace, parts: Sequence[tuple[int, Blockings]]) -> list:
    """:meth:`LayerSpace.score` of each ``(frame, blockings)``, in one model call where there are several."""
    if len(parts) == 1:
        return [space.score(*parts[0])]
    out: list = [None] * len(parts)
    for merged, where in merged_nests([(space.frames[i], b) for i, b in parts]):
        costs = evaluate_nests(merged, hardware(space.problem.arch), space.problem.fed)
        valid = costs.valid
        for k, rows in where:
            out[k] = _Scored(costs.total[rows], costs.time[rows], valid[rows])
    return out


@dataclass(frozen=True)
class _Scored:
    """One part of a merged model call: what the descent reads of :class:`~kapla.model.cost.Costs`."""

    total: np.ndarray
    time: np.ndarray
    valid: np.ndarray

    def value(self, objective) -> np.ndarray:
        return np.where(self.valid, objective_of(objective).of(self.total, self.time), np.inf)


def _top_steps(space: LayerSpace, index: int, states: list[_State]):
    """:func:`_top` as a generator: it yields the blockings it needs costed and
    is sent their costs (so several frames' are costed in one call)."""
    ev = space.evaluator(index)
    n, dims, layer = ev.levels, ev.frame.dims, ev.frame.layer
    level = max(n - 2, 0)
    if n == 1:
        src = np.arange(len(states))
        taken = np.stack([s.left for s in states])
        b, _ = _blockings(states, 0, taken, src, n, list(order_classes(layer, taken)))
        return b, (yield b)
    src, taken = split_rows(np.stack([s.left for s in states]), dims)
    units, counts = _state_arrays(states, level)
    ok = ev.fits(level + 1, ev.block(level + 1, units[src], [c[src] for c in counts] + [taken]))
    src, taken = src[ok], taken[ok]
    if len(src) == 0:
        return None
    left = np.stack([s.left for s in states])[src] // taken
    here = list(order_classes(layer, taken))
    tops = list(order_classes(layer, left))
    if _pairs(here, tops) > _STAGED_CANDIDATES:
        # many: each split first under one choice of innermost loop per level;
        # the best splits go on under every pair of orders
        if len(src) > _COARSE_SPLITS:
            keep = np.nonzero(_coarse(taken, taken * left, dims))[0]
            src, taken, left = src[keep], taken[keep], left[keep]
            here, tops = [here[k] for k in keep], [tops[k] for k in keep]
        inner_here, inner_tops = _innermost(taken), _innermost(left)
        b, _ = _blockings(states, level, taken, src, n, inner_here, inner_tops)
        costs = yield b
        value = costs.value(space.objective)
        best = np.full(len(src), np.inf)
        np.minimum.at(best, b.rows, value)
        keep = np.sort(np.argsort(best, kind="stable")[:_KEPT_SPLITS])
        src, taken = src[keep], taken[keep]
        here, tops = [here[k] for k in keep], [tops[k] for k in keep]
        if _pairs(here, tops) > _KEPT_CANDIDATES:
            here = [inner_here[k] for k in keep]
        if _pairs(here, tops) > _KEPT_CANDIDATES:
            tops = [inner_tops[k] for k in keep]
    b, _ = _blockings(states, level, taken, src, n, here, tops)
    return b, (yield b)


# past this many splits of the top two levels, the staged pass starts from a coarse grid of them (a layer
# with many divisors: VGG-16 conv1_2 at batch 64 on 16x16 nodes had 101 k candidates in its first pass,
# 57 k on the grid; on the benchmark's 570 layers the same schemes, the local refinement moving factors off
# the grid where it pays)
_COARSE_SPLITS = 2048


def _coarse(taken: np.ndarray, whole: np.ndarray, dims: Sequence[int]) -> np.ndarray:
    """Which splits take, along every dim, 1, all, or the divisor of the whole
    nearest its cube root or its square (in ratio)."""
    ok = np.ones(len(taken), dtype=bool)
    for d in dims:
        table: dict[int, set[int]] = {}
        for v in np.unique(whole[:, d]).tolist():
            divs = np.array(divisors(int(v)), dtype=float)
            near = {int(divs[np.argmin(np.abs(np.log(divs) - math.log(v) * f))]) for f in (1 / 3, 2 / 3)}
            table[v] = {1, int(v)} | near
        ok &= np.array([int(t) in table[int(w)] for t, w in zip(taken[:, d], whole[:, d], strict=True)])
    return ok


def _state_arrays(states: list[_State], levels: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The states' unit factors ``(K, 8)`` and loop counts of their first ``levels`` levels, one row per state."""
    return np.stack([s.unit for s in states]), [np.stack([s.counts[lvl] for s in states]) for lvl in range(levels)]


def _innermost(counts: np.ndarray) -> list[np.ndarray]:
    """Per row of loop counts ``(F, 8)``, its orders with each looping dim innermost
    (:func:`kapla.space.layer.skeletons.innermost_orders`, read from one table)."""
    table = innermost_table(ND)
    return [table(int(m)) for m in looping_mask(counts)]


def _pairs(here: Sequence[np.ndarray], tops: Sequence[np.ndarray]) -> int:
    return sum(len(a) * len(t) for a, t in zip(here, tops, strict=True))


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


def _refine_all(space: LayerSpace, jobs: Sequence[tuple[LayerSpace, int, _Point, tuple[float, float]]],
                steps: dict | None = None) -> list[tuple[Found | None, int]]:
    """The local refinement of each ``(space, frame, point, key)`` (:func:`_refine_steps`;
    ``space``: the frame's space under the refinement's objective), all run step by
    step together: the neighbours every refinement wants costed at a step go in one
    model call (a call has a fixed cost that is most of it at a few hundred
    candidates), each point's once. ``steps`` keeps each point's scored neighbours
    (they do not depend on the objective) for other refinements."""
    memo: dict = {} if steps is None else steps

    def answer(asks: dict[int, tuple]) -> list:
        wanted: dict = {}
        for at, neighbours, point in asks.values():
            if at not in wanted:
                wanted[at] = neighbours(space.evaluator(at[0]), point)
        scored = [(at, nb) for at, nb in wanted.items() if nb is not None]
        costs = _scores_chunked(space, [(at[0], nb) for at, nb in scored])
        memo.update(dict.fromkeys(wanted, (None, None)))
        memo.update({at: (nb, c) for (at, nb), c in zip(scored, costs, strict=True)})
        return [None] * len(asks)  # each reads its neighbours' costs in the memo

    return _lockstep([_refine_steps(s, i, point, key, memo) for s, i, point, key in jobs], answer)


def _refine_steps(space: LayerSpace, index: int, point: _Point, key: tuple[float, float], steps: dict):
    """Local refinement of one complete, valid blocking (``key``: its objective
    and energy, as the descent costed it): steepest descent over its
    neighbours (:func:`_neighbours`: a prime factor of one dim moved to another
    level, or one factor moved up while another moves down between adjacent
    levels, each with the loop orders of the levels it changes re-chosen; or
    one level's loop order alone), costed under the feed, until no neighbour
    is better or ``_REFINE_STEPS`` steps. Where none is, on a hierarchy of
    three or more loop levels, the splits of three adjacent levels' counts
    among them (:func:`_resplits`) are tried before giving up.

    A generator: where ``steps`` does not hold a point's neighbours of a kind,
    it yields ``(key in steps, neighbours function, point)`` and reads them
    there when resumed (:func:`_refine_all`). It returns the best blocking
    reached if better than ``point`` (None: none is), and the candidates costed."""
    evaluated = 0
    last = None  # the neighbours and costs of the last step taken
    for _ in range(_REFINE_STEPS):
        step = None
        for kind, neighbours in enumerate((_neighbours, _resplits)):
            at = (index, point.key(), kind)
            if at not in steps:
                yield at, neighbours, point
            nb, c = steps[at]
            if nb is None:
                continue
            evaluated += len(nb)
            v = c.value(space.objective)
            i = space.objective.argbest(v, c.total)
            new = (float(v[i]), float(c.total[i]))
            if math.isfinite(new[0]) and better(new, key):
                step = nb, c, i, new
                break
        if step is None:
            break
        nb, c, i, key = step
        last = nb, c
        f = int(nb.rows[i])
        point = _Point(nb.unit[f], tuple(x[f] for x in nb.counts), tuple(o[i] for o in nb.orders))
    # the last step's best neighbour is the point reached (the same pick as there)
    return (None if last is None else space.best(index, *last)), evaluated


_MAX_TRIPLE_SPLITS = 4096  # splits of three levels' counts a refinement tries, at most, per three levels


def _resplits(ev: FrameEvaluator, point: _Point) -> Blockings | None:
    """Every split of three adjacent levels' loop counts among them that fits,
    under the point's loop orders (None: fewer than three loop levels, or none fits).

    The descent fixes a middle level's counts before the levels above it are
    searched, judging them with what is left looping at the top; a block
    that is only worth holding once the level above loops elsewhere (a
    per-PE buffer keeping a whole plane while the output channels move to
    the top) takes several factor moves at once to reach, each of which
    alone costs more. The steps that follow re-choose the orders."""
    n = ev.levels
    if n < 3:
        return None
    dims = ev.frame.dims
    slots = np.stack([point.unit, *point.counts])  # slot 0: the unit, slot j + 1: level j's counts
    out = []
    for a in range(1, n - 1):
        whole = (slots[a] * slots[a + 1] * slots[a + 2])[None, :]
        firsts, first = split_rows(whole, dims)
        rest = whole[firsts] // first
        seconds, second = split_rows(rest, dims)
        if len(seconds) > _MAX_TRIPLE_SPLITS:
            continue
        s = np.repeat(slots[None, :, :], len(seconds), axis=0)
        s[:, a], s[:, a + 1], s[:, a + 2] = first[seconds], second, rest[seconds] // second
        out.append(s)
    if not out:
        return None
    cand = _fitting(ev, _distinct(np.concatenate(out)))
    if not len(cand):
        return None
    k = len(cand)
    return Blockings(cand[:, 0], tuple(cand[:, j + 1] for j in range(n)), np.arange(k, dtype=np.int64),
                     tuple(np.broadcast_to(o, (k, ND)) for o in point.orders))


def _neighbours(ev: FrameEvaluator, point: _Point) -> Blockings | None:
    """The blockings next to ``point`` that fit every buffer (see :func:`_refine_steps`)."""
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
    moved = _distinct(np.stack(moves))
    # every split of two slots' factors between them, under the current orders
    pairs = [(a, c) for a, c in itertools.combinations(range(n + 1), 2)
             if math.prod(len(divisors(int(v))) for v in (slots[a] * slots[c])[list(dims)]) <= _MAX_RESPLIT]
    resplit = np.zeros((0,) + slots.shape, dtype=slots.dtype)
    if pairs:
        # every pair's splits at once (split_rows keeps each pair's together, in its own order)
        boths = np.stack([slots[a] * slots[c] for a, c in pairs])
        src, taken = split_rows(boths, dims)
        resplit = np.repeat(slots[None, :, :], len(taken), axis=0)
        for k, (a, c) in enumerate(pairs):
            mine = src == k
            resplit[mine, a], resplit[mine, c] = taken[mine], boths[k] // taken[mine]
        resplit = _distinct(resplit)
    # the moves and the resplits checked against the buffers in one go
    fit = _fits_all(ev, np.concatenate([moved, resplit]))
    cand, whole = moved[fit[:len(moved)]], resplit[fit[len(moved):]]
    known = {x.tobytes() for x in cand}
    extra = whole[np.array([x.tobytes() not in known for x in whole], dtype=bool)] if len(whole) else whole
    if len(cand) == 0 and len(extra) == 0:
        return None
    layer = ev.frame.layer
    current = np.stack(point.orders)  # (n, 8)
    # per candidate: a row under the current orders, then each changed level
    # (sorted) under each of its classes of orders (the same factors: every
    # level's order alone) or, for a resplit, each choice of its innermost loop
    f_of, lvl_of = _changed_levels(cand, slots, n, same_means_all=True)
    pieces = [_limited(c, cand[f, lvl + 1])
              for c, f, lvl in zip(order_classes(layer, cand[f_of, lvl_of + 1]), f_of, lvl_of, strict=True)]
    if len(extra):
        base = len(cand)
        e_f, e_lvl = _changed_levels(extra, slots, n, same_means_all=False)
        pieces += _innermost(extra[e_f, e_lvl + 1])
        f_of = np.concatenate([f_of, e_f + base])
        lvl_of = np.concatenate([lvl_of, e_lvl])
        cand = np.concatenate([cand, extra])
    rows, ords = _order_rows(len(cand), f_of, lvl_of, pieces, current)
    return Blockings(cand[:, 0], tuple(cand[:, j + 1] for j in range(n)), rows, ords)


def _changed_levels(cand: np.ndarray, slots: np.ndarray, n: int, same_means_all: bool
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The (candidate, level) pairs whose order is re-chosen, candidate by
    candidate and level by level: the levels whose loop counts changed (a
    changed unit counts as level 0's); a candidate with the factors of the
    point itself (``same_means_all``): every level."""
    changed = np.any(cand != slots[None], axis=2)  # (k, n + 1) slots
    levels = changed[:, 1:].copy()
    levels[:, 0] |= changed[:, 0]
    if same_means_all:
        levels[~changed.any(axis=1)] = True
    f, lvl = np.nonzero(levels)
    return f.astype(np.int64), lvl.astype(np.int64)


def _limited(classes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """A level's classes of orders, or where they are too many, each choice of its innermost loop."""
    return classes if len(classes) <= _MAX_CLASSES else innermost_orders(counts, ND)


def _order_rows(k: int, f_of: np.ndarray, lvl_of: np.ndarray, pieces: Sequence[np.ndarray], current: np.ndarray
                ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Rows and per-level orders of ``k`` candidates: each candidate first under
    the ``current`` orders, then for each of its (candidate, level) pairs (in
    order) under each order of that pair's piece, the other levels current."""
    n = current.shape[0]
    sizes = np.array([len(p) for p in pieces], dtype=np.int64)
    per_cand = np.ones(k, dtype=np.int64)
    np.add.at(per_cand, f_of, sizes)
    total = int(per_cand.sum())
    starts = np.cumsum(per_cand) - per_cand
    rows = np.repeat(np.arange(k, dtype=np.int64), per_cand)
    ords = [np.broadcast_to(current[m], (total, ND)).copy() for m in range(n)]
    if len(pieces):
        # each pair's run starts after its candidate's own row and the runs of its earlier pairs
        before = np.cumsum(sizes) - sizes
        first_pair = np.searchsorted(f_of, f_of, side="left")
        at = starts[f_of] + 1 + before - before[first_pair]
        flat = np.concatenate(pieces)
        where = np.repeat(at, sizes) + (np.arange(len(flat)) - np.repeat(before, sizes))
        lvl_rows = np.repeat(lvl_of, sizes)
        for m in range(n):
            sel = lvl_rows == m
            ords[m][where[sel]] = flat[sel]
    return rows, tuple(ords)


def _distinct(cand: np.ndarray) -> np.ndarray:
    """The distinct rows of ``cand`` (along its first axis) in lexicographic
    order, as ``np.unique(cand, axis=0)`` gives them (whose sort of whole rows
    as records costs several times more)."""
    flat = cand.reshape(len(cand), math.prod(cand.shape[1:]))
    by_rows = flat[np.lexsort(flat.T[::-1])]
    new = np.ones(len(by_rows), dtype=bool)
    new[1:] = (by_rows[1:] != by_rows[:-1]).any(axis=1)
    return by_rows[new].reshape((-1,) + cand.shape[1:])


def _fitting(ev: FrameEvaluator, cand: np.ndarray) -> np.ndarray:
    """The rows of ``cand`` ``(F, levels + 1, 8)`` (unit factors, then each level's
    counts) whose blocks fit every buffer."""
    return cand[_fits_all(ev, cand)]


def _fits_all(ev: FrameEvaluator, cand: np.ndarray) -> np.ndarray:
    """``(F,)`` which rows of ``cand`` (as :func:`_fitting`'s) have blocks that fit every buffer."""
    ok = np.ones(len(cand), dtype=bool)
    for level in range(ev.levels):
        ok &= ev.fits(level, ev.block(level, cand[:, 0], [cand[:, j + 1] for j in range(level)]))
    return ok


__all__ = ["solve_any_each", "solve_levels_each"]
