"""KAPLA's intra-layer solver (Sec. IV-C, Algorithm 1): bottom-up cost descent.

Skeletons (partition x sharing x PE mapping) are ranked by a lower-bound
estimate; the first ``scan`` get a quick descent (one loop order per level)
and the best ``top`` of those the full one:

1. **REGF caching**: starting from the PE template's unit block, repeatedly
   enlarge the register block along one dimension by one prime factor. The
   dimension is the one that most reduces the array-bus traffic of the
   currently most-accessed tensor (ties broken by the second); a step is
   taken only if it fits the register file and does not raise the cost.
2. **GBUF caching**: the same for the node-buffer block (moving loop factors
   from above the GBUF to between GBUF and REGF), driven by DRAM traffic.
   As Algorithm 1 prescribes, each level is cached under each of its loop
   orders (one per choice of innermost loop) and the best kept.
3. **Loop orders**: every pair of innermost loops is tried on the blocks
   found, and the descent repeated once from the best orders.
4. **Polish**: the winner is hill-climbed by moving one prime factor between
   the register block, the REGF-level and the GBUF-level loops, together with
   any re-ordering of the loops, while the cost drops.

Blocks only ever grow while they fit, so every scheme built is valid by
construction; the evaluator checks the winner anyway.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.tensors import Kind, footprint
from kapla.model.evaluate import ITCN, LayerCost, evaluate
from kapla.solve.base import IntraResult, check_objective, no_scheme
from kapla.solve.space import BLOCK_DIMS, Blocking, Skeleton, build_scheme, distinct_orders, skeletons
from kapla.workload.layer import Layer


@dataclass
class _State:
    unit: dict[str, int]
    regf: dict[str, int]
    top: dict[str, int]
    regf_order: tuple[str, ...]
    top_order: tuple[str, ...]

    def blocking(self) -> Blocking:
        return Blocking(tuple(self.unit.items()),
                        tuple((d, self.regf[d]) for d in self.regf_order),
                        tuple((d, self.top[d]) for d in self.top_order))


class KaplaIntraSolver:
    """KAPLA's fast intra-layer solver: ``scan`` skeletons get a quick descent,
    the best ``top`` of them the full one."""

    name = "kapla"

    def __init__(self, scan: int = 24, top: int = 4) -> None:
        self.scan = scan
        self.top = top

    def solve(self, layer: Layer, batch: int, arch: ArchSpec, objective: str = "energy",
              ifm_name: str | None = None) -> IntraResult:
        check_objective(objective)
        start = time.perf_counter()
        skels = list(skeletons(layer, batch, arch))
        ranked = sorted(skels, key=lambda s: estimate(s, arch))
        evaluated = 0
        # A quick descent (one pass, fixed loop orders) sorts the most promising
        # skeletons; the full descent then refines the best few.
        quick = []
        for skel in ranked[: self.scan]:
            found = _descend(skel, arch, objective, ifm_name, rounds=0)
            if found is not None:
                evaluated += found[2]
                quick.append((found[1].objective(objective), id(skel), skel))
        quick.sort(key=lambda item: item[:2])
        best = None
        for _, _, skel in quick[: self.top]:
            found = _descend(skel, arch, objective, ifm_name)
            if found is None:
                continue
            scheme, cost, n, state = found
            evaluated += n
            value = cost.objective(objective)
            if best is None or value < best[0]:
                best = (value, scheme, cost, skel, state)
        if best is not None:
            _, _, _, skel, state = best
            state, scheme, cost, n = _polish(skel, state, arch, objective, ifm_name)
            evaluated += n
            best = (cost.objective(objective), scheme, cost)
        if best is None:
            raise no_scheme(layer, batch, arch)
        _, scheme, _ = best
        cost = evaluate(scheme, arch)  # the independent check, on the winner
        return IntraResult(scheme, cost, evaluated, time.perf_counter() - start)


def estimate(skel: Skeleton, arch: ArchSpec) -> float:
    """A lower bound on a skeleton's energy, from its blocks alone (no blocking search).

    Each PE and each node must load the data its block touches at least
    once, DRAM data must cross the NoC to every node that needs them (once per
    sharing group), and the layer takes at least its compute steps of static
    energy. MAC and register energy are the same for every skeleton.
    """
    layer, m = skel.layer, skel.mapping
    rest = skel.rest
    pe_block = {d: 1 for d in "NGCKYXSR"} | m.unit_dims
    pe_span = dict(pe_block)
    for loop in m.inner:
        pe_span[loop.dim] = pe_span.get(loop.dim, 1) * loop.count
    for d, n in rest.items():
        pe_span[d] = pe_span.get(d, 1) * n
    node_span = dict(pe_span)
    for st in m.stacks:
        node_span[st.dim] = node_span.get(st.dim, 1) * st.count
    pes = math.prod(st.count for st in m.stacks)
    nodes = math.prod(st.count for st in skel.partition.stacks)
    shr = dict(skel.shr)
    itcn = gbuf = noc = 0.0
    for kind in (Kind.IFM, Kind.WGT, Kind.OFM):
        if kind == Kind.WGT and not layer.has_weights:
            continue
        itcn += footprint(kind, pe_span, layer) * pes * nodes
        per_node = footprint(kind, node_span, layer)
        gbuf += per_node * nodes
        noc += per_node * nodes / shr.get(kind, 1)
    distance = _mean_channel_distance(arch)
    trips = math.prod(pe_block.values()) * math.prod(lp.count for lp in m.inner) * math.prod(rest.values())
    return (itcn * arch.bus_energy + gbuf * arch.levels[1].access_energy
            + noc * distance * arch.hop_energy + trips * arch.static_energy)


def _mean_channel_distance(arch: ArchSpec) -> float:
    from kapla.model.evaluate import _channel_distance

    return _channel_distance(arch, arch.node_array) if arch.node_level is not None else 0.0


def _orders(dims: list[str]) -> list[tuple[str, ...]]:
    """One order per choice of innermost loop (the others keep a fixed order)."""
    if not dims:
        return [()]
    return [tuple(d for d in dims if d != inner) + (inner,) for inner in dims]


def _descend(skel: Skeleton, arch: ArchSpec, objective: str, ifm_name: str | None, rounds: int = 2):
    rest = skel.rest
    dims = [d for d in BLOCK_DIMS if rest[d] > 1]
    regf_cap = arch.levels[0].capacity // arch.word_bytes
    gbuf_cap = arch.levels[1].capacity // arch.word_bytes
    evaluated = 0

    def build(state: _State) -> LayerScheme:
        return build_scheme(skel, state.blocking(), ifm_name)

    def cost_of(scheme: LayerScheme) -> LayerCost:
        nonlocal evaluated
        evaluated += 1
        return evaluate(scheme, arch, check=False)

    def fits(scheme: LayerScheme) -> bool:
        return scheme.buffer_words(0) <= regf_cap and scheme.buffer_words(1) <= gbuf_cap

    orders = _orders(dims)
    dram = arch.levels[-1].name
    state = _State({d: 1 for d in dims}, {d: 1 for d in dims}, dict((d, rest[d]) for d in dims),
                   orders[0], orders[0])
    scheme = build(state)
    if not fits(scheme):
        return None
    best_cost = cost_of(scheme)

    def cache_level(state, field_, counts_key):
        # Algorithm 1: at each level, try the loop orders and cache under each.
        order_field = "regf_order" if field_ == "unit" else "top_order"
        best = None
        for order in (orders if rounds else orders[:1]):
            start = _State(state.unit, state.regf, state.top, state.regf_order, state.top_order)
            setattr(start, order_field, order)
            s0 = build(start)
            c0 = cost_of(s0)
            found = _cache(start, field_, counts_key, dims, rest, build, cost_of, fits, objective, c0)
            if best is None or found[2].objective(objective) < best[2].objective(objective):
                best = found
        return best

    if rounds == 0:
        for field_, counts_key in (("unit", ITCN), ("regf", dram)):
            state, scheme, best_cost = cache_level(state, field_, counts_key)
        return scheme, best_cost, evaluated, state
    for round_ in range(rounds):
        for field_, counts_key in (("unit", ITCN), ("regf", dram)):
            state, scheme, best_cost = cache_level(state, field_, counts_key)
        # try every pair of innermost loops on the blocks found
        best = (best_cost.objective(objective), state, scheme, best_cost)
        for o1 in orders:
            for o2 in orders:
                trial = _State(state.unit, state.regf, state.top, o1, o2)
                s = build(trial)
                c = cost_of(s)
                if c.objective(objective) < best[0]:
                    best = (c.objective(objective), trial, s, c)
        if best[1].regf_order == state.regf_order and best[1].top_order == state.top_order and round_ == 0:
            state, scheme, best_cost = best[1], best[2], best[3]
            break
        state, scheme, best_cost = best[1], best[2], best[3]
    return scheme, evaluate(scheme, arch), evaluated, state


def _cache(state: _State, field_: str, counts_key: str, dims: list[str], rest: dict[str, int], build, cost_of,
           fits, objective: str, current: LayerCost):
    """Grow one level's block (``unit`` or ``regf`` factors) while it fits and the cost does not rise."""
    scheme = build(state)
    while True:
        counts = current.accesses.get(counts_key, {})
        moves = []
        for d in dims:
            grow = getattr(state, field_)
            # enlarge by each prime factor still left above the GBUF (2, 3, ...)
            for factor in _primes(state.top[d]):
                new = _State(dict(state.unit), dict(state.regf), dict(state.top), state.regf_order,
                             state.top_order)
                getattr(new, field_)[d] = grow[d] * factor
                new.top[d] = state.top[d] // factor
                s = build(new)
                if not fits(s):
                    continue
                c = cost_of(s)
                moves.append((d, new, s, c))
        if not moves:
            return state, scheme, current
        # KAPLA's rule: help the most-accessed tensor first, then the second, ...
        ranking = sorted(counts, key=counts.get, reverse=True)
        moves.sort(key=lambda move, ranking=ranking: tuple(
            move[3].accesses.get(counts_key, {}).get(t, 0.0) for t in ranking) + (move[3].objective(objective),))
        for _, new, s, c in moves:
            if c.objective(objective) <= current.objective(objective):
                state, scheme, current = new, s, c
                break
        else:
            return state, scheme, current



def _polish(skel: Skeleton, state: _State, arch: ArchSpec, objective: str, ifm_name: str | None):
    """Hill-climb by moving one prime factor of a block dimension between the
    register block, the REGF-level loops and the GBUF-level loops (orders
    kept), while the cost drops and both buffers still fit."""
    regf_cap = arch.levels[0].capacity // arch.word_bytes
    gbuf_cap = arch.levels[1].capacity // arch.word_bytes
    scheme = build_scheme(skel, state.blocking(), ifm_name)
    current = evaluate(scheme, arch, check=False)
    evaluated = 1
    for _ in range(16):
        best = None
        # a factor moved to another level usually wants its loop elsewhere in the order too
        candidates = [state] + list(_factor_moves(state))
        for moved in [c for base in candidates for c in ([base] if base is not state else []) +
                      _order_moves(skel.layer, base)]:
            candidate = build_scheme(skel, moved.blocking(), ifm_name)
            if candidate.buffer_words(0) > regf_cap or candidate.buffer_words(1) > gbuf_cap:
                continue
            cost = evaluate(candidate, arch, check=False)
            evaluated += 1
            if cost.objective(objective) < (best[2] if best else current).objective(objective) * (1 - 1e-12):
                best = (moved, candidate, cost)
        if best is None:
            break
        state, scheme, current = best
    return state, scheme, current, evaluated


def _primes(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        if n % p == 0:
            out.append(p)
            while n % p == 0:
                n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def _factor_moves(state: _State):
    for d in state.unit:
        places = {"unit": state.unit, "regf": state.regf, "top": state.top}
        for src, table in places.items():
            for p in _primes(table[d]):
                for dst in places:
                    if dst == src:
                        continue
                    new = _State(dict(state.unit), dict(state.regf), dict(state.top), state.regf_order,
                                 state.top_order)
                    getattr(new, src)[d] //= p
                    getattr(new, dst)[d] *= p
                    yield new


def _order_moves(layer: Layer, state: _State) -> list[_State]:
    """The same blocks under every distinct pair of loop orders of their non-trivial loops."""
    regf_dims = tuple(d for d in state.regf_order if state.regf[d] > 1)
    top_dims = tuple(d for d in state.top_order if state.top[d] > 1)
    out = []
    for o1 in distinct_orders(layer, regf_dims):
        for o2 in distinct_orders(layer, top_dims):
            regf_order = o1 + tuple(d for d in state.regf_order if d not in o1)
            top_order = o2 + tuple(d for d in state.top_order if d not in o2)
            if (regf_order, top_order) != (state.regf_order, state.top_order):
                out.append(_State(state.unit, state.regf, state.top, regf_order, top_order))
    return out
