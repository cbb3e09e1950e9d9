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

import math
import os
import signal
import time
from dataclasses import dataclass, field
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Callable, Iterable, Mapping

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme, LevelScheme, Loop
from kapla.dataflow.segment import LayerPlacement, Region, SegmentScheme
from kapla.dataflow.tensors import Kind, footprint, layer_dims, tensor_roles
from kapla.errors import KaplaError
from kapla.model.evaluate import STATIC, Feed
from kapla.model.segment import SegmentCost, dram_distance, evaluate_segment
from kapla.solve.base import IntraSolver, NoSchemeError, check_objective, no_scheme, shape_key
from kapla.solve.result import LayerResult, ScheduleResult
from kapla.solve.segments import SegmentPlan, allocate_regions, segment_plans
from kapla.workload.layer import Layer
from kapla.workload.network import Network

GROUPS = (1, 4, 16)  # ALLO batch groups tried per segment
MAX_SEGMENT = 5  # layers per segment, as TANGRAM's and nn_dataflow's default
PIN_FRACTION = 0.5  # pinned weights may take at most this share of the chip's node buffers

Progress = Callable[[str, int, int], None]


class SearchBudgetExceeded(KaplaError):
    """The exhaustive network search ran out of its time budget."""


@dataclass(frozen=True)
class InterScheme:
    """One way to run a candidate segment: its slots on regions, batch groups, pinning."""

    layers: tuple[str, ...]
    slots: tuple[tuple[str, ...], ...]
    regions: tuple[Region, ...]  # one per slot
    groups: int = 1
    pinned: bool = False

    @property
    def layout(self) -> str:
        if len(self.layers) == 1:
            return "single"
        return "spatial" if len(self.slots) > 1 else "temporal"

    def region_of(self, name: str) -> Region:
        for slot, region in zip(self.slots, self.regions):
            if name in slot:
                return region
        raise KeyError(name)


@dataclass
class PruneStats:
    """How many inter-layer schemes each stage of KAPLA's search kept (the paper's Table VI)."""

    considered: int = 0
    valid: int = 0
    pareto: int = 0
    solved: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"considered": self.considered, "valid": self.valid, "pareto": self.pareto, "solved": self.solved}


# ---------------------------------------------------------------- data flow of a segment

def _words(layer: Layer, batch: int, kind: Kind, written: bool | None = None) -> int:
    dims = layer_dims(layer, batch)
    return sum(footprint(r.kind, dims, layer) * r.copies for r in tensor_roles(layer)
               if r.kind == kind and (written is None or r.written == written))


def output_words(layer: Layer, batch: int) -> int:
    return sum(footprint(r.kind, layer_dims(layer, batch), layer) * r.copies
               for r in tensor_roles(layer) if r.written)


def weight_words(layer: Layer, batch: int = 1) -> int:
    return _words(layer, batch, Kind.WGT, written=False)


def onchip_producers(net: Network, name: str, inside: set[str]) -> tuple[str, ...]:
    """The producers whose fmaps reach ``name`` on chip: all of them, if all are in the segment."""
    producers = net.producers(name)
    if producers and all(p in inside for p in producers):
        return tuple(producers)
    return ()


def writes_dram(net: Network, name: str, inside: set[str]) -> bool:
    """The output leaves the segment, is a network output, or is kept for training."""
    consumers = net.consumers(name)
    if not consumers or name in net.kept:
        return True
    return any(c not in inside or not onchip_producers(net, c, inside) for c in consumers)


def placements(net: Network, arch: ArchSpec, inter: InterScheme) -> dict[str, LayerPlacement]:
    inside = set(inter.layers)
    out = {}
    for name in inter.layers:
        out[name] = LayerPlacement(name, inter.region_of(name), onchip_producers(net, name, inside),
                                   writes_dram(net, name, inside), inter.pinned and net[name].has_weights)
    return out


def feed_of(inter: InterScheme, place: LayerPlacement, arch: ArchSpec) -> Feed:
    hops = None
    if place.onchip_inputs:
        sources = [inter.region_of(p) for p in place.onchip_inputs]
        hops = sum(place.region.distance(s) for s in sources) / len(sources)
    return Feed(ifm_hops=hops, to_dram=place.to_dram, pinned=place.pinned,
                dram_hops=dram_distance(arch, place.region))


def gbuf_words(arch: ArchSpec) -> int:
    return arch.levels[1].capacity // arch.word_bytes if len(arch.levels) >= 3 else 0


def pin_reserve(net: Network, arch: ArchSpec) -> int | None:
    """Words each node keeps for pinned weights, or None if the weights cannot be pinned."""
    nodes = arch.node_array[0] * arch.node_array[1]
    total = sum(weight_words(layer) for layer in net)
    if total == 0 or total > PIN_FRACTION * nodes * gbuf_words(arch):
        return None
    return -(-total // nodes)


# ---------------------------------------------------------------- candidate schemes

def inter_schemes(net: Network, arch: ArchSpec, plan: SegmentPlan, pinned: bool) -> list[InterScheme]:
    """Every inter-layer scheme of a candidate segment on ``arch``."""
    whole = Region((0, 0), arch.node_array)
    if len(plan) == 1:
        return [InterScheme(plan.layers, plan.slots, (whole,), 1, pinned)]
    layouts = []
    if arch.options.spatial_layer_pipe and len(plan.slots) > 1:
        regions = allocate_regions(net, plan.slots, arch.node_array)
        if regions is not None:
            layouts.append((plan.slots, regions))
    if arch.options.temporal_layer_pipe:
        layouts.append(((plan.layers,), (whole,)))
    return [InterScheme(plan.layers, slots, regions, g, pinned)
            for slots, regions in layouts for g in GROUPS if net.batch % g == 0 and g <= net.batch]


def may_fit(net: Network, arch: ArchSpec, inter: InterScheme, reserve: int) -> bool:
    """False only if no intra-layer scheme can make ``inter`` valid: a forwarded
    fmap piece must fit the buffers of the region that receives it."""
    per_node = gbuf_words(arch) - reserve
    if per_node <= 0:
        return False
    inside = set(inter.layers)
    for name in inter.layers:
        producers = onchip_producers(net, name, inside)
        if not producers:
            continue
        piece = sum(output_words(net[p], net.batch) for p in producers) / inter.groups
        if piece > inter.region_of(name).nodes * per_node:
            return False
    return True


@dataclass(frozen=True)
class Estimate:
    """A quick cost estimate of an inter-layer scheme from its compulsory traffic."""

    energy: float
    time: float
    dram_words: float
    onchip_words: float
    groups: int = 1

    def objective(self, name: str) -> float:
        return {"energy": self.energy, "latency": self.time, "edp": self.energy * self.time}[name]

    def dominates(self, other: "Estimate") -> bool:
        # More batch groups shorten the pipeline but shrink every block (more
        # buffer and bus traffic), which the estimate does not see: a scheme
        # only dominates one with at most as many groups.
        mine = (self.dram_words, self.onchip_words, self.time, self.groups)
        theirs = (other.dram_words, other.onchip_words, other.time, other.groups)
        return all(a <= b for a, b in zip(mine, theirs)) and mine != theirs


def estimate(net: Network, arch: ArchSpec, inter: InterScheme, reserve: int = 0,
             scale: Mapping[str, tuple[float, float]] | None = None) -> Estimate:
    """Every word that must cross DRAM or the NoC once, every MAC at full PE
    utilisation, weights refetched per batch group when they cannot stay in
    the region's buffers, the pipeline's fill and drain, and static energy.

    ``scale`` calibrates each layer's energy (static aside) and time by the
    ratio of its solved single-layer cost to this estimate of it: what the
    compulsory traffic misses (register, bus and buffer accesses, refetches,
    idle PEs) is much the same wherever the layer runs.
    """
    batch = net.batch
    dram_e = arch.levels[-1].access_energy
    pes = arch.pe_array[0] * arch.pe_array[1]
    places = placements(net, arch, inter)
    total = 0.0
    dram_total = onchip_total = 0.0
    layer_time: dict[str, float] = {}
    for name in inter.layers:
        energy = 0.0
        layer, place = net[name], places[name]
        feed = feed_of(inter, place, arch)
        ifm = _words(layer, batch, Kind.IFM, written=False)
        wgt = weight_words(layer, batch)
        out = output_words(layer, batch)
        dram = 0.0
        if feed.ifm_hops is None:
            dram += ifm
        else:
            onchip_total += ifm
            energy += ifm * (arch.levels[1].access_energy + feed.ifm_hops * arch.hop_energy)
        if not feed.pinned:
            room = place.region.nodes * (gbuf_words(arch) - reserve) / 2
            dram += wgt * (inter.groups if wgt > room else 1)
        if feed.to_dram:
            dram += out
        dram_total += dram
        energy += dram * (dram_e + (feed.dram_hops or 0.0) * arch.hop_energy)
        energy += layer.loop_ops * batch * arch.mac_energy
        compute = layer.loop_ops * batch / (place.region.nodes * pes)
        layer_time[name] = max(compute, dram / arch.dram_bandwidth_words)
        if scale is not None and name in scale:
            energy *= scale[name][0]
            layer_time[name] *= scale[name][1]
        total += energy
    slot_times = [sum(layer_time[n] for n in slot) for slot in inter.slots]
    longest = max(slot_times)
    seg_time = max(longest + (sum(slot_times) - longest) / inter.groups, dram_total / arch.dram_bandwidth_words)
    return Estimate(total + seg_time * arch.static_energy, seg_time, dram_total, onchip_total, inter.groups)


def calibration(net: Network, arch: ArchSpec, single: InterScheme, cost: SegmentCost,
                reserve: int = 0) -> tuple[float, float]:
    """(energy, time) factors from a layer's estimate alone to its solved cost."""
    raw = estimate(net, arch, single, reserve)
    raw_dynamic = raw.energy - raw.time * arch.static_energy
    dynamic = cost.total_energy - cost.energy.get(STATIC, 0.0)
    return (dynamic / raw_dynamic if raw_dynamic > 0 else 1.0, cost.time / raw.time if raw.time > 0 else 1.0)


def pareto(schemes: list[tuple[InterScheme, Estimate]]) -> list[tuple[InterScheme, Estimate]]:
    """The schemes no other scheme of the same segment beats in every traffic count and time."""
    return [(s, e) for s, e in schemes if not any(o.dominates(e) for _, o in schemes)]


# ---------------------------------------------------------------- solving segments

def outer_batch(scheme: LayerScheme, layer: Layer, groups: int, ifm_name: str | None) -> LayerScheme:
    """``scheme`` (solved for one batch group) repeated over ``groups`` groups by
    an outermost loop over the batch, under the layer's own name."""
    levels = list(scheme.levels)
    if groups > 1:
        top = levels[-1]
        levels[-1] = LevelScheme(top.level, top.stacks, (Loop("N", groups),) + top.updates, top.shr, top.bypass)
    return LayerScheme(layer, scheme.batch * groups, scheme.unit, tuple(levels), ifm_name=ifm_name)


@dataclass
class SegmentSolver:
    """Solves inter-layer schemes with an intra-layer solver; caches layers by shape and feed."""

    net: Network
    arch: ArchSpec
    solver: IntraSolver
    objective: str
    reserve: int = 0
    pool: Executor | None = None
    layer_cache: dict = field(default_factory=dict)
    cache: dict = field(default_factory=dict)

    def solve(self, inter: InterScheme) -> tuple[SegmentScheme, SegmentCost] | None:
        """The segment's schemes and cost; None if some layer has no valid scheme."""
        if inter in self.cache:
            return self.cache[inter]
        places = placements(self.net, self.arch, inter)
        schemes = {}
        found = None
        for name in inter.layers:
            scheme = self._layer(inter, places[name])
            if scheme is None:
                break
            schemes[name] = scheme
        else:
            segment = SegmentScheme(inter.slots, places, schemes, inter.groups)
            cost = evaluate_segment(segment, self.arch)
            found = (segment, cost) if cost.valid else None
        self.cache[inter] = found
        return found

    def prefetch(self, inters: Iterable[InterScheme]) -> None:
        """Solve the layers these schemes need that are not cached yet, in the pool if there is one."""
        jobs = {}
        for inter in inters:
            if inter in self.cache:
                continue
            for place in placements(self.net, self.arch, inter).values():
                key, local, feed = self._key(inter, place)
                if key not in self.layer_cache and key not in jobs:
                    jobs[key] = (self.solver, key, local, self.objective, feed)
        if self.pool is not None and len(jobs) > 1:
            for key, scheme in zip(jobs, self.pool.map(_solve_layer, jobs.values())):
                self.layer_cache[key] = scheme
        else:
            for key, job in jobs.items():
                self.layer_cache[key] = _solve_layer(job)

    def _key(self, inter: InterScheme, place: LayerPlacement):
        layer = self.net[place.layer]
        feed = feed_of(inter, place, self.arch)
        # Buffer space that is not the layer's: its share of the pinned weights,
        # and a piece of each fmap forwarded to it, which waits in this region.
        reserve = self.reserve if inter.pinned else 0
        if place.onchip_inputs:
            piece = sum(output_words(self.net[p], self.net.batch) for p in place.onchip_inputs) / inter.groups
            reserve += math.ceil(piece / place.region.nodes)
        # The scheme is chosen for where the data come from and go to, not for the
        # exact hop distances (they scale traffic every scheme must move anyway),
        # so layers of one shape on equal regions share a solve; the segment is
        # then costed with the true distances.
        canonical = Feed(ifm_hops=None if feed.ifm_hops is None else 0.0, to_dram=feed.to_dram,
                         pinned=feed.pinned)
        key = (shape_key(layer), self.net.batch // inter.groups, place.region.shape, canonical, reserve)
        rows, cols = place.region.shape
        local = self.arch.with_node_region(rows, cols)
        if reserve:
            gbuf = local.levels[1]
            left = gbuf.capacity - reserve * local.word_bytes
            local = local.with_level(gbuf.name, capacity=left) if left > 0 else None
        return key, local, None if canonical == Feed() else canonical

    def _layer(self, inter: InterScheme, place: LayerPlacement) -> LayerScheme | None:
        layer = self.net[place.layer]
        key, local, feed = self._key(inter, place)
        if key not in self.layer_cache:
            self.layer_cache[key] = _solve_layer((self.solver, key, local, self.objective, feed))
        generic = self.layer_cache[key]
        if generic is None:
            return None
        return outer_batch(generic, layer, inter.groups, "+".join(self.net.producers(layer.name)) or None)


def _solve_layer(job) -> LayerScheme | None:
    solver, key, local, objective, feed = job
    if local is None:  # no buffer left for the layer's own blocks
        return None
    try:
        kwargs = {} if feed is None else {"feed": feed}  # outside a segment: the solvers' own default
        return solver.solve(key[0], key[1], local, objective, **kwargs).scheme
    except NoSchemeError:
        return None


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


def _refine(order, options, top_k, segsolver, objective, net, arch, stats, progress) -> list[_Chain]:
    """Solve the segments of the ``top_k`` chains, put their true values in place
    of the estimates (or drop them if invalid), and repeat until the best
    chains hold only solved segments. With estimates that never exceed the
    true values this ends with the optimum of the pruned space."""
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
    segsolver = SegmentSolver(net, arch, solver, objective, reserve, pool)
    options: dict[int, list[tuple[int, InterScheme, float]]] = {}
    singles = []
    plans = segment_plans(net, MAX_SEGMENT) if _pipelining(arch) else [[SegmentPlan((n,), ((n,),))] for n in order]
    all_schemes: list[tuple[int, int, InterScheme]] = []
    for j, ending in enumerate(plans):
        for plan in ending:
            for inter in inter_schemes(net, arch, plan, pinned):
                stats.considered += 1
                if not may_fit(net, arch, inter, reserve if pinned else 0):
                    continue
                stats.valid += 1
                all_schemes.append((index[plan.layers[0]], j, inter))
                if len(plan) == 1:
                    singles.append(inter)
    if exhaustive:
        values = {}
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
            values[inter] = _segment_value(objective, found[1].total_energy, found[1].time)
            options.setdefault(j, []).append((i, inter, values[inter]))
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
            scale[inter.layers[0]] = calibration(net, arch, inter, found[1], reserve if pinned else 0)
            if progress is not None:
                progress("solving layers", n + 1, len(singles))
        by_segment: dict[tuple[str, ...], list[tuple[InterScheme, Estimate]]] = {}
        spans = {}
        for i, j, inter in all_schemes:
            est = estimate(net, arch, inter, reserve if pinned else 0, scale)
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
        chains = _refine(order, options, top_k, segsolver, objective, net, arch, stats, progress)
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


__all__ = ["InterScheme", "PruneStats", "SearchBudgetExceeded", "estimate", "inter_schemes", "may_fit",
           "outer_batch", "schedule_network"]
