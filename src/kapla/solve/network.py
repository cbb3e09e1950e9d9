"""Whole-network scheduling: segments, layer pipelining, pruning and DP (KAPLA Sec. IV-B).

The inter-layer search works on *inter-layer schemes*: a candidate segment
(:func:`kapla.solve.segments.segment_plans`) together with how it runs:

* **layout**: spatial pipelining (each slot on its own zig-zag region sized by
  its operations) or temporal pipelining (all layers one after another on the
  whole array, intermediate fmaps kept in the buffers);
* **groups** (ALLO): the batch is split into ``groups`` pieces that flow
  through the segment one after another; every layer's outermost loop runs
  over the pieces, so a consumer starts once its producer finished the first
  piece and only one piece of each intermediate fmap is buffered;
* **pinning**: when all the network's weights fit in a fraction of the chip's
  buffers they stay there (model pinning); each node keeps its share, which
  leaves less buffer for the layers' own blocks.

KAPLA's search then

1. prunes schemes that cannot be valid: a forwarded fmap piece larger than the
   whole buffer of the region that must hold it (conservative: never rejects a
   scheme the intra-layer solver could make valid);
2. estimates each survivor's cost from its compulsory traffic (:func:`estimate`);
3. keeps, per segment, only schemes not dominated in DRAM traffic, on-chip
   forwarding traffic and time (Pareto pruning);
4. runs a dynamic program over the layers in topological order that keeps the
   ``top_k`` cheapest chains of segments by estimate;
5. solves the segments of those chains (and of the layer-by-layer chain, so
   the result is never worse than scheduling layer by layer) with the
   intra-layer solver and the segment evaluator, and returns the best chain.

The exhaustive baseline skips 2-4: it solves every valid scheme of every
segment exactly and runs the same DP on true costs, which is optimal because
segment costs add up.
"""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Callable

from kapla.arch.spec import ArchSpec
from kapla.errors import KaplaError
from kapla.model.evaluate import STATIC
from kapla.solve.base import IntraSolver, check_objective, no_scheme
from kapla.solve.inter import (
    Estimate,
    InterScheme,
    calibration,
    estimate,
    inter_schemes,
    may_fit,
    pareto,
    pin_reserve,
    weight_words,
)
from kapla.solve.result import LayerResult, ScheduleResult
from kapla.solve.segment_solver import SegmentSolver
from kapla.solve.segments import SegmentPlan, segment_plans
from kapla.workload.network import Network

MAX_SEGMENT = 5  # layers per segment, as TANGRAM's and nn_dataflow's default

Progress = Callable[[str, int, int], None]


class SearchBudgetExceeded(KaplaError):
    """The exhaustive network search ran out of its time budget."""


@dataclass
class PruneStats:
    """How many inter-layer schemes each stage of KAPLA's search kept (the paper's Table VI)."""

    considered: int = 0
    valid: int = 0
    pareto: int = 0
    solved: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"considered": self.considered, "valid": self.valid, "pareto": self.pareto, "solved": self.solved}


# ---------------------------------------------------------------- the search

@dataclass(frozen=True)
class _Chain:
    value: float
    schemes: tuple[InterScheme, ...]


def _value(objective: str, energy: float, time_: float) -> float:
    """A chain's value: its objective; latency ties go to the lower energy."""
    return {"energy": energy, "latency": time_ * (1 + 1e-9 * energy), "edp": energy * time_}[objective]


def _segment_value(objective: str, energy: float, time_: float) -> float:
    """What the DP adds up per segment: EDP does not add, so its DP ranks by energy
    (the final chains are compared by their true EDP)."""
    return _value("energy" if objective == "edp" else objective, energy, time_)


def _top_chains(order: list[str], options: dict[int, list[tuple[int, InterScheme, float]]], k: int) -> list[_Chain]:
    """Dynamic programming over the layers: the ``k`` cheapest chains of segments
    covering layers ``0..j``, from each segment's additive ``value``."""
    best: list[list[_Chain]] = [[] for _ in order]
    for j in range(len(order)):
        candidates = []
        for start, inter, value in options.get(j, ()):
            prefixes = best[start - 1] if start > 0 else [_Chain(0.0, ())]
            candidates.extend(_Chain(p.value + value, p.schemes + (inter,)) for p in prefixes)
        candidates.sort(key=lambda c: c.value)
        best[j] = candidates[:k]
    return best[-1] if order else []


MAX_ROUNDS = 6


def _refine(order, options, top_k, segsolver, objective, stats, progress) -> list[_Chain]:
    """Solve the segments of the ``top_k`` chains, put their true values in place
    of the estimates (or drop them if invalid), and repeat, at most
    ``MAX_ROUNDS`` times, until the best chains hold only solved segments; then
    the best chains of solved segments. With estimates that never exceeded
    the true values and enough rounds, this would be the optimum of the
    pruned space."""
    solved: set[InterScheme] = set(segsolver.cache)  # already solved: true values in place
    chains: list[_Chain] = []
    for round_ in range(MAX_ROUNDS):
        chains = _top_chains(order, options, top_k)
        todo = list(dict.fromkeys(i for chain in chains for i in chain.schemes if i not in solved))
        if not todo:
            break
        segsolver.prefetch(todo)
        for n, inter in enumerate(todo):
            found = segsolver.solve(inter)
            solved.add(inter)
            stats.solved += 1
            if progress is not None:
                progress(f"solving segments (round {round_ + 1})", n + 1, len(todo))
            j = order.index(inter.layers[-1])
            entries = options[j]
            k = next(k for k, (_, other, _) in enumerate(entries) if other == inter)
            if found is None:
                entries.pop(k)
            else:
                entries[k] = (entries[k][0], inter, _segment_value(objective, found[1].total_energy, found[1].time))
    # the best chains of what was solved (true values only; the single layers always are)
    known = {j: [o for o in entries if o[1] in solved] for j, entries in options.items()}
    return _top_chains(order, known, top_k)


def schedule_network(net: Network, arch: ArchSpec, solver: IntraSolver, objective: str = "energy", *,
                     top_k: int = 4, exhaustive: bool = False, time_budget: float | None = None,
                     progress: Progress | None = None, jobs: int | None = None) -> ScheduleResult:
    """Schedule ``net`` on ``arch``: segments, their inter-layer schemes and every layer's scheme.

    ``exhaustive`` solves every valid inter-layer scheme (the baseline);
    otherwise KAPLA's pruning and top-``top_k`` DP decide which to solve.
    ``time_budget`` (seconds) bounds the exhaustive search. ``jobs`` worker
    processes solve layers in parallel (default: one per CPU, at most 4); the
    result does not depend on it.
    """
    check_objective(objective)
    if top_k < 1:
        raise KaplaError(f"--top-k must be at least 1, got {top_k}")
    start = time.perf_counter()
    reserve = pin_reserve(net, arch)
    runs = [False] + ([True] if reserve is not None else [])
    best = None
    stats = PruneStats()
    jobs = min(os.cpu_count() or 1, 4) if jobs is None else jobs
    pool = ProcessPoolExecutor(jobs, initializer=_ignore_interrupts) if jobs > 1 else None
    try:
        for pinned in runs:
            found = _search(net, arch, solver, objective, top_k, exhaustive, time_budget, start, progress,
                            pinned, reserve or 0, stats, pool)
            if best is None or found[0] < best[0]:
                best = found
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    _, chain, seg_results, pinned = best
    return _result(net, arch, solver, objective, chain, seg_results, pinned, stats, time.perf_counter() - start)


def _ignore_interrupts() -> None:
    # Ctrl-C reaches the whole process group; the parent handles it and shuts the pool down
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _search(net, arch, solver, objective, top_k, exhaustive, time_budget, start, progress, pinned, reserve, stats,
            pool):
    order = [layer.name for layer in net]
    index = {name: i for i, name in enumerate(order)}
    reserve = reserve if pinned else 0  # buffer words per node the pinned weights take
    segsolver = SegmentSolver(net, arch, solver, objective, reserve, pool)
    options: dict[int, list[tuple[int, InterScheme, float]]] = {}
    singles = []
    plans = segment_plans(net, MAX_SEGMENT) if _pipelining(arch) else [[SegmentPlan((n,), ((n,),))] for n in order]
    all_schemes: list[tuple[int, int, InterScheme]] = []
    for j, ending in enumerate(plans):
        for plan in ending:
            for inter in inter_schemes(net, arch, plan, pinned):
                stats.considered += 1
                if not may_fit(net, arch, inter, reserve):
                    continue
                stats.valid += 1
                all_schemes.append((index[plan.layers[0]], j, inter))
                if len(plan) == 1:
                    singles.append(inter)
    if exhaustive:
        for n, (i, j, inter) in enumerate(all_schemes):
            if time_budget is not None and time.perf_counter() - start > time_budget:
                raise SearchBudgetExceeded(
                    f"the exhaustive network search of '{net.name}' ran out of its {time_budget:g} s budget "
                    f"after {n} of {len(all_schemes)} inter-layer schemes")
            if n % 2 == 0:  # in small batches, so the budget is checked often
                segsolver.prefetch(inter for _, _, inter in all_schemes[n: n + 2])
            found = segsolver.solve(inter)
            stats.solved += 1
            if progress is not None:
                progress("solving segments", n + 1, len(all_schemes))
            if found is None:
                if len(inter.layers) == 1:
                    raise no_scheme(net[inter.layers[0]], net.batch, arch)
                continue
            options.setdefault(j, []).append((i, inter, _segment_value(objective, found[1].total_energy,
                                                                        found[1].time)))
        chains = _top_chains(order, options, 1)
    else:
        # the layers alone first: the fallback chain, and the calibration of the estimates
        scale = {}
        segsolver.prefetch(singles)
        for n, inter in enumerate(singles):
            found = segsolver.solve(inter)
            if found is None:
                raise no_scheme(net[inter.layers[0]], net.batch, arch)
            stats.solved += 1
            scale[inter.layers[0]] = calibration(net, arch, inter, found[1], reserve)
            if progress is not None:
                progress("solving layers", n + 1, len(singles))
        by_segment: dict[tuple[str, ...], list[tuple[InterScheme, Estimate]]] = {}
        spans = {}
        for i, j, inter in all_schemes:
            est = estimate(net, arch, inter, reserve, scale)
            by_segment.setdefault(inter.layers, []).append((inter, est))
            spans[inter.layers] = (i, j)
        for layers, cands in by_segment.items():
            kept = pareto(cands)
            stats.pareto += len(kept)
            i, j = spans[layers]
            for inter, est in kept:
                found = segsolver.cache.get(inter)
                value = (_segment_value(objective, found[1].total_energy, found[1].time) if found
                         else est.objective("energy" if objective == "edp" else objective))
                options.setdefault(j, []).append((i, inter, value))
        chains = _refine(order, options, top_k, segsolver, objective, stats, progress)
        singles_chain = tuple(sorted(singles, key=lambda s: index[s.layers[0]]))
        chains.append(_Chain(0.0, singles_chain))
    best = None
    for chain in chains:
        results = [segsolver.solve(inter) for inter in chain.schemes]
        if any(r is None for r in results):
            continue
        energy = sum(r[1].total_energy for r in results)
        total_time = sum(r[1].time for r in results)
        value = _value(objective, energy, total_time)
        if best is None or value < best[0]:
            best = (value, chain.schemes, results, pinned)
    if best is None:  # pragma: no cover - the layer-by-layer chain is always valid or raised above
        raise KaplaError(f"no valid schedule of '{net.name}' on '{arch.name}'")
    return best


def _pipelining(arch: ArchSpec) -> bool:
    return bool(arch.options.spatial_layer_pipe or arch.options.temporal_layer_pipe)


def _result(net, arch, solver, objective, chain, seg_results, pinned, stats, seconds) -> ScheduleResult:
    layers = []
    energy: dict[str, float] = {}
    segments_info = []
    for inter, (segment, cost) in zip(chain, seg_results):
        for name in segment.layers:
            place = segment.placements[name]
            lr = LayerResult(name, segment.schemes[name], cost.layers[name],
                             (place.region.origin, place.region.shape))
            layers.append(lr)
        for component, joules in cost.energy.items():
            energy[component] = energy.get(component, 0.0) + joules
        segments_info.append({"layers": list(inter.layers), "layout": inter.layout, "groups": inter.groups,
                              "slots": [list(s) for s in inter.slots],
                              "energy_j": cost.total_energy, "time_cycles": cost.time})
    order = {layer.name: i for i, layer in enumerate(net)}
    layers.sort(key=lambda lr: order[lr.name])
    energy.setdefault(STATIC, 0.0)
    total_time = sum(cost.time for _, cost in seg_results)
    extra = {"pinned": pinned, "segment_details": segments_info, "inter_layer_schemes": stats.to_dict()}
    if pinned:
        # pinned weights are loaded once before the runs (nn_dataflow's convention): reported, not charged
        extra["pinned_load_j"] = sum(weight_words(net[n]) for n in order) * arch.levels[-1].access_energy
    return ScheduleResult(
        network=net.name, arch=arch.name, batch=net.batch, training=net.training, solver=solver.name,
        objective=objective, segments=tuple(tuple(i.layers) for i in chain), layers=tuple(layers),
        energy=energy, time=total_time, solver_seconds=seconds,
        valid=all(cost.valid for _, cost in seg_results), extra=extra)


__all__ = ["PruneStats", "SearchBudgetExceeded", "schedule_network"]
