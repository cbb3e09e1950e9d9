"""The atomic network scheduler (Atomic Dataflow): atoms sized by simulated
annealing, each costed by kapla's evaluator as a layer problem on one engine
with its data on chip, scheduled in rounds by the pruned dynamic program (or
by a list schedule where that is faster), mapped along the engines' snake
order, written back where buffers overflow, and the whole costed and checked
by the round model (:mod:`kapla.model.rounds`).
"""

from __future__ import annotations

import math
import time
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from kapla.arch.spec import ArchSpec
from kapla.errors import KaplaError
from kapla.model.evaluate import STATIC, LayerCost, evaluate
from kapla.model.feed import Feed
from kapla.model.rounds import Atom, Chip, Timeline
from kapla.model.rounds import evaluate as evaluate_rounds
from kapla.model.validity import Validity
from kapla.search.base import LayerService, NetworkScheduler, NetworkTask
from kapla.search.network.atomic import atoms as atoms_module
from kapla.search.network.atomic.atoms import (
    AtomSpec,
    Tiling,
    _count,
    _words,
    anneal,
    atoms_of,
    check_supported,
    estimate_cycles,
    even,
    reads,
    tilings,
)
from kapla.search.network.atomic.rounds import RoundPlanner, buffer, in_order, layer_by_layer, place, snake
from kapla.search.result import LayerResult, ScheduleResult
from kapla.space.layer.diagnose import no_scheme
from kapla.space.problem import Problem
from kapla.workload.layer import Layer, Op
from kapla.workload.network import Network

#: Atoms read their inputs from buffers on chip and leave their outputs there: the round model
#: moves them (NoC, DRAM); the evaluator costs the engine's own work.
ON_CHIP = Feed(ifm_hops=0.0, to_dram=False)
#: What the round model counts itself, left out of an atom's own energy.
MOVED = ("DRAM", "NoC", STATIC)


def atom_layer(layer: Layer, a: AtomSpec) -> Layer:
    """The layer problem an atom is: its block of output channels and rows (and of input
    channels, for a partial sum), the input rows it reads, on one engine."""
    k = a.k[1] - a.k[0]
    rows = a.rows[1] - a.rows[0]
    changes: dict[str, Any] = {"name": f"{layer.name}.atom", "k": k}
    if layer.op in (Op.CONV, Op.MATMUL) and layer.groups > 1:
        groups = max(1, k // max(layer.k // layer.groups, 1))
        changes.update(groups=groups, c=groups * (layer.c // layer.groups))
    elif layer.op in (Op.CONV, Op.FC, Op.MATMUL):
        changes["c"] = a.c[1] - a.c[0] if a.c is not None else layer.c
    else:  # pooling and element-wise work per channel (a per-channel layer's groups are its channels)
        changes["c"] = k
        if layer.groups > 1:
            changes["groups"] = k
    if layer.op != Op.FC and rows < layer.yo:
        span = (rows - 1) * layer.stride[0] + (layer.s - 1) * layer.dilation[0] + 1
        if span <= layer.h:  # an inner block: its input rows, no padding above or below
            top, left, _, right = layer.pad
            changes.update(h=span, pad=(0, left, 0, right))
    return replace(layer, **changes)


def chip_of(arch: ArchSpec) -> Chip:
    """What the round model needs of the hardware (see :class:`~kapla.model.rounds.Chip`)."""
    node = arch.node_level
    if node is None:
        raise KaplaError(f"the atomic scheduler needs engines (a node level); hardware '{arch.name}' has none")
    words = arch.capacity_words(node.name) or 0
    return Chip(mesh=arch.node_array, buffer_words=words, link_words=float(arch.bus_width_words),
                dram_words=arch.dram_bandwidth_words, dram_j=arch.read_energy(len(arch.levels) - 1, "ifm"),
                hop_j=arch.hop_energy, static_j=arch.static_energy, pes=arch.pes_per_node,
                channels=arch.dram_channel_nodes)


class AtomicScheduler(NetworkScheduler):
    """Atomic Dataflow's graph-level schedule of atoms (see the module)."""

    name = "atomic"

    def __init__(self, beam: int = 4, anneal_steps: int = 400, seed: int = 0, dp: bool = True,
                 anneal: bool = True, reuse: bool = True, max_atoms: int = 0) -> None:
        """The paper's ablations (Fig. 10): ``dp`` False: each round takes the first ready atoms in
        the network's order (a list schedule, without the DP and its priorities); ``anneal`` False:
        each layer cut evenly over the engines, as layer-sequential (without the annealing);
        ``reuse`` False: every output written to DRAM (without on-chip reuse). ``max_atoms``: the most
        atoms a run may hold (0: :data:`~kapla.search.network.atomic.atoms.ATOM_BUDGET`): the layers
        are cut coarser to stay within it, and a run whose coarsest cut has more is refused."""
        if beam < 1 or anneal_steps < 0 or max_atoms < 0:
            raise KaplaError("atomic: beam must be at least 1, and anneal_steps and max_atoms at least 0")
        self.max_atoms = max_atoms
        self.beam, self.anneal_steps, self.seed = beam, anneal_steps, seed
        self.dp, self.anneal, self.reuse = dp, anneal, reuse

    #: Annealing rounds: the first on the estimates, each next one on them corrected by the evaluator's cycles
    CALIBRATIONS = 2
    #: Whether the list schedule's rounds are tried beside the DP's (the faster kept); baselines plan their own
    LIST_TOO = True

    def sizes(self, net: Network, arch: ArchSpec, scale: dict[str, float] | None = None) -> dict[str, Tiling]:
        if not self.anneal:
            return even(list(net), arch, arch.pe_unroll.text, samples=net.batch, budget=self.max_atoms)
        return anneal(list(net), arch, arch.pe_unroll.text, seed=self.seed, steps=self.anneal_steps,
                      scale=scale, samples=net.batch, budget=self.max_atoms)[0]

    def batch_groups(self, net: Network, arch: ArchSpec) -> int:
        """How many groups of samples the batch runs in, one group after the other (1: the
        whole batch at once). Where the batch's atoms, cut as coarsely as an engine's buffer
        allows, are more than the limit, it runs in equal groups, as few as keep a group
        within it (a transformer's batch in prefill); one error where one sample is over it."""
        limit = self.max_atoms or atoms_module.ATOM_BUDGET
        dataflow = arch.pe_unroll.text
        one = sum(min(_count(layer, t) for t in tilings(layer, arch, dataflow)) for layer in net)
        if one > limit:
            raise KaplaError(f"{self.name}: one sample of '{net.name}' is {one:,} atoms even cut as coarsely "
                             f"as an engine's buffer allows, over the {limit:,} this scheduler handles in minutes; "
                             f"raise the limit with -O max_atoms=N")
        return min(n for n in range(1, net.batch + 1) if net.batch % n == 0 and net.batch // n * one <= limit)

    @staticmethod
    def _cost(specs: list[AtomSpec], net: Network, engine: ArchSpec, objective: str, layers: LayerService,
              costs: dict[Any, tuple[Any, LayerCost]], progress) -> dict[str, Problem]:
        """Each atom's layer problem (by its key: the problem without the layer's name),
        every distinct one solved and costed into ``costs`` (scheme, cost)."""
        problems: dict[str, Problem] = {}
        jobs = {}
        shapes: dict[tuple, Problem] = {}  # atoms of one shape are one problem
        for a in specs:
            shape = (a.layer, a.k[1] - a.k[0], a.rows[1] - a.rows[0], a.c[1] - a.c[0] if a.c is not None else 0)
            key = shapes.get(shape)
            if key is None:
                problem = Problem(atom_layer(net[a.layer], a), 1, engine, objective, ON_CHIP)
                key = shapes[shape] = problem.key
                if key not in costs and key not in jobs and not layers.known(key, objective):
                    jobs[key] = (problem, (objective,))
            problems[a.name] = key

        def solved(done: int, total: int) -> None:
            if progress is not None:
                progress("solving atoms", done, total)

        layers.solve(jobs, solved)
        for key in shapes.values():
            if key not in costs:
                scheme = layers.get(key, objective)
                if scheme is None:
                    raise no_scheme(key.layer, 1, engine)
                costs[key] = (scheme, evaluate(scheme, engine, ON_CHIP))
        return problems

    def rounds(self, atoms: list[Atom], groups: list[tuple[int, int]], group_layer: list[int],
               group_sample: list[int], net: Network, engines: int, progress) -> list[tuple[int, ...]]:
        if not self.dp:
            return in_order(atoms, engines)
        planner = RoundPlanner(atoms, groups, group_layer, group_sample, _depths(net), engines, self.beam)
        return planner.plan(None if progress is None else (lambda d, t: progress("scheduling rounds", d, t)))

    def placed(self, rounds: list[tuple[int, ...]], atoms: list[Atom], layer_of: list[int], chip: Chip
               ) -> list[list[tuple[int, int]]]:
        return place(rounds, atoms, layer_of, chip)

    def through_dram(self, atoms: list[Atom], net: Network) -> frozenset[int]:
        """Atoms whose outputs go to DRAM whatever the buffers hold (none here, all without reuse)."""
        return frozenset() if self.reuse else frozenset(range(len(atoms)))

    def schedule(self, task: NetworkTask, layers: LayerService) -> ScheduleResult:
        check_supported(task.net)
        runs = self.batch_groups(task.net, task.arch)
        if runs == 1:
            return self._schedule(task, layers, 1)
        # the groups are alike (samples are independent): one is planned, and runs ``runs`` times
        return self._schedule(replace(task, net=task.net.with_batch(task.net.batch // runs)), layers, runs)

    def _schedule(self, task: NetworkTask, layers: LayerService, runs: int) -> ScheduleResult:
        """``task``'s batch planned as one group of samples, run ``runs`` times one after the other."""
        net, arch, objective = task.net, task.arch, task.objective.name
        chip = chip_of(arch)
        engine = arch.with_node_region(1, 1)
        progress = task.progress
        costs: dict[Any, tuple[Any, LayerCost]] = {}
        scale: dict[str, float] | None = None
        for calibration in range(self.CALIBRATIONS):
            sizes = self.sizes(net, arch, scale)
            specs = atoms_of(net, sizes)
            problems = self._cost(specs, net, engine, objective, layers, costs, progress)
            if calibration + 1 < self.CALIBRATIONS:
                # how much longer each layer's atoms took than the annealing estimated
                dataflow = arch.pe_unroll.text
                scale = {}
                for name in sizes:
                    first = next(a for a in specs if a.layer == name)
                    real = costs[problems[first.name]][1].time
                    guess = estimate_cycles(net[name], _tiling_of(first), arch, dataflow)
                    scale[name] = max(real, 1.0) / max(guess, 1.0)
        inputs = reads(net, specs, sizes)
        atoms: list[Atom] = []
        for a in specs:
            problem = problems[a.name]
            cost = costs[problem][1]
            layer = net[a.layer]
            in_w, weight_w, out_w = _words(layer, a.k[1] - a.k[0], a.rows[1] - a.rows[0],
                                           a.c[1] - a.c[0] if a.c is not None else 0)
            own = sum(j for part, j in cost.energy.items() if part not in MOVED)
            block = f"{a.layer}:{a.k[0]}:{a.c[0] if a.c is not None else 0}" if weight_w else None
            atoms.append(Atom(a.name, a.layer, max(1, math.ceil(cost.time)), own, problem.layer.macs, out_w,
                              weight_w, tuple(inputs[a.name]), min(in_w + weight_w + out_w, chip.buffer_words),
                              block))
        order = [layer.name for layer in net]
        index = {name: i for i, name in enumerate(order)}
        groups, group_layer, group_sample = _groups(specs, index)
        plans = [self.rounds(atoms, groups, group_layer, group_sample, net, chip.engines, progress)]
        if self.dp and self.LIST_TOO:
            # the DP's pruning can miss what a plain list schedule finds (VGG-19: 16 % faster)
            plans.append(in_order(atoms, chip.engines))
        layer_of = [index[a.layer] for a in atoms]
        written = self.through_dram(atoms, net)
        best: tuple[list, Timeline] | None = None
        for rounds in plans:
            placed = self.placed(rounds, atoms, layer_of, chip)
            timeline = evaluate_rounds(atoms, buffer(placed, atoms, chip, written), chip)
            if best is None or timeline.cycles < best[1].cycles:
                best = (placed, timeline)
        assert best is not None
        placed, timeline = best
        return _result(net, arch, specs, atoms, costs, problems, timeline, placed, layers.solver.name, objective,
                       time.perf_counter() - task.start, self.name, runs)


class LayerSequentialScheduler(AtomicScheduler):
    """Atomic Dataflow's layer-sequential baseline on the same round model: each
    layer cut evenly over the engines, one layer at a time (the samples of a
    batch side by side), mapped and written back as the atomic schedule is."""

    name = "layer-sequential"

    def __init__(self, max_atoms: int = 0) -> None:
        super().__init__(max_atoms=max_atoms)

    CALIBRATIONS = 1
    LIST_TOO = False

    def sizes(self, net: Network, arch: ArchSpec, scale: dict[str, float] | None = None) -> dict[str, Tiling]:
        return even(list(net), arch, arch.pe_unroll.text, samples=net.batch, budget=self.max_atoms)

    def rounds(self, atoms: list[Atom], groups: list[tuple[int, int]], group_layer: list[int],
               group_sample: list[int], net: Network, engines: int, progress) -> list[tuple[int, ...]]:
        return layer_by_layer(atoms, groups, group_layer, engines)


class CnnPartitionScheduler(AtomicScheduler):
    """Atomic Dataflow's CNN-Partition baseline on the same round model: the
    engines split into ``clusters`` blocks along the snake, the layers into as
    many runs of consecutive layers of about equal work, each run bound to a
    block; a block runs its layers one at a time (cut evenly over its engines)
    on one sample while the next block runs its layers on the sample before,
    the data between blocks through DRAM. ``clusters`` 0 (the default): the
    fastest of 1, 2 and 4 (1 is layer-sequential: at batch 1 there is nothing
    to pipeline)."""

    name = "cnn-partition"

    def __init__(self, clusters: int = 0, max_atoms: int = 0) -> None:
        super().__init__(max_atoms=max_atoms)
        if clusters < 0:
            raise KaplaError("cnn-partition: clusters must be 0 (the best of 1, 2, 4) or more")
        self.clusters = clusters
        self._p = max(clusters, 1)
        self._cluster: dict[str, int] = {}

    CALIBRATIONS = 1
    LIST_TOO = False

    def schedule(self, task: NetworkTask, layers: LayerService) -> ScheduleResult:
        if self.clusters:
            return self._one(task, layers, self.clusters)
        options = [p for p in (1, 2, 4) if p <= task.arch.num_nodes and p <= len(task.net.layers)]
        return _fastest(self._one(task, layers, p) for p in options)

    def _one(self, task: NetworkTask, layers: LayerService, p: int) -> ScheduleResult:
        self._p = p
        work = [layer.macs or layer.ops for layer in task.net]
        total, run, at = sum(work) or 1, 0.0, 0
        self._cluster = {}
        for layer, w in zip(task.net, work, strict=True):
            # a new block once this one holds its share of the work (and later blocks have layers left)
            if run >= total * (at + 1) / p and at < p - 1:
                at += 1
            self._cluster[layer.name] = at
            run += w
        result = AtomicScheduler.schedule(self, task, layers)
        result.extra["atomic"]["clusters"] = p
        return result

    def sizes(self, net: Network, arch: ArchSpec, scale: dict[str, float] | None = None) -> dict[str, Tiling]:
        return even(list(net), arch, arch.pe_unroll.text, max(arch.num_nodes // self._p, 1), samples=net.batch,
                    budget=self.max_atoms)

    def rounds(self, atoms: list[Atom], groups: list[tuple[int, int]], group_layer: list[int],
               group_sample: list[int], net: Network, engines: int, progress) -> list[tuple[int, ...]]:
        per = max(engines // self._p, 1)
        names = [layer.name for layer in net]
        samples = max(group_sample) + 1 if group_sample else 0
        out: list[tuple[int, ...]] = []
        for step in range(samples + self._p - 1):
            lanes = []
            for c in range(self._p):
                s = step - c
                mine = [g for g, (layer, sample) in enumerate(zip(group_layer, group_sample, strict=True))
                        if sample == s and self._cluster[names[layer]] == c]
                lane = layer_by_layer(atoms, [groups[g] for g in mine], [group_layer[g] for g in mine], per)
                lanes.append(lane)
            for k in range(max((len(lane) for lane in lanes), default=0)):
                out.append(tuple(i for lane in lanes if k < len(lane) for i in lane[k]))
        return out

    def placed(self, rounds: list[tuple[int, ...]], atoms: list[Atom], layer_of: list[int], chip: Chip
               ) -> list[list[tuple[int, int]]]:
        path = snake(chip.mesh)
        per = max(chip.engines // self._p, 1)
        out = []
        for chosen in rounds:
            used = [0] * self._p
            runs = []
            for i in chosen:
                c = self._cluster[atoms[i].layer]
                runs.append((i, path[c * per + used[c]]))
                used[c] += 1
            out.append(runs)
        return out

    def through_dram(self, atoms: list[Atom], net: Network) -> frozenset[int]:
        """Outputs read by another block's layers go through DRAM."""
        return _read_across(atoms, self._cluster)


class IlPipeScheduler(AtomicScheduler):
    """Atomic Dataflow's IL-Pipe baseline (TANGRAM-style inter-layer pipelining
    with fine-grained forwarding) on the same round model: the layers, in order,
    in segments of ``depth`` consecutive layers; each layer of a segment on a
    block of engines along the snake sized by its share of the segment's work
    (at least one), its output cut into ``pieces`` row pieces per sample, each
    piece spread over the block by output channels. Round by round every layer
    of the segment runs the next of its atoms whose inputs are ready, as many as
    its block has engines: a consumer follows its producer a piece behind, the
    pieces forwarded on chip; between segments the data go through DRAM, and a
    segment starts once the one before it is done. ``depth`` 0 (the default):
    the fastest of 2, 3 and 4."""

    name = "il-pipe"

    def __init__(self, depth: int = 0, pieces: int = 4, max_atoms: int = 0) -> None:
        super().__init__(max_atoms=max_atoms)
        if depth < 0 or pieces < 1:
            raise KaplaError("il-pipe: depth must be 0 (the best of 2, 3, 4) or more, and pieces at least 1")
        self.depth, self.pieces = depth, pieces
        self._segment: dict[str, int] = {}
        self._block: dict[str, tuple[int, int]] = {}  # per layer: its first engine on the snake, its engines

    CALIBRATIONS = 1
    LIST_TOO = False

    def schedule(self, task: NetworkTask, layers: LayerService) -> ScheduleResult:
        if self.depth:
            return self._one(task, layers, self.depth)
        options = [d for d in (2, 3, 4) if d <= task.arch.num_nodes and d <= len(task.net.layers)] or [1]
        return _fastest(self._one(task, layers, d) for d in options)

    def _one(self, task: NetworkTask, layers: LayerService, depth: int) -> ScheduleResult:
        net, engines = task.net, task.arch.num_nodes
        depth = max(1, min(depth, engines))
        self._segment, self._block = {}, {}
        names = [layer.name for layer in net]
        dataflow = task.arch.pe_unroll.text
        for start in range(0, len(names), depth):
            run = names[start:start + depth]
            # by the cycles one engine would take (a pooling layer's few operations are slow on an array)
            share = _shares([estimate_cycles(net[n], Tiling(net[n].k, net[n].yo), task.arch, dataflow) for n in run],
                            engines)
            at = 0
            for n, e in zip(run, share, strict=True):
                self._segment[n] = start // depth
                self._block[n] = (at, e)
                at += e
        result = AtomicScheduler.schedule(self, task, layers)
        result.extra["atomic"]["depth"] = depth
        return result

    def sizes(self, net: Network, arch: ArchSpec, scale: dict[str, float] | None = None) -> dict[str, Tiling]:
        # about ``pieces`` rounds' worth of atoms per sample on the layer's block
        return even(list(net), arch, arch.pe_unroll.text,
                    {layer.name: self._block[layer.name][1] * self.pieces for layer in net}, samples=net.batch,
                    budget=self.max_atoms)

    def rounds(self, atoms: list[Atom], groups: list[tuple[int, int]], group_layer: list[int],
               group_sample: list[int], net: Network, engines: int, progress) -> list[tuple[int, ...]]:
        names = [layer.name for layer in net]
        queues: dict[str, deque[int]] = {}
        for (start, end), layer in zip(groups, group_layer, strict=True):
            queues.setdefault(names[layer], deque()).extend(range(start, end))
        index = {a.name: i for i, a in enumerate(atoms)}
        done: set[int] = set()
        out: list[tuple[int, ...]] = []
        for segment in sorted(set(self._segment.values())):
            mine = [n for n in names if self._segment[n] == segment and queues.get(n)]
            while any(queues[n] for n in mine):
                chosen: list[int] = []
                for n in mine:
                    queue, room = queues[n], self._block[n][1]
                    while queue and room and all(index[p] in done for p in atoms[queue[0]].reads):
                        chosen.append(queue.popleft())
                        room -= 1
                if not chosen:
                    raise KaplaError(f"il-pipe: segment {segment} has no atom ready (a bug)")
                done.update(chosen)
                out.append(tuple(chosen))
        return out

    def placed(self, rounds: list[tuple[int, ...]], atoms: list[Atom], layer_of: list[int], chip: Chip
               ) -> list[list[tuple[int, int]]]:
        path = snake(chip.mesh)
        out = []
        for chosen in rounds:
            used: Counter[str] = Counter()
            runs = []
            for i in chosen:
                layer = atoms[i].layer
                first, _ = self._block[layer]
                runs.append((i, path[first + used[layer]]))
                used[layer] += 1
            out.append(runs)
        return out

    def through_dram(self, atoms: list[Atom], net: Network) -> frozenset[int]:
        """Outputs read by a layer of another segment go through DRAM."""
        return _read_across(atoms, self._segment)


def _fastest(results: Iterable[ScheduleResult]) -> ScheduleResult:
    """The fastest valid schedule of ``results`` (the fastest of all if none is valid)."""
    return min(results, key=lambda r: (not r.valid, r.time))


def _read_across(atoms: list[Atom], part: Mapping[str, int]) -> frozenset[int]:
    """The atoms whose outputs an atom of a layer in another part (``part``: per layer) reads."""
    index = {a.name: i for i, a in enumerate(atoms)}
    return frozenset(index[p] for a in atoms for p in a.reads if part[atoms[index[p]].layer] != part[a.layer])


def _shares(work: list[float], engines: int) -> list[int]:
    """``engines`` split among layers by their ``work`` (largest remainders), at least one each."""
    n = len(work)
    total = sum(work) or 1.0
    spare = engines - n
    raw = [spare * w / total for w in work]
    share = [1 + int(r) for r in raw]
    left = engines - sum(share)
    for j in sorted(range(n), key=lambda j: (-(raw[j] - int(raw[j])), j))[:left]:
        share[j] += 1
    return share


def _tiling_of(a: AtomSpec) -> Tiling:
    return Tiling(a.k[1] - a.k[0], a.rows[1] - a.rows[0], a.c[1] - a.c[0] if a.c is not None else 0)


def _groups(specs: list[AtomSpec], index: dict[str, int]) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    groups: list[tuple[int, int]] = []
    group_layer: list[int] = []
    group_sample: list[int] = []
    for i, a in enumerate(specs):
        if groups and group_layer[-1] == index[a.layer] and group_sample[-1] == a.sample:
            groups[-1] = (groups[-1][0], i + 1)
        else:
            groups.append((i, i + 1))
            group_layer.append(index[a.layer])
            group_sample.append(a.sample)
    return groups, group_layer, group_sample


def _depths(net: Network) -> list[int]:
    depth: dict[str, int] = {}
    for layer in net:
        depth[layer.name] = 1 + max((depth[e.src] for e in net.in_edges(layer.name) if e.src in depth), default=0)
    return [depth[layer.name] for layer in net]


def _sum(costs: list[tuple[LayerCost, int]], name: str) -> LayerCost:
    """A layer's cost on its engines: its atoms' own costs (each cost times the atoms that have it)."""
    energy: dict[str, float] = {}
    accesses: dict[str, dict[str, float]] = {}
    for c, n in costs:
        for part, j in c.energy.items():
            if part not in MOVED:
                energy[part] = energy.get(part, 0.0) + j * n
        for level, per in c.accesses.items():
            if level == "DRAM":
                continue
            into = accesses.setdefault(level, {})
            for kind, words in per.items():
                into[kind] = into.get(kind, 0.0) + words * n
    reasons = tuple(dict.fromkeys(p for c, _ in costs for p in c.validity.reasons))
    return LayerCost(layer=name, validity=Validity(reasons), ops=sum(c.ops * n for c, n in costs),
                     accesses=accesses, energy=energy, time=float(sum(c.time * n for c, n in costs)))


def _result(net: Network, arch: ArchSpec, specs: list[AtomSpec], atoms: list[Atom], costs: dict, problems: dict,
            timeline: Timeline, placed: list, solver: str, objective: str, seconds: float,
            scheduler: str, runs: int = 1) -> ScheduleResult:
    """The schedule of ``net``'s batch run ``runs`` times (groups of ``net.batch`` samples),
    one after the other, each as ``timeline`` (the group's)."""
    by_layer: dict[str, list[int]] = {}
    for i, a in enumerate(specs):
        by_layer.setdefault(a.layer, []).append(i)
    results = []
    energy: dict[str, float] = {}
    for layer in net:
        mine = by_layer[layer.name]
        keys = Counter(problems[specs[i].name] for i in mine)
        total = _sum([(costs[key][1], n * runs) for key, n in keys.items()], layer.name)
        for part, j in total.energy.items():
            energy[part] = energy.get(part, 0.0) + j
        # the scheme shown for a layer: that of its largest atom
        biggest = max(mine, key=lambda i: (atoms[i].macs, -i))
        scheme = costs[problems[specs[biggest].name]][0]
        # its atoms ran one after another on an engine's PEs (its time, their times summed)
        results.append(LayerResult(layer.name, scheme, total, ((0, 0), arch.node_array), pes=arch.pes_per_node,
                                   chip_nodes=arch.num_nodes, cost_macs=layer.macs * net.batch * runs))
    for part in ("NoC", "DRAM", STATIC):
        energy[part] = energy.get(part, 0.0) + runs * timeline.energy.get({"NoC": "NoC", "DRAM": "DRAM",
                                                                             STATIC: "static"}[part], 0.0)
    valid = timeline.valid and all(r.cost.validity.ok for r in results)
    ran_on = {name: (r, engine) for r, ran in enumerate(placed) for name, engine in
              ((atoms[i].name, e) for i, e in ran)}
    seconds_per_sample = timeline.cycles * arch.cycle_s / max(net.batch, 1)
    batch = net.batch * runs
    extra = {
        "strategy": scheduler, "hardware": arch.to_dict(),
        "inter_layer_schemes": {"considered": 0, "valid": 0, "pareto": 0, "solved": 0},
        "atomic": {
            "atoms": len(atoms) * runs, "rounds": len(timeline.rounds) * runs,
            # the timeline below is one group's (its samples numbered from 0): group g runs it
            # with samples g * samples ... after group g - 1
            "batch_groups": {"groups": runs, "samples": net.batch}, "throughput": (1 / seconds_per_sample
                                                                                if seconds_per_sample else 0.0),
            "utilization": timeline.utilisation, "noc_overhead": timeline.noc_overhead,
            "reuse_ratio": timeline.reuse_ratio, "violations": list(timeline.violations),
            "timeline": [{"cycles": c.cycles, "atoms": [[a.name, ran_on[a.name][1]] for a in
                                                        (atoms[i] for i, _ in placed[r])]}
                         for r, c in enumerate(timeline.rounds)],
        },
    }
    return ScheduleResult(network=net.name, arch=arch.name, batch=batch, training=net.training, solver=solver,
                          objective=objective, segments=tuple((layer.name,) for layer in net), layers=tuple(results),
                          energy=energy, time=float(timeline.cycles * runs), solver_seconds=seconds, valid=valid,
                          scheduler=scheduler, extra=extra)


__all__ = ["AtomicScheduler", "CnnPartitionScheduler", "IlPipeScheduler", "LayerSequentialScheduler", "atom_layer",
           "chip_of"]
