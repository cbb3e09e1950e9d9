"""The exhaustive intra-layer solver (KAPLA's "S"): the reference optimum.

It searches the whole space of :mod:`kapla.space.layer.skeletons` on the evaluator,
skipping only what provably cannot win:

* **capacity**: register blocks that overflow the register file, and node
  blocks that overflow the global buffer, are never completed;
* **equivalent loop orders**: at each level, orders that give every tensor
  the same set of reloading loops cost the same; one order per class is
  tried (:func:`kapla.space.layer.skeletons.distinct_orders`);
* **bound**: skeletons are visited in order of a lower bound on their cost
  (:func:`lower_bound`, which no scheme of the skeleton can beat); once the
  best scheme found costs less than a skeleton's bound, that skeleton and
  all later ones are skipped.

Results are cached by (layer shape, batch, hardware, objective, feed), so
repeated layers are solved once.

With a ``feed`` (a layer inside a segment, :class:`kapla.model.evaluate.Feed`)
every candidate is costed with it, candidates that break its constraints
(a forwarded input or pinned weights fetched more than once, an output kept
on chip spilling partial sums) are never chosen, and the bound charges only
what the feed leaves (on-chip data pay the node buffer and the forwarding
hops instead of DRAM; pinned weights pay nothing at the top).
"""

from __future__ import annotations

import itertools
import math
import time
from typing import NamedTuple

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.tensors import Kind, footprint, layer_dims, tensor_roles
from kapla.model.evaluate import FROM_DRAM, Feed, evaluate
from kapla.model.hardware import channel_distance, word_energy
from kapla.model.rules import scheme_buffer_words
from kapla.search.base import IntraResult, IntraSolver
from kapla.space.layer.batch import enumerate_and_cost
from kapla.space.layer.classic_view import classic, skeletons
from kapla.space.layer.diagnose import feed_unmet, no_scheme
from kapla.space.layer.layer_space import Found, LayerSpace
from kapla.space.layer.skeletons import (
    BLOCK_DIMS,
    Blocking,
    Skeleton,
    build_scheme,
    distinct_orders,
    divisors,
)
from kapla.space.problem import Problem
from kapla.workload.layer import Layer


def lower_bound(skel: Skeleton, arch: ArchSpec, objective: str, feed: Feed | None = None) -> float:
    """No scheme built on ``skel`` costs less than this (under ``feed``, if given).

    Energy: MAC and register energy are fixed by the layer; every node must
    receive each element of its block at least once from DRAM over at least
    the distance to its nearest channel (once per sharing group), every node
    buffer must hand each element to the PE array at least once, every PE
    (systolic: every array edge) must receive its elements at least once,
    DRAM must supply every element at least once, and the layer runs at least
    its compute steps. Under a feed, data that stay on chip (a forwarded
    input, an output kept on chip) are instead read from or written to the
    node buffers at least once, a forwarded input crossing ``ifm_hops`` hops,
    pinned weights cost nothing at the top, and ``dram_hops`` replaces the
    distance to DRAM. Latency: the compute steps.
    """
    feed = FROM_DRAM if feed is None else feed
    layer, m = skel.layer, skel.mapping
    rest = skel.rest
    span = {d: 1 for d in "NGCKYXSR"} | m.unit_dims
    for loop in m.inner:
        span[loop.dim] *= loop.count
    for d, n in rest.items():
        span[d] *= n
    trips = math.prod(m.unit_dims.values()) * math.prod(lp.count for lp in m.inner) * math.prod(rest.values())
    if objective == "latency":
        return float(trips)
    group = dict(span)
    for st in m.stacks:
        group[st.dim] *= st.count
    full = layer_dims(layer, skel.batch)
    clip = lambda block: {d: min(v, full[d]) for d, v in block.items()}  # noqa: E731
    span, group = clip(span), clip(group)
    pes = math.prod(st.count for st in m.stacks)
    nodes = math.prod(st.count for st in skel.partition.stacks)
    shr = dict(skel.shr)
    systolic = arch.levels[0].same_level_transfer
    ops = layer.loop_ops * skel.batch
    roles = tensor_roles(layer)
    energy = ops * arch.mac_energy
    energy += ops * sum(r.copies * (2 if r.written else 1) for r in roles) * word_energy(arch, 0)
    distance = 0.0
    if arch.node_level is not None:
        distance = feed.dram_hops if feed.dram_hops is not None else channel_distance(arch, skel.partition_grid)
    for r in roles:
        per_node = footprint(r.kind, group, layer) * r.copies
        per_pe = footprint(r.kind, span, layer) * r.copies
        bus = per_node if systolic else per_pe * pes
        energy += bus * nodes * arch.bus_energy
        energy += per_node * nodes * word_energy(arch, 1)
        whole = footprint(r.kind, full, layer) * r.copies
        if r.kind == Kind.WGT and not r.written and feed.pinned:
            continue  # resident weights: no traffic with the top
        hops = feed.ifm_hops if r.kind == Kind.IFM and not r.written else None  # not None: a forwarded input
        if hops is not None or (r.written and not feed.to_dram):
            # kept on chip: read from (or left in) the node buffers at least once
            energy += whole * word_energy(arch, -2)
            if hops is not None:
                energy += whole * hops * arch.hop_energy
            continue
        energy += whole * word_energy(arch, -1)
        if arch.node_level is not None:
            # outputs reach DRAM after any reduction: at least the whole tensor once
            moved = footprint(r.kind, full, layer) * r.copies if r.written else per_node * nodes / shr.get(r.kind, 1)
            energy += moved * distance * arch.hop_energy
    energy += trips * arch.static_energy
    return energy if objective == "energy" else energy * trips


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


def _solve(problem: Problem, budget: float | None) -> _Solved:
    layer, batch, arch, objective, feed = problem.layer, problem.batch, problem.arch, problem.objective, problem.feed
    if not classic(arch):
        return _solve_frames(problem, budget)
    found = _solve_classic(layer, batch, arch, objective, budget, feed)
    if found.scheme is None and not found.evaluated:
        # nothing fits the classic space (whole rows or filters too large): strips and partial filters
        return _solve_frames(problem, budget)
    return found


def _solve_classic(layer: Layer, batch: int, arch: ArchSpec, objective: str, budget: float | None,
                   feed: Feed) -> _Solved:
    start = time.perf_counter()
    skels = sorted(((_bound_key(s, arch, objective, feed), s) for s in skeletons(layer, batch, arch)),
                   key=lambda pair: pair[0])
    best: tuple[tuple[float, float], LayerScheme] | None = None
    evaluated = 0
    complete = True
    for bound, skel in skels:
        if best is not None and bound >= best[0]:
            break
        if budget is not None and time.perf_counter() - start > budget:
            complete = False
            break
        found = enumerate_and_cost(skel, arch, objective, feed=feed)  # every blocking, costed in numpy batches
        evaluated += found.evaluated
        key = (found.value, found.energy)
        if found.blocking is not None and (best is None or key < best[0]):
            best = (key, build_scheme(skel, found.blocking))
    if best is None:
        return _Solved(None, evaluated, time.perf_counter() - start, complete)
    return _Solved(best[1], evaluated, time.perf_counter() - start, complete)


def _solve_frames(problem: Problem, budget: float | None) -> _Solved:
    """Any memory hierarchy: every frame, every blocking that fits the buffers,
    one loop order per class at every level (:class:`~kapla.space.layer.layer_space.LayerSpace`)."""
    start = time.perf_counter()
    space = LayerSpace(problem)
    best: Found | None = None
    evaluated = 0
    complete = True
    for frame in range(len(space)):
        if budget is not None and time.perf_counter() - start > budget:
            complete = False
            break
        for chunk in space.blockings(frame):
            if budget is not None and time.perf_counter() - start > budget:
                complete = False  # a frame may hold many chunks: the budget is checked between them too
                break
            found = space.best(frame, chunk)
            evaluated += len(chunk)
            if found is not None and (best is None or found.key < best.key):
                best = found
    if best is None:
        return _Solved(None, evaluated, time.perf_counter() - start, complete)
    return _Solved(best.scheme, evaluated, time.perf_counter() - start, complete)


def _bound_key(skel: Skeleton, arch: ArchSpec, objective: str, feed: Feed) -> tuple[float, float]:
    """(objective, energy) that no scheme of ``skel`` beats in that order: the
    solver's optimum is the least objective, ties going to the least energy."""
    energy = lower_bound(skel, arch, "energy", feed)
    if objective == "energy":
        return energy, energy
    trips = lower_bound(skel, arch, "latency", feed)  # the compute steps, without the energy bound again
    return (trips if objective == "latency" else energy * trips), energy


def _blockings(skel: Skeleton, arch: ArchSpec):
    """Every blocking of ``skel`` that fits both buffers, one per class of equivalent loop orders."""
    rest = skel.rest
    dims = [d for d in BLOCK_DIMS if rest[d] > 1]
    regf_bytes, gbuf_bytes = arch.levels[0].capacity, arch.levels[1].capacity
    assert isinstance(regf_bytes, int) and isinstance(gbuf_bytes, int)  # classic: one bounded buffer per level
    regf_cap = regf_bytes // arch.word_bytes
    gbuf_cap = gbuf_bytes // arch.word_bytes
    layer = skel.layer
    for unit in itertools.product(*(divisors(rest[d]) for d in dims)):
        u = dict(zip(dims, unit, strict=True))
        probe = build_scheme(skel, Blocking(tuple(u.items()), (), tuple((d, rest[d] // u[d]) for d in dims)))
        if scheme_buffer_words(probe, arch, 0) > regf_cap:
            continue
        for mid in itertools.product(*(divisors(rest[d] // u[d]) for d in dims)):
            a = dict(zip(dims, mid, strict=True))
            top = {d: rest[d] // (u[d] * a[d]) for d in dims}
            first = build_scheme(skel, Blocking(tuple(u.items()), tuple(a.items()), tuple(top.items())))
            if scheme_buffer_words(first, arch, 1) > gbuf_cap:
                continue
            for o1 in distinct_orders(layer, tuple(d for d in dims if a[d] > 1)):
                for o2 in distinct_orders(layer, tuple(d for d in dims if top[d] > 1)):
                    yield build_scheme(skel, Blocking(tuple(u.items()), tuple((d, a[d]) for d in o1),
                                                      tuple((d, top[d]) for d in o2)))
