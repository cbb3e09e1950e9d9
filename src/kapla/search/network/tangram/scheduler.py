"""Whole-network scheduling: segments, layer pipelining, pruning and DP (KAPLA Sec. IV-B).

The inter-layer search works on *inter-layer schemes*: a candidate segment
(:func:`kapla.space.network.segments.segment_plans`) together with how it runs:

* **layout**: spatial pipelining (each slot on its own region sized by its
  operations: a rectangle of whole stripe columns, or a folded run of nodes
  along a zig-zag path, :mod:`kapla.space.network.segments`) or temporal pipelining (all layers one after another on the
  whole array, intermediate fmaps kept in the buffers);
* **groups** (ALLO): the batch is split into ``groups`` pieces that flow
  through the segment one after another; every layer's outermost loop runs
  over the pieces, so a consumer starts once its producer finished the first
  piece and only one piece of each intermediate fmap is buffered;
* **pinning**: when all the network's weights fit in a fraction of the chip's
  buffers they stay there (model pinning); each node keeps its share, which
  leaves less buffer for the layers' own blocks. A segment that is the whole
  network may also pin by TANGRAM's rule, each slot its own weights in its
  own region (:func:`kapla.space.network.inter.tangram_pins`).

KAPLA's search then

1. prunes schemes that cannot be valid: a forwarded fmap piece larger than the
   whole buffer of the region that must hold it (conservative: never rejects a
   scheme the intra-layer solver could make valid);
2. estimates each survivor's cost from its compulsory traffic (:func:`estimate`);
3. keeps, per segment, only schemes not dominated in DRAM traffic, on-chip
   forwarding traffic and time (Pareto pruning);
4. runs a dynamic program over the layers in topological order that keeps the
   ``top_k`` cheapest chains of segments by estimate, under each objective's
   order (energy; latency; EDP by its tangent at the layer-by-layer chain);
5. solves the segments of those chains (and of the layer-by-layer chain, so
   the result is never worse than scheduling layer by layer) with the
   intra-layer solver and the segment evaluator, and returns the best chain.

Everything up to the last comparison is the same whichever objective is asked
for: each segment is solved once per objective (its *variants*, every layer
with the intra-layer solver's scheme for that objective) and every variant
and objective's order stays in the DP. The search for one objective thus
ranks, by its objective, the very schedules a search for another ranks, and
never returns one worse in its objective than another objective's search does.

The exhaustive baseline skips 2-4: it solves every valid scheme of every
segment exactly and keeps, by a DP on true costs, every chain no other beats
in both energy and time, the best under any objective among them (optimal
because segment costs add up); its layers are solved for the objective asked for.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Generator, Hashable, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Protocol, runtime_checkable

from kapla.arch.spec import ArchSpec
from kapla.dataflow.segment import SegmentScheme
from kapla.errors import KaplaError
from kapla.model.objective import OBJECTIVES, LexicographicRank, Objective
from kapla.model.segment import SegmentCost
from kapla.search.base import LayerService, NetworkScheduler, NetworkTask, Progress, SearchBudgetExceeded
from kapla.search.network.tangram.groups_calibration import GroupsCalibration
from kapla.search.network.tangram.segment_solver import Found, SegmentSolver, each_call
from kapla.search.result import ScheduleResult, Stopped, cycles, from_steps, pinned_load
from kapla.search.sampling import DEFAULT_P, check_probability, check_seed, generator
from kapla.space.layer.diagnose import no_scheme
from kapla.space.network.inter import (
    Estimate,
    InterScheme,
    alike_scheme,
    calibration,
    estimates,
    inter_schemes,
    may_fit,
    pareto,
    pin_reserve,
    segment_kind,
)
from kapla.space.network.segments import SegmentPlan, schedule_order, segment_plans
from kapla.space.problem import NoSchemeError
from kapla.workload.layer import Layer
from kapla.workload.network import Network

MAX_SEGMENT = 5  # stages (slots) per segment, as TANGRAM's layer_pipeline_max_degree


@dataclass
class PruneStats:
    """How many inter-layer schemes each stage of KAPLA's search kept, in all
    and per segment (the paper's Table VI counts one segment)."""

    considered: int = 0
    valid: int = 0
    pareto: int = 0
    solved: int = 0
    #: per segment (its layers): [considered, valid, pareto]
    by_segment: dict[tuple[str, ...], list[int]] = field(default_factory=dict)

    def count(self, layers: tuple[str, ...], stage: int) -> None:
        self.by_segment.setdefault(layers, [0, 0, 0])[stage] += 1

    def to_dict(self) -> dict[str, int]:
        return {"considered": self.considered, "valid": self.valid, "pareto": self.pareto, "solved": self.solved}

    def segments(self) -> list[dict[str, object]]:
        return [{"layers": list(layers), "considered": c, "valid": v, "pareto": p}
                for layers, (c, v, p) in self.by_segment.items()]


# ---------------------------------------------------------------- the search

Key = tuple[float, float]
#: A segment's or a chain's (energy in J, time in whole cycles): both add up along a chain.
Cost = tuple[float, float]
#: A segment of a chain: its inter-layer scheme and the objective its layers were solved for (None: not yet).
Step = tuple[InterScheme, str | None]
#: A network search's best: its key, the chain's steps, their solved segments.
_Best = tuple[Key, tuple[Step, ...], list[tuple[SegmentScheme, SegmentCost]]]
#: Per last layer of a segment: (its first layer, the step, its cost: true once solved, else estimated).
Options = dict[int, list[tuple[int, Step, Cost]]]
#: How the DP ranks chains by their summed cost (sorted ascending).
Rank = Callable[[Cost], Key]

#: Every objective a search can be asked for. KAPLA's search keeps the chains
#: and the layer schemes a search for any of them would keep, so the one for X
#: never returns a schedule worse in X than a search for another objective returns.
ALL_OBJECTIVES = tuple(Objective(name) for name in OBJECTIVES)


@dataclass(frozen=True)
class _Chain:
    cost: Cost  # the sum of its segments' costs
    steps: tuple[Step, ...]


def _add(a: Cost, b: Cost) -> Cost:
    return (a[0] + b[0], a[1] + b[1])


def sum_costs(costs: Iterable[Cost]) -> Cost:
    total = (0.0, 0.0)
    for cost in costs:
        total = _add(total, cost)
    return total


def cost_of(cost: SegmentCost) -> Cost:
    """A segment cost's energy and time, as a schedule reports them (whole cycles)."""
    return (cost.total_energy, float(cycles(cost.time)))


def _top_chains(order: list[str], options: Options, k: int, rank: Rank, slack: float | None = None
                ) -> list[_Chain]:
    """Dynamic programming over the layers: the ``k`` best chains of segments
    covering layers ``0..j`` by ``rank`` of their summed cost (exact: every
    rank here is a lexicographic or linear order of the sum).

    ``slack``: how far, relatively, the first term of ``rank`` can fall when a
    segment is added to the kept chains of a prefix, which are in rank order
    (0 where that term is one term of the sum, the energy or the time: float
    addition is monotone; a rounding's worth for a tangent of EDP, whose terms
    are all positive). A segment whose chains all come, by that term, behind
    the best ones of ``k`` other segments cannot give a kept chain: its chains
    are not formed at all (a deep network's DP: most of them). The same chains
    as without, in the same order (test_scheduler). None: every chain formed."""
    if isinstance(rank, LexicographicRank):
        return _chains(order, options, _lexicographic_keep(rank.terms, k, slack))

    def keep(extensions: list[Extension]) -> list[Candidate]:
        bound = math.inf
        if slack is not None and len(extensions) > k:
            firsts = [rank((ps[0].cost[0] + e, ps[0].cost[1] + t))[0] for _, (e, t), ps in extensions]
            bound = _kth_bound(firsts, k, slack)
            extensions = [ext for ext, first in zip(extensions, firsts, strict=True) if first <= bound]
        # each sum ranked once; one past the bound comes after k sums that are not (the
        # extensions' first ones within it): never kept, so never formed
        ranked = [(key, cost, step, p) for step, (e, t), prefixes in extensions for p in prefixes
                  if (key := rank(cost := (p.cost[0] + e, p.cost[1] + t)))[0] <= bound]
        # a stable sort's first k (what heapq.nsmallest returns), sorted in C
        ranked.sort(key=_FIRST_ITEM)
        return [(cost, step, p) for _, cost, step, p in ranked[:k]]

    return _chains(order, options, keep)


_FIRST_ITEM = itemgetter(0)


def _kth_bound(firsts: list[float], k: int, slack: float) -> float:
    """The first term past which no sum can be kept: the ``k``-th of the extensions'
    best sums (``firsts``), let fall by ``slack`` (see :func:`_top_chains`)."""
    bound = sorted(firsts)[k - 1]
    return bound + slack * abs(bound)


def _lexicographic_keep(terms: tuple[int, int], k: int, slack: float | None
                        ) -> Callable[[list[Extension]], list[Candidate]]:
    """:func:`_top_chains`'s ``keep`` for a rank that orders sums by terms of
    the (energy, time) pair themselves (:class:`LexicographicRank`): the sums
    are formed flat, ``(energy, time, step, prefix)``, and sorted by those
    terms in C (the same stable order as by the rank's key; most of a deep
    network's DP is this sort)."""
    first = terms[0]
    by = itemgetter(first) if terms[1] == first else itemgetter(first, terms[1])

    def keep(extensions: list[Extension]) -> list[Candidate]:
        if slack is not None and len(extensions) > k:
            # the sums each extension's best prefix makes: at least k of them are within
            # the k-th of those by the first term, and no sum past it can be kept
            firsts = [ps[0].cost[first] + cost[first] for _, cost, ps in extensions]
            bound = _kth_bound(firsts, k, slack)
            if first == 0:
                sums = [(energy, p.cost[1] + time_, step, p) for step, (e, time_), prefixes in extensions
                        for p in prefixes if (energy := p.cost[0] + e) <= bound]
            else:
                sums = [(p.cost[0] + e, time_, step, p) for step, (e, t), prefixes in extensions
                        for p in prefixes if (time_ := p.cost[1] + t) <= bound]
        else:
            sums = [(p.cost[0] + e, p.cost[1] + t, step, p) for step, (e, t), prefixes in extensions
                    for p in prefixes]
        sums.sort(key=by)
        return [((energy, time_), step, p) for energy, time_, step, p in sums[:k]]

    return keep


class _Partial:
    """A chain being grown by the DP: its summed cost, its last step and the
    chain before it (so growing a chain by a step does not copy its steps:
    a deep network's chains are hundreds of steps long). Made by the million: a
    plain class with slots."""

    __slots__ = ("cost", "step", "prev")

    def __init__(self, cost: Cost, step: Step | None = None, prev: _Partial | None = None) -> None:
        self.cost = cost
        self.step = step
        self.prev = prev

    def chain(self) -> _Chain:
        steps = []
        node: _Partial | None = self
        while node is not None and node.step is not None:
            steps.append(node.step)
            node = node.prev
        return _Chain(self.cost, tuple(reversed(steps)))


#: A chain the DP may grow: its summed cost, its last step and the kept chain before it.
Candidate = tuple[Cost, Step, "_Partial"]
#: A segment ending at a layer, with its cost, and the kept chains of the layers before it (in keep order).
Extension = tuple[Step, Cost, list["_Partial"]]


def _chains(order: list[str], options: Options, keep: Callable[[list[Extension]], list[Candidate]]
            ) -> list[_Chain]:
    """Dynamic programming over the layers: the chains covering layers
    ``0..j`` that ``keep`` keeps of every prefix kept and segment ending at
    ``j`` (it is handed each segment with the prefixes it extends, and forms
    the chains it judges, :func:`_formed`); the chains kept for the whole
    network. Candidates are plain tuples, only those kept become chains: a
    deep network's DP weighs millions of them and keeps a few."""
    best: list[list[_Partial]] = [[] for _ in order]
    empty = [_Partial((0.0, 0.0))]
    for j in range(len(order)):
        extensions = []
        for start, step, cost in options.get(j, ()):
            prefixes = best[start - 1] if start > 0 else empty
            if prefixes:
                extensions.append((step, cost, prefixes))
        best[j] = [_Partial(cost, step, prev) for cost, step, prev in keep(extensions)]
    return [p.chain() for p in best[-1]] if order else []


def _formed(extensions: list[Extension]) -> list[Candidate]:
    """Every chain of the extensions: each segment after each of its prefixes, in that order."""
    return [((p.cost[0] + energy, p.cost[1] + time_), step, p) for step, (energy, time_), prefixes in extensions
            for p in prefixes]


#: the relative error of a tangent of EDP summed, far above a few roundings' (about 1e-15)
_TANGENT_SLACK = 1e-9


def _ranks(around: Cost | None) -> tuple[tuple[Rank, float | None], ...]:
    """The DP's order for each objective (EDP by its tangent ``around`` a known schedule), and
    how far its first term can fall as segments are added (:func:`_top_chains`'s ``slack``)."""
    def slack(objective: Objective) -> float | None:
        if objective.name != "edp" or around is None:
            return 0.0
        return _TANGENT_SLACK if min(around) >= 0 else None

    return tuple((objective.additive_of(around), slack(objective)) for objective in ALL_OBJECTIVES)


def _union(*lists: list[_Chain]) -> list[_Chain]:
    """The chains of all lists, each once, in order of first appearance."""
    seen: dict[tuple[Step, ...], _Chain] = {}
    for chains in lists:
        for chain in chains:
            seen.setdefault(chain.steps, chain)
    return list(seen.values())


def _front_chains(order: list[str], options: Options) -> list[_Chain]:
    """Dynamic programming over the layers keeping, for every prefix, each chain
    no other beats in both energy and time (the Pareto front). Costs add up, so
    a chain off the front has a prefix off it; the best chain under any
    objective that grows with energy and time (energy, latency, EDP) is on it."""
    return _chains(order, options, _front)


def _front(extensions: list[Extension]) -> list[Candidate]:
    """The chains not dominated in (energy, time); of equal costs, the first."""
    front: list[Candidate] = []
    for chain in sorted(_formed(extensions), key=lambda c: c[0]):  # stable: equal costs keep their order
        if not front or chain[0][1] < front[-1][0][1]:
            front.append(chain)
    return front


MAX_ROUNDS = 6

STOP_MARGIN = 0.25  # seconds a budgeted search keeps to stop its workers, cost what it solved and return


#: Every valid inter-layer scheme of every candidate segment: (first layer, last layer, scheme).
Schemes = list[tuple[int, int, InterScheme]]


@dataclass
class Search:
    """What a network strategy works with: the network's layers in order, the
    valid inter-layer schemes of every candidate segment, and a segment solver.

    The single layers are known at once; the schemes of every segment
    (:attr:`schemes`) are worked out when first asked for, or by
    :meth:`prepare`, which the drivers call while the workers solve the
    single layers (ResNet-1001's training DAG: 1.7 s the workers waited)."""

    net: Network
    arch: ArchSpec
    objective: Objective
    order: list[str]
    singles: list[InterScheme]  # each layer alone
    segsolver: SegmentSolver
    reserve: int
    stats: PruneStats
    progress: Progress | None
    start: float
    #: works out :attr:`schemes` (once)
    enumerate_schemes: Callable[[], Schemes]
    #: why the strategy stopped early (its budget ran out, or Ctrl-C), returning the best of what it solved
    stopped: str | None = None
    interrupted: bool = False
    _schemes: Schemes | None = field(default=None, repr=False)

    @property
    def schemes(self) -> Schemes:
        """Every valid inter-layer scheme of every candidate segment, in the order of their last layers."""
        self.prepare()
        assert self._schemes is not None
        return self._schemes

    def prepare(self) -> None:
        """Work out :attr:`schemes` now, if not yet (for a driver to call while the workers solve)."""
        if self._schemes is None:
            self._schemes = self.enumerate_schemes()


#: A strategy's search as a generator: it yields the inter-layer schemes whose
#: layers it needs solved next and returns its chains.
Plan = Generator[list[InterScheme], None, list[_Chain]]


def drive(plan: Plan, search: Search) -> list[_Chain]:
    """Run a plan alone: each request solved by the search's segment solver (and
    costed as its layers arrive) before it goes on; the search prepared meanwhile.
    A Ctrl-C stops the workers and goes to the plan (:func:`interrupt`)."""
    segsolver = search.segsolver
    try:
        request = next(plan)
        while True:
            try:
                segsolver.prefetch(request, costing=segsolver.costing(request), meanwhile=search.prepare)
            except KeyboardInterrupt as stop:
                segsolver.stop()
                interrupt(plan, stop)
            request = plan.send(None)
    except StopIteration as done:
        return done.value


def interrupt(plan: Plan, stop: KeyboardInterrupt) -> None:
    """Hand a Ctrl-C to ``plan`` at the request it waits on: it returns the best of
    what was solved (StopIteration), or raises it again where it has no whole
    schedule yet. A plan may not ask for more solves once interrupted."""
    plan.throw(stop)
    plan.close()
    raise stop


class NetworkStrategy(Protocol):
    """Chooses which segment chains of the network to solve and compare."""

    name: str

    def variants(self, objective: Objective) -> tuple[str, ...]:
        """The objectives each segment's layers are solved for (a segment variant each)."""
        ...

    def chains(self, search: Search) -> list[_Chain]: ...


@runtime_checkable
class PlannedStrategy(Protocol):
    """A strategy whose search can also run as a :data:`Plan` (several runs then share the workers)."""

    def plan(self, search: Search) -> Plan: ...


class KaplaStrategy:
    """KAPLA's pruned search (Sec. IV-B): each layer alone first (the fallback
    chain, and the calibration of the estimates), then estimates, Pareto
    pruning per segment and a top-``top_k`` DP per objective whose chains are
    solved (every segment for every objective) and re-ranked until the best are
    fully solved."""

    name = "kapla"

    def __init__(self, top_k: int = 4, rounds: int = MAX_ROUNDS) -> None:
        if top_k < 1:
            raise KaplaError(f"--top-k must be at least 1, got {top_k}")
        if rounds < 1:
            raise KaplaError(f"dp_rounds must be at least 1, got {rounds}")
        self.top_k = top_k
        self.rounds = rounds  # refinement rounds of the DP, at most

    def variants(self, objective: Objective) -> tuple[str, ...]:
        # Every objective's layer schemes, whichever is asked for: the intra-layer
        # search for one objective can miss a scheme another's finds that is
        # better in it too, and EDP is a product over the whole network, not a
        # layer's; so each segment is solved for every objective (its variants).
        return OBJECTIVES

    def chains(self, search: Search) -> list[_Chain]:
        return drive(self.plan(search), search)

    def plan(self, search: Search) -> Plan:
        """:meth:`chains` as a plan: it yields the schemes whose layers it needs
        solved next, and returns the chains once sent on after each (so several
        searches can share the workers, :class:`TangramScheduler`)."""
        net, arch, segsolver, stats = search.net, search.arch, search.segsolver, search.stats
        index = {name: i for i, name in enumerate(search.order)}
        scale = {}
        yield list(search.singles)
        for n, inter in enumerate(search.singles):
            variants = segsolver.costs(inter)
            if not variants:
                raise no_scheme(net[inter.layers[0]], net.batch, arch)
            stats.solved += 1
            # the first variant's cost, whatever the objective: estimates must not depend on it
            scale[inter.layers[0]] = calibration(net, arch, inter, variants[0][1], search.reserve)
            if search.progress is not None:
                search.progress("solving layers", n + 1, len(search.singles))
        found = estimates(net, arch, (inter for _, _, inter in search.schemes), search.reserve, scale)
        estimated = [(i, j, inter, est) for (i, j, inter), est in zip(search.schemes, found, strict=True)]
        singles = tuple(sorted(search.singles, key=lambda s: index[s.layers[0]]))
        layerwise = _layerwise(singles, segsolver)
        ranks = _ranks(layerwise[0].cost)
        # One DP over every scheme (rectangles, folded regions, inputs fetched once
        # for siblings). Running it first on rectangles alone, then adding the
        # others (each run with what the ones before solved at its true cost),
        # guaranteed a schedule never worse than without the additions, but
        # solved twice the segments for the same schedules (measured: within
        # 0.03 % on the zoo, inference and training, docs/performance.md).
        refined = yield from self._refine(search, self._options(search, estimated), ranks)
        return _union(refined, layerwise)

    @staticmethod
    def _options(search: Search, estimates: list[tuple[int, int, InterScheme, Estimate]]) -> Options:
        """The DP's options: per segment, the schemes on its Pareto front by
        estimate, at their true costs where solved."""
        segsolver, stats = search.segsolver, search.stats
        by_segment: dict[tuple[str, ...], list[tuple[InterScheme, Estimate]]] = {}
        spans = {}
        for i, j, inter, est in estimates:
            by_segment.setdefault(inter.layers, []).append((inter, est))
            spans[inter.layers] = (i, j)
        options: Options = {}
        # alike segments' schemes have the very same estimates (kept per kind of scheme): one front each
        fronts: dict[tuple[int, ...], list[int]] = {}
        for layers, cands in by_segment.items():
            alike = tuple(id(est) for _, est in cands)
            front = fronts.get(alike)
            if front is None:
                front = fronts[alike] = [k for k, _ in pareto([(k, est) for k, (_, est) in enumerate(cands)])]
            kept = [cands[k] for k in front]
            stats.pareto += len(kept)
            for _ in kept:
                stats.count(layers, 2)
            i, j = spans[layers]
            for inter, est in kept:
                entries = options.setdefault(j, [])
                # the single layers are solved by now, no segment of several yet (if one were, the
                # first round would find it solved); asking only for the former spares hashing
                # every scheme (ResNet-1001: 27,000)
                if len(inter.layers) == 1 and segsolver.is_solved(inter):
                    entries.extend(_solved_options(i, inter, segsolver.costs(inter)))
                else:
                    entries.append((i, (inter, None), (est.energy, est.time)))
        return options

    def _refine(self, search: Search, options: Options, ranks: tuple[tuple[Rank, float | None], ...]) -> Plan:
        """Solve the segments of the ``top_k`` chains under each rank, put their
        variants with their true costs in place of the estimates (none if
        invalid), and repeat, at most ``rounds`` times, until those chains
        hold only solved segments; then the best chains of solved segments.

        Every objective's rank, whichever objective is asked for: which chains
        are solved then does not depend on it, so the search for one objective
        sees the chains the search for another returns (the top ``top_k`` by
        one objective's estimate can leave out a chain that is better in it
        once solved, e.g. one found under latency with less energy).

        Before each round, the estimates of grouped schemes not solved yet are
        scaled by how far those of as many groups solved so far came from
        theirs (:class:`GroupsCalibration`): the estimate does not see what a
        smaller piece of the batch costs each layer."""
        segsolver, order = search.segsolver, search.order
        grouped = GroupsCalibration()
        for round_ in range(self.rounds):
            _calibrate(options, grouped)
            chains = _union(*(_top_chains(order, options, self.top_k, *rank) for rank in ranks))
            todo = list(dict.fromkeys(inter for chain in chains for inter, variant in chain.steps if variant is None))
            if not todo:
                break
            try:
                yield todo
            except KeyboardInterrupt:
                # Ctrl-C during a round (the workers are stopped): the segments of the round whose
                # layers were all solved count, the others stay estimates and are left out below
                search.interrupted = True
                todo = [inter for inter in todo if segsolver.solved(inter)]
            for n, inter in enumerate(todo):
                search.stats.solved += 1
                if search.progress is not None and not search.interrupted:
                    search.progress(f"solving segments (round {round_ + 1})", n + 1, len(todo))
                entries = options[order.index(inter.layers[-1])]
                k = next(k for k, e in enumerate(entries) if e[1] == (inter, None))
                solved = _solved_options(entries[k][0], inter, segsolver.costs(inter))
                grouped.learn(inter, grouped.estimate_of(inter, entries[k][2]), (cost for _, _, cost in solved))
                entries[k:k + 1] = solved
            if search.interrupted:
                search.stopped = (f"interrupted; the best schedule of the {search.stats.solved} inter-layer schemes "
                                  f"solved in {round_ + 1} of at most {self.rounds} rounds")
                break
        # the best chains of what was solved (true costs only; the single layers always are)
        known = {j: [o for o in entries if o[1][1] is not None] for j, entries in options.items()}
        return _union(*(_top_chains(order, known, self.top_k, *rank) for rank in ranks))


def _calibrate(options: Options, grouped: GroupsCalibration) -> None:
    """Scale the estimates of the grouped schemes not solved yet by what the
    solved ones of as many groups showed (:mod:`.groups_calibration`)."""
    factors = grouped.factors()
    if not factors:
        return
    for entries in options.values():
        for k, (start, step, cost) in enumerate(entries):
            if step[1] is None and step[0].groups in factors:
                entries[k] = (start, step, grouped.scaled(step[0], cost, factors))


def _solved_options(start: int, inter: InterScheme, variants: list[tuple[str, SegmentCost]]
                    ) -> list[tuple[int, Step, Cost]]:
    return [(start, (inter, objective), cost_of(cost)) for objective, cost in variants]


def _layerwise(singles: tuple[InterScheme, ...], segsolver: SegmentSolver) -> list[_Chain]:
    """Each layer alone, under each objective's variant (a layer without a valid
    one: its first valid variant): the chains a schedule is never worse than."""
    chains = []
    for objective in segsolver.objectives:
        steps: list[Step] = []
        costs = []
        for inter in singles:
            valid = dict(segsolver.costs(inter))
            variant = objective if objective in valid else next(iter(valid))
            steps.append((inter, variant))
            costs.append(cost_of(valid[variant]))
        chains.append(_Chain(sum_costs(costs), tuple(steps)))
    return _union(chains)


class ExhaustiveStrategy:
    """The baseline: every valid inter-layer scheme of every segment solved, then
    the DP on true costs keeping the chains on the (energy, time) Pareto front
    (segment costs add up, so the best of them is the optimum of the space
    under any objective); ``time_budget`` seconds bound it."""

    name = "exhaustive"

    def __init__(self, time_budget: float | None = None) -> None:
        self.time_budget = time_budget

    def variants(self, objective: Objective) -> tuple[str, ...]:
        # the layers' own optimum for the objective asked for (its intra-layer
        # solver is exact); other objectives' schemes would triple its work
        return (objective.name,)

    def chains(self, search: Search) -> list[_Chain]:
        net, segsolver = search.net, search.segsolver
        # the layer-by-layer chain first: once it is solved, a stop still leaves a whole schedule
        fallback = set(search.singles)
        schemes = sorted(self.schemes(search), key=lambda s: (s[2] not in fallback, len(s[2].layers) > 1))

        def check() -> float | None:
            if self.time_budget is None:
                return None
            # stop a little early: terminating the workers and returning take time too
            left = search.start + self.time_budget - STOP_MARGIN - time.perf_counter()
            if left <= 0:
                raise SearchBudgetExceeded(
                    f"the {self.name} network search of '{net.name}' ran out of its {self.time_budget:g} s budget "
                    f"after solving {segsolver.layers_solved()} layers")
            return left

        def layers_done(done: int, total: int) -> None:
            if search.progress is not None:
                search.progress("solving layers", done, total)

        # every layer solve first, in the pool; then the segments, whose costing is cheap
        stop: BaseException | None = None
        try:
            segsolver.prefetch((inter for _, _, inter in schemes), layers_done, check)
        except (SearchBudgetExceeded, KeyboardInterrupt) as exc:
            segsolver.stop()
            stop = exc
        options: Options = {}
        hard_end = None if self.time_budget is None else search.start + self.time_budget - STOP_MARGIN / 2
        for n, (i, j, inter) in enumerate(schemes):
            if stop is None:
                try:
                    check()
                except SearchBudgetExceeded as exc:
                    stop = exc
            if stop is not None:
                # after a stop: the layer-by-layer chain always, then what was solved while time remains
                if inter not in fallback and hard_end is not None and time.perf_counter() > hard_end:
                    break
                if not segsolver.solved(inter):
                    continue
            variants = segsolver.costs(inter)
            search.stats.solved += 1
            if search.progress is not None and stop is None:
                search.progress("costing segments", n + 1, len(schemes))
            if not variants and len(inter.layers) == 1:
                raise self.unsolvable(net[inter.layers[0]], search)
            options.setdefault(j, []).extend(_solved_options(i, inter, variants))
        # every chain that can be the best under some objective: which are kept does not depend on the one asked for
        chains = _front_chains(search.order, options)
        if stop is not None:
            if not chains:  # some layer was never solved: nothing whole to return
                raise stop
            search.interrupted = isinstance(stop, KeyboardInterrupt)
            search.stopped = ("interrupted" if search.interrupted else str(stop)) + (
                f"; the best schedule of the {search.stats.solved} inter-layer schemes solved of "
                f"{len(schemes)}")
        return chains

    def schemes(self, search: Search) -> list[tuple[int, int, InterScheme]]:
        """The inter-layer schemes to solve, with the span of layers each covers."""
        return search.schemes

    def unsolvable(self, layer: Layer, search: Search) -> KaplaError:
        """The error for a layer that has no scheme even alone."""
        return no_scheme(layer, search.net.batch, search.arch)


class RandomStrategy(ExhaustiveStrategy):
    """Random search over the inter-layer space (KAPLA Sec. V-A, baseline R):
    every way of slicing the network into segments stays, each inter-layer
    scheme of a segment of two or more layers is solved with probability
    ``p``, then the DP on true costs. Each layer alone is always solved (the
    chain that always exists)."""

    name = "random"

    def __init__(self, p: float = DEFAULT_P, seed: int = 0, time_budget: float | None = None) -> None:
        super().__init__(time_budget)
        self.p = check_probability(p)
        self.seed = check_seed(seed)

    def schemes(self, search: Search) -> list[tuple[int, int, InterScheme]]:
        rng = generator(self.seed, search.net.name, search.net.batch, search.order)
        singles = set(search.singles)
        draws = rng.random(len(search.schemes))
        return [s for s, u in zip(search.schemes, draws, strict=True) if s[2] in singles or u < self.p]

    def unsolvable(self, layer: Layer, search: Search) -> KaplaError:
        return NoSchemeError(f"random search (p={self.p:g}, seed={self.seed}) found no valid scheme for layer "
                             f"'{layer.name}' (batch {search.net.batch}); raise p (-O p=...)")


class TangramScheduler(NetworkScheduler):
    """TANGRAM's dataflow space scheduled by segment DP: the network cut into
    segments of up to ``MAX_SEGMENT`` stages, each run by one of its
    inter-layer schemes (layout, batch groups, pinning), the chains of
    segments chosen by ``policy`` (KAPLA's pruned top-k DP, every scheme,
    or a random sample) and the best returned; with model pinning, the
    search runs with and without it and keeps the better."""

    name = "tangram"

    def __init__(self, policy: NetworkStrategy, folded: bool = True, share_inputs: bool = True) -> None:
        self.policy = policy
        self.folded = folded  # spatial pipelines on folded regions too, not only on rectangles
        self.share_inputs = share_inputs  # a segment's layers reading the same fmaps from DRAM fetch them once too
        self.time_budget = getattr(policy, "time_budget", None)

    def schedule(self, task: NetworkTask, layers: LayerService) -> ScheduleResult:
        net, arch, obj = task.net, task.arch, task.objective
        reserve = pin_reserve(net, arch)
        runs = [False] + ([True] if reserve is not None else [])
        best: _Best | None = None
        stats = PruneStats()
        stopped: Search | None = None
        # with a plan, the runs go side by side, their layer solves of each step made together:
        # the workers get one larger batch at a time, which they share out more evenly
        planned = self.policy if isinstance(self.policy, PlannedStrategy) and len(runs) > 1 else None
        if planned is not None:
            founds, stopped = self._side_by_side(planned, task, layers, runs, reserve or 0, stats)
            for found in founds:
                if best is None or found[0] < best[0]:
                    best = found
        for pinned in runs if planned is None else ():
            try:
                found, search = _search(net, arch, layers, obj, self.policy, task.start, task.progress, pinned,
                                        reserve or 0, stats, self.folded, self.share_inputs)
            except NoSchemeError:
                if not pinned:
                    raise
                # some layer has no scheme with its weights held on chip by kapla's rule:
                # there is no such schedule, and the run without that pinning's stands
                continue
            if best is None or found[0] < best[0]:
                best = found
            if search.stopped is not None:  # out of time (or interrupted): the other run is not started
                stopped = search
                break
        assert best is not None  # runs is never empty, and _search raises when it finds nothing
        _, chain, seg_results = best
        halt = None if stopped is None else Stopped("interrupt" if stopped.interrupted else "budget",
                                                    stopped.stopped or "")
        return _result(net, arch, layers.solver.name, obj.name, chain, seg_results, stats,
                       time.perf_counter() - task.start, self.policy.name, halt)

    def _side_by_side(self, policy: PlannedStrategy, task: NetworkTask, layers: LayerService, runs: list[bool],
                      reserve: int, stats: PruneStats) -> tuple[list[_Best], Search | None]:
        """Each run's best (in the order of ``runs``), the runs' plans stepped
        together: each step's layer solves of every run go to the workers as
        one batch. A run needs nothing another solves, so each finds what it
        would alone; a pinned run without a scheme for some layer is dropped
        (there is no such schedule), as when run alone. A Ctrl-C stops the
        workers and goes to every run's plan (:func:`interrupt`); also returned:
        a run so stopped, if any."""
        live: list[tuple[bool, Search, Plan, list[InterScheme]]] = []
        done: dict[bool, _Best] = {}
        stopped: Search | None = None

        def advance(pinned: bool, search: Search, plan: Plan, first: bool) -> None:
            try:
                request = next(plan) if first else plan.send(None)
            except StopIteration as end:
                done[pinned] = _best(search, end.value)
            except NoSchemeError:
                if not pinned:
                    raise
            else:
                live.append((pinned, search, plan, request))

        for pinned in runs:
            try:
                search = _prepare(task.net, task.arch, layers, task.objective, self.policy, task.start,
                                  task.progress, pinned, reserve, stats, self.folded, self.share_inputs)
            except NoSchemeError:
                if not pinned:
                    raise
                continue
            advance(pinned, search, policy.plan(search), True)
        while live:
            jobs: dict = {}
            for _, search, _, request in live:
                jobs.update(search.segsolver.jobs(request))
            costing = [search.segsolver.costing(request) for _, search, _, request in live]
            stepping, live[:] = list(live), []
            try:
                layers.solve(jobs, done=each_call([c.done for c in costing]),
                             meanwhile=each_call([c.ready for c in costing] + [search.prepare
                                                                                for _, search, _, _ in stepping]))
            except KeyboardInterrupt as stop:
                layers.stop()
                for pinned, search, plan, _ in stepping:
                    try:
                        interrupt(plan, stop)
                    except StopIteration as end:
                        done[pinned] = _best(search, end.value)
                        stopped = search
                    except KeyboardInterrupt:
                        if not pinned:  # the layers alone not all solved: no schedule to return
                            raise
                break
            for pinned, search, plan, _ in stepping:
                advance(pinned, search, plan, False)
        return [done[pinned] for pinned in runs if pinned in done], stopped


def kapla_dp(top_k: int = 4, folded: bool = True, share_inputs: bool = True,
             dp_rounds: int = MAX_ROUNDS) -> TangramScheduler:
    """KAPLA's inter-layer search on TANGRAM's space (``folded=False``: spatial pipelines on rectangles only;
    ``share_inputs=False``: every layer reads its own fmaps from DRAM; ``dp_rounds``: refinement rounds of
    the DP, at most: fewer solve fewer segments, at the risk of a chain left unsolved that was better)."""
    return TangramScheduler(KaplaStrategy(top_k, dp_rounds), folded, share_inputs)


def every_scheme(time_budget: float | None = None, folded: bool = True, share_inputs: bool = True
                 ) -> TangramScheduler:
    """Every inter-layer scheme of TANGRAM's space solved, the optimum chain returned."""
    return TangramScheduler(ExhaustiveStrategy(time_budget), folded, share_inputs)


def random_schemes(p: float = DEFAULT_P, seed: int = 0, time_budget: float | None = None,
                   folded: bool = True, share_inputs: bool = True) -> TangramScheduler:
    """A seeded random sample of TANGRAM's inter-layer schemes solved."""
    return TangramScheduler(RandomStrategy(p, seed, time_budget), folded, share_inputs)


def _search(net: Network, arch: ArchSpec, layers: LayerService, objective: Objective, strategy: NetworkStrategy,
            start: float, progress: Progress | None, pinned: bool, reserve: int,
            stats: PruneStats, folded: bool = True, share_inputs: bool = True) -> tuple[_Best, Search]:
    search = _prepare(net, arch, layers, objective, strategy, start, progress, pinned, reserve, stats, folded,
                      share_inputs)
    return _best(search, strategy.chains(search)), search


def _prepare(net: Network, arch: ArchSpec, layers: LayerService, objective: Objective, strategy: NetworkStrategy,
             start: float, progress: Progress | None, pinned: bool, reserve: int,
             stats: PruneStats, folded: bool = True, share_inputs: bool = True) -> Search:
    """One run's search, with or without pinning: each layer alone now, the valid
    inter-layer schemes of every candidate segment when first asked for."""
    order = list(schedule_order(net))  # segments are runs of it
    index = {name: i for i, name in enumerate(order)}
    reserve = reserve if pinned else 0  # buffer words per node the pinned weights take
    segsolver = SegmentSolver(net, arch, layers, strategy.variants(objective), reserve)

    # segments of one kind (a deep network repeats a few blocks) are enumerated and fitted once
    kinds: dict[Hashable, list[tuple[InterScheme, bool]]] = {}

    def valid(plan: SegmentPlan) -> list[tuple[InterScheme, bool]]:
        kind = segment_kind(net, plan.layers)
        known = None if kind is None else kinds.get(kind)
        if known is not None:
            return [(alike_scheme(inter, plan.layers), fits) for inter, fits in known]
        found = [(inter, may_fit(net, arch, inter, reserve))
                 for inter in inter_schemes(net, arch, plan, pinned, folded, share_inputs)]
        if kind is not None:
            kinds[kind] = found
        return found

    # each layer alone: a single layer's segment plan is the same whether or not layers are pipelined
    alone = {name: valid(SegmentPlan((name,), ((name,),))) for name in order}
    # the layer-by-layer chain pins only by kapla's rule
    singles = [inter for name in order for inter, fits in alone[name] if fits and not inter.pins]
    have = {inter.layers[0] for inter in singles}
    for name in order:
        if name not in have:  # nothing to fall back on: no schedule without this layer
            raise no_scheme(net[name], net.batch, arch)

    def enumerate_schemes() -> Schemes:
        plans = (segment_plans(net, MAX_SEGMENT) if _pipelining(arch)
                 else [[SegmentPlan((n,), ((n,),))] for n in order])
        schemes: Schemes = []
        for j, ending in enumerate(plans):
            for plan in ending:
                for inter, fits in alone[plan.layers[0]] if len(plan) == 1 else valid(plan):
                    stats.considered += 1
                    stats.count(plan.layers, 0)
                    if not fits:
                        continue
                    stats.valid += 1
                    stats.count(plan.layers, 1)
                    schemes.append((index[plan.layers[0]], j, inter))
        return schemes

    return Search(net, arch, objective, order, singles, segsolver, reserve, stats, progress, start, enumerate_schemes)


def _best(search: Search, chains: list[_Chain]) -> _Best:
    """The best of ``chains`` whose segments are all valid, by the search's objective."""
    net, arch, objective, segsolver = search.net, search.arch, search.objective, search.segsolver
    best: tuple[Key, tuple[Step, ...]] | None = None
    for chain in chains:
        # ranked by their costs; only the best chain's segments are made (a deep network's chains
        # hold thousands of segments of a few kinds, :meth:`SegmentSolver.costs`)
        found = [dict(segsolver.costs(inter)).get(variant) for inter, variant in chain.steps if variant is not None]
        costs = [cost for cost in found if cost is not None]
        if len(costs) < len(chain.steps):
            continue
        key = objective.key(*sum_costs(cost_of(cost) for cost in costs))
        if best is None or key < best[0]:
            best = (key, chain.steps)
    if best is None:  # pragma: no cover - the layer-by-layer chain is always valid or raised above
        raise KaplaError(f"no valid schedule of '{net.name}' on '{arch.name}'")
    results = [segsolver.solve(inter, variant) for inter, variant in best[1] if variant is not None]
    assert all(r is not None for r in results)  # its variants are valid ones
    return best[0], best[1], [r for r in results if r is not None]


def _pipelining(arch: ArchSpec) -> bool:
    return bool(arch.options.spatial_layer_pipe or arch.options.temporal_layer_pipe)


def _result(net: Network, arch: ArchSpec, solver: str, objective: str, chain: tuple[Step, ...],
            seg_results: list[Found], stats: PruneStats, seconds: float, strategy: str,
            stopped: Stopped | None) -> ScheduleResult:
    load = pinned_load(net, arch, [segment for segment, _ in seg_results])
    steps = [(inter.layers, segment, cost) for (inter, _), (segment, cost) in zip(chain, seg_results, strict=True)]
    extra = {"inter_layer_schemes": stats.to_dict(), "inter_layer_schemes_by_segment": stats.segments(),
             "strategy": strategy, "hardware": arch.to_dict()}
    return from_steps(net, arch, steps, solver=solver, objective=objective, scheduler="tangram", seconds=seconds,
                      pinned_load_j=load, stopped=stopped, extra=extra)


__all__ = ["ExhaustiveStrategy", "KaplaStrategy", "NetworkStrategy", "PruneStats", "Search", "TangramScheduler",
           "every_scheme", "kapla_dp", "random_schemes"]
