"""KAPLA's intra-layer solver (Sec. IV-C, Algorithm 1): bottom-up cost descent.

A skeleton (node partition x buffer sharing x PE mapping) is never blocked
exhaustively. The solver

1. **ranks the skeletons** (:func:`rank_skeletons`) by an estimate of their
   energy: the data each PE and each node must receive at least once (array
   bus, node buffer), plus the cheapest DRAM and NoC traffic of a small family
   of analytic top-level blockings (:func:`_dram_estimates`). Each family
   member keeps one tensor resident in the node buffer (its irrelevant loops
   innermost, over the smallest blocks) and splits that tensor's own
   dimensions over the DRAM-level loops by one of a few counts; it is costed
   as the evaluator counts DRAM reads and writes, NoC hops and buffer-sharing
   rotation, and must fit the global buffer. DRAM energy dominates large
   layers, so a skeleton is ranked mostly by how little it must re-fetch.
   The first ``refine`` skeletons, and the first ``refine_regf`` others by
   a register-aware estimate (the same kind of family one level down,
   :func:`_regf_estimates`, in place of the on-chip bound, which assumes a
   PE's registers hold its whole block), are then re-ranked by the estimate
   of their best register block (:func:`_unit_estimates`).
2. **descends level by level** on the best ``top`` skeletons
   (:func:`_descend`), from the registers up:

   * *REGF level*: every register block (``unit`` factors) that fits the
     register file is costed exactly with everything else in the node buffer
     under each choice of innermost REGF-level loop, plus what the DRAM-level
     family must re-fetch once that block is fixed (a block stacked over the
     PE array sets the smallest block the node buffer can hold); the
     ``units`` most promising blocks go on;
   * *GBUF level*: for each of those register blocks, every split of the
     remaining factors between the REGF-level and the DRAM-level loops that
     fits the node buffer is costed under every distinct loop order of both
     levels (:func:`kapla.space.layer.skeletons.distinct_orders`), in numpy batches
     (:func:`kapla.space.layer.batch.joint_scores`, the evaluator's numbers; the
     searches of the ``top`` skeletons' descents run side by side, each
     round's searches costed in one pass);
   * *descent*: the register block of the winner is moved by one prime
     factor along each dimension and the GBUF level searched again, while the
     cost drops.

Every candidate is checked against both buffer capacities, and against the
``feed`` (data kept on chip must be fetched once), before it can win; the
winner is re-costed by the scalar evaluator with its independent validity
check.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kapla.arch.spec import ArchSpec
from kapla.dataflow.mapping import STREAMED_DIMS
from kapla.dataflow.tensors import DIMS, RELEVANT, Kind, TensorRole, layer_dims, tensor_roles
from kapla.model.evaluate import FROM_DRAM, ITCN, Feed, evaluate
from kapla.model.hardware import channel_distance, word_energy
from kapla.model.objective import better, objective_of
from kapla.search.base import IntraResult, IntraSolver, Outcome, memoised
from kapla.search.layer.kapla.levels import solve_any_each
from kapla.space.layer.batch import (
    BatchEvaluator,
    Evaluators,
    blocking_of,
    joint_costs,
    joint_coverage,
    joint_energy_time,
    joint_scores,
    shared_capacity_words,
)
from kapla.space.layer.classic_view import classic, skeletons
from kapla.space.layer.diagnose import no_scheme
from kapla.space.layer.skeletons import (
    BLOCK_DIMS,
    MAX_JOINT_CANDIDATES,
    Blocking,
    Skeleton,
    build_scheme,
    class_table,
    divisors,
    innermost_table,
    looping_mask,
    order_counts,
    order_product,
    prime_factors,
)
from kapla.space.problem import NoSchemeError, Problem
from kapla.workload.layer import Layer


@dataclass
class _Run:
    """What one solve works out once and its skeletons share: their batch
    evaluators, and searches already done (register blocks per mapping and
    remainder, GBUF-level searches)."""

    evaluators: Evaluators = field(default_factory=Evaluators)
    searches: dict = field(default_factory=dict)


class KaplaIntraSolver(IntraSolver):
    """KAPLA's fast intra-layer solver: skeletons ranked by an estimate, the
    best ``top`` of them searched level by level, ``units`` register blocks
    per skeleton carried to the GBUF level."""

    name = "kapla"

    def __init__(self, top: int = 4, units: int = 3, refine: int = 30, refine_regf: int = 12) -> None:
        self.top = top
        self.units = units
        self.refine = refine
        self.refine_regf = refine_regf

    def run(self, problem: Problem) -> IntraResult:
        found = self.run_each(problem, (problem.objective,))[0]
        if isinstance(found, NoSchemeError):
            raise found
        return found

    def run_each(self, problem: Problem, objectives: Sequence[str]) -> list[Outcome]:
        """The solve under each objective; the skeletons, their ranking (by
        energy estimates, whatever the objective) and what the descents work
        out are shared, each objective descending on its own."""
        if not classic(problem.arch):
            # the descent over any hierarchy: its frames as the skeletons, its states as the register blocks
            return solve_any_each(problem, objectives, self.top, self.units)
        start = time.perf_counter()
        out: dict[str, Outcome] = {}
        try:
            ranked = self._rank_classic(problem.layer, problem.batch, problem.arch)
        except NoSchemeError:
            ranked = None
        for objective in objectives:
            if ranked is None:
                break
            try:
                out[objective] = self._solve_ranked(ranked, problem, objective, start)
            except NoSchemeError:
                pass
            start = time.perf_counter()
        # nothing fits the classic space (whole rows or filters too large): strips and partial filters
        rest = [objective for objective in objectives if objective not in out]
        out.update(zip(rest, solve_any_each(problem, rest, self.top, self.units) if rest else (), strict=True))
        return [out[objective] for objective in objectives]

    def _rank_classic(self, layer: Layer, batch: int, arch: ArchSpec) -> _Ranked:
        skels = _skeletons(layer, batch, arch)
        if not skels:
            raise no_scheme(layer, batch, arch)
        cache = _Run()
        ranked, blocks = _rank(skels, arch, self.refine, self.refine_regf, cache)
        return _Ranked(ranked, blocks, cache)

    def _solve_ranked(self, ranking: _Ranked, problem: Problem, objective: str, start: float) -> IntraResult:
        layer, batch, arch, ifm_name = problem.layer, problem.batch, problem.arch, problem.ifm_name
        feed = problem.fed
        ranked, blocks, cache = ranking.skeletons, ranking.blocks, ranking.cache
        evaluated = 0
        found: list[tuple[tuple[float, float], int, Skeleton, Blocking]] = []
        # the best-ranked skeletons descend side by side (each GBUF-level search of
        # a round costed in one pass); each descent is the one it would be alone
        heads = ranked[: self.top]
        results = _descend_all([(skel, blocks.get(skel)) for skel in heads], arch, objective, feed,
                               self.units, cache)
        for i, (skel, res) in enumerate(zip(heads, results, strict=True)):
            evaluated += res[2]
            if res[0] is not None:
                found.append((res[1], i, skel, res[0]))
        if not found:
            # the buffers or a feed can rule out the best-ranked skeletons; look further down
            for i, skel in enumerate(ranked[self.top:], self.top):
                res = _descend(skel, arch, objective, feed, self.units, cache=cache)
                evaluated += res[2]
                if res[0] is not None:
                    found.append((res[1], i, skel, res[0]))
                    break
        found.sort(key=lambda item: item[:2])
        for _, _, skel, blocking in found:
            key = ("checked", skel, blocking)  # another objective's descent may have found it too
            scheme, cost = memoised(cache.searches, key, _checked, skel, blocking, ifm_name, arch, feed)
            evaluated += 1
            if cost.valid:
                return IntraResult(scheme, cost, evaluated, time.perf_counter() - start)
        raise no_scheme(layer, batch, arch)


def _checked(skel: Skeleton, blocking: Blocking, ifm_name: str | None, arch: ArchSpec, feed: Feed | None):
    """A found blocking's directives and their cost with the evaluator's independent check."""
    scheme = build_scheme(skel, blocking, ifm_name)
    return scheme, evaluate(scheme, arch, feed or FROM_DRAM)


@dataclass(frozen=True)
class _Ranked:
    """What a solve works out before its descents, the same for every objective:
    the skeletons, best first, the register blocks the ranking costed, the run's caches."""

    skeletons: list[Skeleton]
    blocks: dict[Skeleton, tuple[np.ndarray, np.ndarray]]
    cache: _Run


# ------------------------------------------------------------------ skeletons


def _skeletons(layer: Layer, batch: int, arch: ArchSpec) -> list[Skeleton]:
    """The skeletons of :func:`kapla.space.layer.skeletons.skeletons`, in its order."""
    return list(skeletons(layer, batch, arch))


def rank_skeletons(skels: list[Skeleton], arch: ArchSpec, refine: int = 0, refine_regf: int = 0) -> list[Skeleton]:
    """The skeletons, most promising first: by :func:`estimates`; the first
    ``refine`` of them, and the first ``refine_regf`` others by the
    register-aware estimate (:func:`_regf_estimates` in place of the on-chip
    bound), re-ranked together by :func:`_refined` (ties keep their order)."""
    return _rank(skels, arch, refine, refine_regf)[0]


def _rank(skels: list[Skeleton], arch: ArchSpec, refine: int, refine_regf: int, cache: _Run | None = None):
    """:func:`rank_skeletons`, and the register blocks of the refined
    skeletons with their estimates (by ``id`` of the skeleton) for the descent
    (``cache``: the solver run's, see :class:`_Space`)."""
    arr = _arrays(skels, arch)
    on_chip, dram = _estimate_parts(arr, arch)
    values = on_chip + dram
    order = [int(i) for i in np.argsort(values, kind="stable")]
    blocks: dict[Skeleton, tuple[np.ndarray, np.ndarray]] = {}
    if refine and len(arch.levels) == 3:
        head = order[:refine]
        if refine_regf:
            # the on-chip bound assumes registers that hold a PE's whole block;
            # where they cannot, a skeleton it ranks low can be the best
            regf = arr.trips * arch.static_energy + _regf_estimates(arr, arch) + dram
            seen = set(head)
            head += [i for i in (int(j) for j in np.argsort(regf, kind="stable")) if i not in seen][:refine_regf]
        refined, blocks = _refined([skels[i] for i in head], arr.take(head), arch, values[head], cache)
        chosen = set(head)
        order = [head[j] for j in np.argsort(refined, kind="stable")] + [i for i in order if i not in chosen]
    return [skels[i] for i in order], blocks


_ROWS_PER_CALL = 2048  # register blocks per _dram_estimates call (bounds its memory)


def _refined(skels: list[Skeleton], arr: _Arrays, arch: ArchSpec, first: np.ndarray, cache: _Run | None = None):
    """Each skeleton's best register block estimate (:func:`_unit_estimates`),
    and every skeleton's feasible blocks with their estimates. A skeleton
    with nothing left to block keeps its ``first`` estimate."""
    out = np.array(first, dtype=float)
    cache = _Run() if cache is None else cache
    found = []  # (skeleton index, its space, its blocks)
    for i, skel in enumerate(skels):
        sp = _space(skel, arch, "energy", None, cache)
        if not sp.dims:
            continue
        units = _feasible_units(sp)
        if len(units) == 0:
            out[i] = math.inf
            continue
        found.append((i, sp, units))
    blocks: dict[Skeleton, tuple[np.ndarray, np.ndarray]] = {}
    if not found:
        return out, blocks
    on_array = _on_array_costs_many([(sp, units) for _, sp, units in found])
    pending = [(i, sp, units, cost) for (i, sp, units), cost in zip(found, on_array, strict=True)]
    whole = _unit_arrays(arr.take(np.repeat([p[0] for p in pending], [len(p[2]) for p in pending])),
                         np.concatenate([_block_factors(sp.dims, units) for _, sp, units, _ in pending]))
    n = len(whole.rest)
    extra = np.concatenate([_dram_estimates(whole.take(np.arange(a, min(a + _ROWS_PER_CALL, n))), arch, once=True)
                            for a in range(0, n, _ROWS_PER_CALL)])
    a = 0
    for i, _, units, cost in pending:
        value = cost + extra[a:a + len(units)]
        a += len(units)
        out[i] = value.min()
        blocks[skels[i]] = (units, value)
    return out, blocks


def _space(skel: Skeleton, arch: ArchSpec, objective: str, feed: Feed | None,
           cache: _Run | None = None) -> _Space:
    """The blocking search of ``skel`` (classic hardware: :func:`kapla.space.layer.skeletons.classic`)."""
    ev = (cache or _Run()).evaluators(skel, arch)
    dims = tuple(d for d in BLOCK_DIMS if skel.rest[d] > 1)
    return _Space(skel, arch, ev, dims, np.array([skel.rest[d] for d in dims], dtype=np.int64), objective, feed,
                  cache=_Run() if cache is None else cache)


def estimates(skels: list[Skeleton], arch: ArchSpec) -> np.ndarray:
    """:func:`estimate` of every skeleton, vectorised over all of them."""
    on_chip, dram = _estimate_parts(_arrays(skels, arch), arch)
    return on_chip + dram


def _estimate_parts(arr: _Arrays, arch: ArchSpec):
    """The two parts of :func:`estimates`: on chip, and DRAM (0 without a level above the node buffer)."""
    return _on_chip_estimates(arr, arch), (_dram_estimates(arr, arch) if len(arch.levels) >= 3 else 0.0)


def estimate(skel: Skeleton, arch: ArchSpec) -> float:
    """An estimate of a skeleton's energy, from its blocks and a few analytic
    top-level blockings (no blocking search): the on-chip part of
    :func:`_on_chip_estimates` plus the DRAM part of :func:`_dram_estimates`."""
    return float(estimates([skel], arch)[0])


@dataclass
class _Arrays:
    """The numbers of many skeletons of one layer, one row each."""

    layer: Layer
    full: np.ndarray  # (8,) layer extents
    rest: np.ndarray  # (S, 6) what blocking covers, per block dim
    mu: np.ndarray  # (S, 8) the PE mapping's unit block
    s0: np.ndarray  # (S, 8) PE stacks
    in0: np.ndarray  # (S, 8) the mapping's innermost loops
    s1: np.ndarray  # (S, 8) node stacks
    shr: dict  # Kind -> (S,) sharing
    dist: np.ndarray
    nodes: np.ndarray
    pes: np.ndarray
    trips: np.ndarray
    choices: np.ndarray  # (S, 6, len(_SPLITS)) DRAM-level loop counts tried per block dim

    def take(self, idx) -> _Arrays:
        """These rows (repeats allowed)."""
        idx = np.asarray(idx, dtype=np.int64)
        rows = {f: getattr(self, f)[idx] for f in _ROW_FIELDS + ("choices",)}
        return _Arrays(self.layer, self.full, shr={k: v[idx] for k, v in self.shr.items()}, **rows)


_UNIT_ROUNDS = 4  # rounds of moving to a neighbouring register block while the GBUF-level search improves
_UNFIT_PENALTY = 4  # a skeleton no analytic blocking fits ranks behind every one that fits, by this factor
_ROW_FIELDS = ("rest", "mu", "s0", "in0", "s1", "dist", "nodes", "pes", "trips")
_IDX = {d: i for i, d in enumerate(DIMS)}
_SPLITS = (0.0, 1 / 3, 2 / 3, 1.0)  # loop counts tried per dim: 1, about the cube root, its square, all
_BIDX = [_IDX[d] for d in BLOCK_DIMS]


def _arrays(skels: list[Skeleton], arch: ArchSpec) -> _Arrays:
    layer = skels[0].layer
    S, n8 = len(skels), len(DIMS)
    full = np.array([layer_dims(layer, skels[0].batch)[d] for d in DIMS], dtype=np.int64)
    rows: dict = {}
    dist_cache: dict = {}
    cols = []
    for s in skels:
        # by identity: skeletons share their partition and mapping objects (alive
        # in ``skels`` throughout), and hashing them by value costs a tenth of a solve
        key = (id(s.partition), id(s.mapping), s.remaining)
        row = rows.get(key)
        if row is None:
            m = s.mapping
            r = s.rest
            rest_row = [r[d] for d in BLOCK_DIMS]
            mu_row, s0_row, in0_row, s1_row = ([1] * n8 for _ in range(4))
            for d, n in m.unit_dims.items():
                mu_row[_IDX[d]] *= n
            for st in m.stacks:
                s0_row[_IDX[st.dim]] *= st.count
            for lp in m.inner:
                in0_row[_IDX[lp.dim]] *= lp.count
            for st in s.partition.stacks:
                s1_row[_IDX[st.dim]] *= st.count
            grid = s.partition_grid
            if grid not in dist_cache:
                dist_cache[grid] = channel_distance(arch, grid) if arch.node_level is not None else 0.0
            choice = [_split_choices(n) for n in rest_row]
            row = rows[key] = (rest_row, mu_row, s0_row, in0_row, s1_row, dist_cache[grid], math.prod(s1_row),
                               math.prod(s0_row), math.prod(mu_row) * math.prod(in0_row) * math.prod(rest_row),
                               choice)
        cols.append(row)
    rest, mu, s0, in0, s1, dist, nodes, pes, trips, choices = (np.array(c) for c in zip(*cols, strict=True))
    shr = {k: np.ones(S, dtype=np.int64) for k in Kind}
    for i, s in enumerate(skels):
        for k, n in s.shr:
            shr[k][i] = n
    return _Arrays(layer, full, rest.astype(np.int64), mu.astype(np.int64), s0.astype(np.int64),
                   in0.astype(np.int64), s1.astype(np.int64), shr, dist.astype(float), nodes.astype(float),
                   pes.astype(float), trips.astype(float), choices.astype(np.int64))


@functools.lru_cache(maxsize=4096)
def _split_choices(n: int) -> tuple[int, ...]:
    """The DRAM-level loop counts tried for a dim with ``n`` left (:data:`_SPLITS`)."""
    divs = divisors(n)
    return tuple(min(divs, key=lambda v: (abs(math.log(v) - f * math.log(n)), v)) for f in _SPLITS)


def _on_chip_estimates(arr: _Arrays, arch: ArchSpec) -> np.ndarray:
    """Each PE and each node must load the data its block touches at least
    once, and the layer takes at least its compute steps of static energy.
    MAC and register energy are the same for every skeleton."""
    layer = arr.layer
    pe_span = arr.mu * arr.in0
    pe_span[:, _BIDX] *= arr.rest
    node_span = pe_span * arr.s0
    fp_pe = _footprints(pe_span, layer)
    fp_node = _footprints(node_span, layer)
    systolic = arch.levels[0].same_level_transfer
    itcn = np.zeros(len(arr.rest))
    gbuf = np.zeros(len(arr.rest))
    for r in tensor_roles(layer):
        per_node = fp_node[r.kind] * r.copies
        itcn += (per_node if systolic else fp_pe[r.kind] * r.copies * arr.pes) * arr.nodes
        gbuf += per_node * arr.nodes
    return itcn * arch.bus_energy + gbuf * word_energy(arch, 1) + arr.trips * arch.static_energy


def regf_role_energy(role: TensorRole, fp_node: np.ndarray, fp_pe: np.ndarray, reload: np.ndarray,
                     distinct: np.ndarray, nodes: np.ndarray, node_pes: np.ndarray, arch: ArchSpec) -> np.ndarray:
    """On-chip energy of one tensor role below the GBUF, for the register-block
    estimate: its node and PE blocks (``fp_node``, ``fp_pe`` words) fetched
    ``reload`` times (written blocks: read back all but the ``distinct`` first
    times); on a systolic array the GBUF feeds the array's edge and neighbours
    pass the rest on, else every PE is fed over the bus."""
    group = fp_node * reload * role.copies * nodes
    pe = fp_pe * reload * role.copies * node_pes
    if role.written:
        group = 2 * group - fp_node * distinct * role.copies * nodes
        pe = 2 * pe - fp_pe * distinct * role.copies * node_pes
    if arch.levels[0].same_level_transfer:
        bus, regf = group, np.maximum(pe - group, 0)
    else:
        bus, regf = pe, 0.0
    return group * word_energy(arch, 1) + bus * arch.bus_energy + regf * word_energy(arch, 0)


def _regf_estimates(arr: _Arrays, arch: ArchSpec) -> np.ndarray:
    """The cheapest array-bus and node-buffer traffic of a family of analytic
    REGF-level blockings, per skeleton (the :func:`_dram_estimates` family one
    level down): for each tensor ``T`` kept in the registers, the register
    block holds one of a few splits of ``T``'s own dims and the smallest block
    of the others, whose loops run innermost (inside them, the mapping's own
    loops). A tensor is re-fetched by every loop outside its innermost
    relevant one; outputs write back and re-read their partial sums. Blocks
    that overflow the register file are dropped (inf if all do)."""
    layer = arr.layer
    roles = tensor_roles(layer)
    S, nd = arr.rest.shape
    full = arr.full
    cap = shared_capacity_words(arch, 0)
    in_dims = [i for i in range(len(DIMS)) if np.any(arr.in0[:, i] > 1)]
    best = np.full(S, np.inf)
    varying = [j for j in range(nd) if np.any(arr.rest[:, j] > 1)]
    for T in dict.fromkeys(r.kind for r in roles):
        fam = _Family(arr, T, varying)
        row = fam.row
        c0 = [np.minimum(b, full[i]) for i, b in enumerate(fam.blocks(arr.mu))]
        g0 = [np.minimum(c * row(arr.s0[:, i]), full[i]) for i, c in enumerate(c0)]
        fp_c, fp_g = _footprints_of(c0, layer), _footprints_of(g0, layer)
        held = _held_extents(c0, arch)
        fp_held = fp_c if held is c0 else _footprints_of(held, layer)
        words = sum(fp_held[r.kind] * r.copies for r in roles)
        # loops outermost first: T's dims, the others, then the mapping's inner loops
        order_counts = [fam.counts[j] for j in fam.outer + fam.inner] + [row(arr.in0[:, i]) for i in in_dims]
        order_dims = [BLOCK_DIMS[j] for j in fam.outer + fam.inner] + [DIMS[i] for i in in_dims]
        cum = _running_products(order_counts)
        nodes, node_pes = row(arr.nodes), row(arr.nodes * arr.pes)
        energy = np.zeros(fam.shape)
        for r in roles:
            rel = [d in RELEVANT[r.kind] for d in order_dims]
            distinct = _grid_product([c for c, flag in zip(order_counts, rel, strict=True) if flag])
            energy = energy + regf_role_energy(r, fp_g[r.kind], fp_c[r.kind], _grid_reloads(order_counts, cum, rel),
                                               distinct, nodes, node_pes, arch)
        energy = np.where(words <= cap, energy, np.inf)
        best = np.minimum(best, energy.reshape(S, -1).min(axis=1))
    return best


def _held_extents(extents: list, arch: ArchSpec) -> list:
    """The register block's extents a PE holds (:func:`kapla.model.rules.streamed_window`
    under counting ``regf_holds: window``)."""
    if not arch.counting.streams_rows:
        return extents
    held = list(extents)
    for d in STREAMED_DIMS:
        held[_IDX[d]] = np.ones_like(held[_IDX[d]])
    return held


class _Family:
    """The loop counts above the buffer of a family keeping ``T`` resident:
    ``T``'s own varying dims (``outer``) split by each combination of
    :data:`_SPLITS`, the others (``inner``) looping over all that is left.

    The combinations are the axes of a grid ``shape`` = ``(S, K, ..., K)``
    (``K`` = ``len(_SPLITS)``, one axis per outer dim, the last varying
    fastest when flattened: ``itertools.product`` order); every number that
    depends on one dim's count lives on that dim's axis (broadcastable arrays)
    and is only spread over the whole grid when combined with the others."""

    def __init__(self, arr: _Arrays, T: Kind, varying: list[int]) -> None:
        S, nd = arr.rest.shape
        self.outer = [j for j in varying if BLOCK_DIMS[j] in RELEVANT[T]]
        self.inner = [j for j in varying if BLOCK_DIMS[j] not in RELEVANT[T]]
        n, K = len(self.outer), len(_SPLITS)
        self.S, self.nd, self.rest = S, nd, arr.rest
        self.shape = (S,) + (K,) * n
        self._ones = (1,) * n
        self.counts: dict[int, np.ndarray] = {}  # block dim -> its loop count, on the grid
        for a, j in enumerate(self.outer):
            self.counts[j] = arr.choices[:, j, :].reshape((S,) + tuple(K if b == a else 1 for b in range(n)))
        for j in self.inner:
            self.counts[j] = self.row(arr.rest[:, j])

    def row(self, values: np.ndarray) -> np.ndarray:
        """Per-skeleton values ``(S,)`` on the grid."""
        return values.reshape((self.S,) + self._ones)

    def blocks(self, base: np.ndarray) -> list[np.ndarray]:
        """Per loop dim, ``base`` ``(S, 8)`` times what the loops above leave of each block dim."""
        out = [self.row(base[:, i]) for i in range(len(DIMS))]
        for j in range(self.nd):
            left = self.row(self.rest[:, j]) // self.counts.get(j, 1)
            out[_BIDX[j]] = out[_BIDX[j]] * left
        return out


def _running_products(counts: list[np.ndarray]) -> list[np.ndarray]:
    """Products of the loop counts (outermost first) down to each loop."""
    out: list[np.ndarray] = []
    for c in counts:
        out.append(c if not out else out[-1] * c)
    return out


def _grid_product(factors: list) -> np.ndarray:
    """The product of integer factors that broadcast together, the smallest
    multiplied first (integer products are exact in any order)."""
    factors = [f for f in factors if not (isinstance(f, int) and f == 1)]
    if len(factors) > 2:
        factors.sort(key=np.size)
    if not factors:
        return np.ones((), dtype=np.int64)
    out = factors[0]
    for f in factors[1:]:
        out = out * f
    return out


def _grid_reloads(counts: list[np.ndarray], cum: list[np.ndarray], relevant: list[bool]):
    """How often a tensor is fetched through loops of ``counts`` (outermost first;
    ``cum`` their running products): the product of the counts down to its
    innermost looping relevant loop (``relevant``, per loop), 1 if none loops."""
    reload: np.ndarray | int = 1
    found = None  # where a loop further in already decided
    for i in range(len(counts) - 1, -1, -1):
        if not relevant[i]:
            continue
        if all(relevant[:i + 1]):
            # every loop out to here is relevant: where none further in loops,
            # the innermost looping one leaves only loops of count 1 up to here
            return cum[i] if found is None else np.where(found, reload, cum[i])
        looping = counts[i] > 1
        if not looping.any():
            continue
        if looping.all():
            return cum[i] if found is None else np.where(found, reload, cum[i])
        if found is None:
            reload, found = np.where(looping, cum[i], 1), looping
        else:
            looping = looping & ~found
            reload, found = np.where(looping, cum[i], reload), found | looping
    return reload


def _dram_estimates(arr: _Arrays, arch: ArchSpec, once: bool = False) -> np.ndarray:
    """The cheapest DRAM-level traffic of a family of analytic blockings, per skeleton.

    For each tensor ``T`` kept resident, the node buffer holds the smallest
    blocks along the dimensions ``T`` does not index (their loops innermost)
    and ``T``'s own dimensions are split over the DRAM-level loops by 1, about
    the cube root, about its square, or all of what is left. A tensor is
    re-fetched by every loop outside its innermost relevant one; outputs read
    back their partial sums. The energy counts DRAM words, NoC hops to the
    nearest channel and buffer-sharing rotation, and the static energy of
    DRAM-bound time; blockings that overflow the node buffer are dropped.
    ``once``: less what fetching every tensor once would cost.
    """
    layer = arr.layer
    roles = tensor_roles(layer)
    S, nd = arr.rest.shape
    bidx = _BIDX
    full, rest, s1, shr, dist, nodes, trips = (arr.full, arr.rest, arr.s1, arr.shr, arr.dist, arr.nodes,
                                               arr.trips)
    base = arr.mu * arr.s0 * arr.in0  # nominal node block per step of the blocking factors
    cap = shared_capacity_words(arch, 1)
    kinds = [r.kind for r in roles]
    best = np.full(S, np.inf)
    varying = [j for j in range(nd) if np.any(rest[:, j] > 1)]
    for T in dict.fromkeys(kinds):
        fam = _Family(arr, T, varying)
        row = fam.row
        c1 = [np.minimum(b, full[i]) for i, b in enumerate(fam.blocks(base))]
        g1 = [np.minimum(c * row(s1[:, i]), full[i]) for i, c in enumerate(c1)]
        fps_c = _footprints_of(c1, layer)
        fps_g = _footprints_of(g1, layer)
        words: np.ndarray | int = 0  # whole words (exact as integers)
        for r in roles:
            need = fps_c[r.kind]
            if np.any(shr[r.kind] != 1):
                need = -(-need // row(shr[r.kind]))
            words = words + (need * r.copies if r.copies != 1 else need)
        # loop order: T's dims (outer) in BLOCK_DIMS order, then the others
        order = fam.outer + fam.inner
        tt = [fam.counts[j] for j in order]
        cum = _running_products(tt)
        # the sums below are those of the plain expressions, term by term, in
        # place (terms known to be zero everywhere are left out: adding them
        # changes no bit)
        dram: np.ndarray = np.zeros(fam.shape)
        noc: np.ndarray = np.zeros(fam.shape)
        rot: np.ndarray = np.zeros(fam.shape)
        tmp = np.empty(fam.shape)
        with_noc = bool(np.any(dist))
        with_rot = False
        node_n, dist_n = row(nodes), row(dist)
        for r in roles:
            rel = [BLOCK_DIMS[j] in RELEVANT[r.kind] for j in order]
            reload = _grid_reloads(tt, cum, rel)
            group_words = _grid_product([fps_g[r.kind], reload, r.copies])
            if r.written:
                distinct = _grid_product([c for c, flag in zip(tt, rel, strict=True) if flag])
                words_out = 2 * group_words - _grid_product([fps_g[r.kind], distinct, r.copies])
                dram += words_out
                if with_noc:
                    np.multiply(words_out, dist_n, out=tmp)
                    noc += tmp
            else:
                dram += group_words
                k_shr = shr[r.kind]
                shared = bool(np.any(k_shr != 1))
                if not (with_noc or shared):
                    continue
                k_shr = row(k_shr)
                node_words = np.multiply(_grid_product([fps_c[r.kind], reload, r.copies]), node_n, out=tmp)
                if with_noc:
                    noc += node_words / k_shr * dist_n if shared else node_words * dist_n
                if shared:
                    with_rot = True
                    np.multiply(node_words, k_shr - 1, out=tmp)
                    tmp /= k_shr
                    rot += tmp
        energy = dram * word_energy(arch, -1)
        if with_noc or with_rot:
            np.add(noc, rot, out=tmp)
            tmp *= arch.hop_energy
            energy += tmp
        if with_rot:
            np.multiply(rot, 2, out=tmp)
            tmp *= word_energy(arch, 1)
            energy += tmp
        np.divide(dram, arch.dram_bandwidth_words, out=tmp)
        tmp -= row(trips)
        np.maximum(tmp, 0, out=tmp)
        tmp *= arch.static_energy
        energy += tmp
        np.copyto(energy, np.inf, where=words > cap)
        best = np.minimum(best, energy.reshape(S, -1).min(axis=1))
    if once:  # less what fetching every tensor once would cost
        nom = base.copy()
        for j in range(nd):
            nom[:, bidx[j]] *= rest[:, j]
        c1 = np.minimum(nom, full)
        g1 = np.minimum(c1 * s1, full)
        fps_c = _footprints(c1, layer)
        fps_g = _footprints(g1, layer)
        dram = np.zeros(S)
        noc = np.zeros(S)
        rot = np.zeros(S)
        for r in roles:
            dram += fps_g[r.kind] * r.copies
            if r.written:
                noc += fps_g[r.kind] * r.copies * dist
            else:
                node_words = fps_c[r.kind] * r.copies * nodes
                noc += node_words / shr[r.kind] * dist
                rot += node_words * (shr[r.kind] - 1) / shr[r.kind]
        best = best - (dram * word_energy(arch, -1) + (noc + rot) * arch.hop_energy
                       + 2 * rot * word_energy(arch, 1)
                       + np.maximum(dram / arch.dram_bandwidth_words - trips, 0) * arch.static_energy)
    # a skeleton none of whose analytic blockings fits still gets ranked (last)
    finite = np.isfinite(best)
    if not finite.all():
        best = np.where(finite, best, (best[finite].max() if finite.any() else 0.0) * _UNFIT_PENALTY + 1.0)
    return best


def _window(out, kernel, stride, dilation, whole):
    span = (out - 1) * stride + (kernel - 1) * dilation + 1
    return np.minimum(np.minimum(span, out * kernel), whole)


@functools.lru_cache(maxsize=1024)
def _whole_window(out: int, kernel: int, stride: int, dilation: int) -> int:
    from kapla.dataflow.tensors import window

    return window(out, kernel, stride, dilation)


def _footprints(block: np.ndarray, layer: Layer) -> dict[Kind, np.ndarray]:
    return _footprints_of([block[..., _IDX[d]] for d in DIMS], layer)


def _footprints_of(extents, layer: Layer) -> dict[Kind, np.ndarray]:
    """Elements of each kind a block touches, from its extent per loop dim
    (:data:`DIMS` order; integer arrays that broadcast together)."""
    sy, sx = layer.stride
    dy, dx = layer.dilation
    n, g, c, k, y, x, s, r = extents
    rows = _window(y, s, sy, dy, _whole_window(layer.yo, layer.s, sy, dy))
    cols = _window(x, r, sx, dx, _whole_window(layer.xo, layer.r, sx, dx))
    return {Kind.WGT: _grid_product([g, k, c, s, r]), Kind.OFM: _grid_product([n, g, k, y, x]),
            Kind.IFM: _grid_product([n, g, c, rows, cols])}


# ------------------------------------------------------------------ descent


@dataclass
class _Space:
    """One skeleton's blocking search: its dims, remaining counts and order tables."""

    skel: Skeleton
    arch: ArchSpec
    ev: BatchEvaluator
    dims: tuple[str, ...]
    rest: np.ndarray
    objective: str
    feed: Feed | None
    cache: _Run = field(default_factory=lambda: _Run())  # the solver run's (shared by its skeletons)
    evaluated: int = 0

    def __post_init__(self) -> None:
        self.classes = class_table(self.skel.layer, self.dims)
        self.innermost = innermost_table(len(self.dims))

    def costs(self, units, mids, rows, o1, o2):
        self.evaluated += len(rows)
        return self.ev.costs(units, mids, None, o1, o2, self.objective, self.dims, rows, self.feed)


def _descend(skel: Skeleton, arch: ArchSpec, objective: str, feed: Feed | None, n_units: int, known=None,
             cache: _Run | None = None):
    """Bottom-up search of one skeleton: (best blocking or None, its (objective, energy), candidates costed).
    ``known``: its feasible register blocks with their estimates, if the ranking made them."""
    return _descend_all([(skel, known)], arch, objective, feed, n_units, cache)[0]


_JOINT_ROWS = 1 << 17  # candidates per joint GBUF-level pass (bounds its memory)


def _descend_all(items, arch: ArchSpec, objective: str, feed: Feed | None, n_units: int,
                 cache: _Run | None = None) -> list:
    """:func:`_descend` of each ``(skeleton, known)``, the descents run side by
    side: each round's GBUF-level searches of all of them are costed together
    (:func:`_cost_searches`; a search another objective's descent already
    costed in this run is not costed again), every descent taking the steps
    it would take alone."""
    cache = _Run() if cache is None else cache
    out: list = [None] * len(items)
    live = []  # (item index, its space, its descent, what to send it next)
    for k, (skel, known) in enumerate(items):
        sp = _space(skel, arch, objective, feed, cache)
        if not sp.dims:
            out[k] = _no_blocking(sp)
        else:
            live.append((k, sp, _descent(sp, n_units, known), None))
    obj = objective_of(objective)
    while live:
        asks = []  # (item index, space, descent, its GBUF-level search)
        for k, sp, gen, msg in live:
            while True:  # run it to its next search that has candidates, or to its end
                try:
                    units = gen.send(msg)
                except StopIteration as done:
                    out[k] = (*done.value, sp.evaluated)
                    break
                search = _gbuf_search(sp, units)
                if search is not None:
                    asks.append((k, sp, gen, search))
                    break
                msg = (None, _NONE)
        _cost_searches([(sp, search) for _, sp, _, search in asks])
        live = []
        for k, sp, gen, search in asks:
            assert search.costs is not None  # costed just above
            energy, time_ = search.costs
            sp.evaluated += len(search.rows)
            live.append((k, sp, gen, search.pick(sp, energy, obj.of(energy, time_))))
    return out


def _cost_searches(searches: list[tuple[_Space, _Search]]) -> None:
    """Cost the searches not costed yet, in joint passes of about ``_JOINT_ROWS``
    candidates (a search is shared by the descents of every objective, see
    :func:`_gbuf_search`)."""
    todo = list({id(search): (sp, search) for sp, search in searches if search.costs is None}.values())
    for group in _chunks(todo, lambda item: len(item[1].rows)):
        results = joint_energy_time([search.request(sp) for sp, search in group], group[0][0].feed)
        for (_, search), costs in zip(group, results, strict=True):
            search.costs = costs


def _no_blocking(sp: _Space):
    """A skeleton with nothing left to block: its one scheme, if it fits."""
    ev = sp.ev
    res = sp.costs(np.ones((1, 0), np.int64), np.ones((1, 0), np.int64), np.zeros(1, np.int64),
                   np.zeros((1, 0), np.int64), np.zeros((1, 0), np.int64))
    if res.gbuf_words[0] > ev.gbuf_cap or res.regf_words[0] > ev.regf_cap:
        return None, _NONE, sp.evaluated
    return _finish(sp, res)


def _descent(sp: _Space, n_units: int, known=None):
    """The bottom-up search of one skeleton with blocks left, as a generator: it
    yields the register blocks of each GBUF-level search (:func:`_gbuf_search`),
    is sent what the search found (``(_Found or None, (objective, energy))``)
    and returns (best blocking or None, its (objective, energy))."""
    units = known[0] if known is not None else _feasible_units(sp)
    if len(units) == 0:
        return None, _NONE
    chosen = _rank_units(sp, units, n_units, known)
    best = (None, _NONE)
    tried: set[tuple[int, ...]] = set()
    frontier = [tuple(int(v) for v in u) for u in chosen]
    for _ in range(_UNIT_ROUNDS):
        frontier = [u for u in dict.fromkeys(frontier) if u not in tried]
        if not frontier:
            break
        tried.update(frontier)
        found = yield np.array(frontier, dtype=np.int64)
        if better(found[1], best[1]):
            best = found
        else:
            break
        # descent on the register block: one prime factor more or less along each dim
        u = best[0].unit_key
        frontier = _unit_moves(sp, u)
    ones = (1,) * len(sp.dims)
    if best[0] is None and ones not in tried:
        # the smallest register block leaves the node buffer the most room
        best = yield np.array([ones], dtype=np.int64)
    if best[0] is None:
        return None, _NONE
    return best[0].blocking, best[1]


_NONE = (math.inf, math.inf)  # the (objective, energy) of no scheme


@dataclass
class _Found:
    blocking: Blocking
    unit_key: tuple[int, ...]


def _finish(sp: _Space, res):
    i = res.best()
    value = float(res.objective[i])
    if not math.isfinite(value):
        return None, _NONE, sp.evaluated
    return res.blocking(i), (value, float(res.energy[i])), sp.evaluated


def _feasible_units(sp: _Space) -> np.ndarray:
    """Every register block (unit factors) that fits the register file, grown dim by dim
    (once per mapping unit and remainder in a solver run: sharing does not change them)."""
    return memoised(sp.cache.searches, ("units", sp.dims, sp.rest.tobytes(), sp.ev.mu.tobytes()), _grown_units, sp)


def _grown_units(sp: _Space) -> np.ndarray:
    ev = sp.ev
    units = np.ones((1, len(sp.dims)), dtype=np.int64)
    for j, n in enumerate(sp.rest):
        divs = np.array(divisors(int(n)), dtype=np.int64)
        grown = np.repeat(units, len(divs), axis=0)
        grown[:, j] = np.tile(divs, len(units))
        fits = ev.buffer_words(ev.unit_tile(sp.dims, grown), 0) <= ev.regf_cap
        units = grown[fits]
    return units


def _unit_costs(sp: _Space, units: np.ndarray, total: bool = False) -> np.ndarray:
    """Each register block's array-bus and register energy (``total``: its
    whole energy) with everything else in the node buffer, under the best
    choice of innermost REGF-level loop."""
    return _unit_costs_many([(sp, units)], total)[0]


def _chunks(items: list, size) -> list[list]:
    """``items`` in consecutive groups of about ``_JOINT_ROWS`` rows (``size(item)``)."""
    out: list[list] = []
    group: list = []
    rows = 0
    for item in items:
        n = size(item)
        if group and rows + n > _JOINT_ROWS:
            out.append(group)
            group, rows = [], 0
        group.append(item)
        rows += n
    if group:
        out.append(group)
    return out


def _unit_costs_many(items: list[tuple[_Space, np.ndarray]], total: bool = False) -> list[np.ndarray]:
    """:func:`_unit_costs` of each ``(space, units)`` (skeletons of one layer), costed jointly."""
    out = []
    for group in _chunks(items, lambda item: len(item[1]) * len(item[0].dims)):
        requests = []
        for sp, units in group:
            nd = len(sp.dims)
            mids = sp.rest[None, :] // units
            F = len(units)
            rows = np.repeat(np.arange(F), nd)
            o1 = np.tile(_innermost_each(nd), (F, 1))
            o2 = np.tile(np.arange(nd), (len(rows), 1))
            requests.append((sp.ev, sp.dims, units, mids, np.ones_like(units), rows, o1, o2))
            sp.evaluated += len(rows)
        if total:  # only the energy: no validity, no access counts
            lows = [energy for energy, _ in joint_scores(requests, "energy", None, check=False)]
        else:
            lows = [res.accesses[ITCN] * sp.arch.bus_energy
                    + res.accesses[sp.arch.levels[0].name] * word_energy(sp.arch, 0)
                    for (sp, _), res in zip(group, joint_costs(requests, "energy", None), strict=True)]
        for (sp, units), low in zip(group, lows, strict=True):
            out.append(low.reshape(len(units), len(sp.dims)).min(axis=1))
    return out


@functools.lru_cache(maxsize=16)
def _innermost_each(nd: int) -> np.ndarray:
    """Orders of ``nd`` columns, one with each column innermost (the others in order)."""
    out = np.array([[j for j in range(nd) if j != i] + [i] for i in range(nd)], dtype=np.int64).reshape(nd, nd)
    out.flags.writeable = False  # shared by every caller
    return out


def _rank_units(sp: _Space, units: np.ndarray, n: int, known=None) -> np.ndarray:
    """REGF level: the ``n`` most promising register blocks (:func:`_unit_estimates`;
    ``known``: these blocks with their estimates, from the ranking)."""
    if len(units) <= n:
        return units
    if known is not None:
        units, value = known
    else:
        # once per skeleton in a solver run: the descents of every objective start here
        key = ("unit estimates", sp.skel, units.tobytes())
        value = memoised(sp.cache.searches, key, _unit_estimates, sp, units)
    return units[np.argsort(value, kind="stable")[:n]]


def _unit_estimates(sp: _Space, units: np.ndarray) -> np.ndarray:
    """Each register block's whole energy with everything else in the node
    buffer (:func:`_unit_costs`), plus what the analytic DRAM-level blockings
    of :func:`_dram_estimates` must re-fetch once the block is fixed.

    The register block sets the smallest block the node buffer can hold (a
    block stacked over the PE array is that many times larger), so a block
    that is cheap on the array can force the DRAM level to re-fetch."""
    value = _on_array_costs(sp, units)
    if len(sp.arch.levels) < 3:
        return value
    rows = _arrays([sp.skel], sp.arch).take(np.zeros(len(units), dtype=np.int64))
    return value + _dram_estimates(_unit_arrays(rows, _block_factors(sp.dims, units)), sp.arch, once=True)


def _on_array_costs(sp: _Space, units: np.ndarray) -> np.ndarray:
    """:func:`_unit_costs` (whole energy) of each register block, inf for a
    block that cannot be covered (:func:`_coverable`)."""
    return _on_array_costs_many([(sp, units)])[0]


def _on_array_costs_many(items: list[tuple[_Space, np.ndarray]]) -> list[np.ndarray]:
    """:func:`_on_array_costs` of each ``(space, units)`` (skeletons of one layer), costed jointly."""
    return [np.where(ok, cost, np.inf)
            for ok, cost in zip(_coverable_many(items), _unit_costs_many(items, total=True), strict=True)]


def _coverable(sp: _Space, units: np.ndarray) -> np.ndarray:
    """Register blocks that leave no wholly idle iteration with the rest of
    each dim either all at the REGF level or all at the DRAM level (a block
    failing both is rarely rescued by a split in between, and only costs
    the descent a wasted search)."""
    return _coverable_many([(sp, units)])[0]


def _coverable_many(items: list[tuple[_Space, np.ndarray]]) -> list[np.ndarray]:
    """:func:`_coverable` of each ``(space, units)``, checked in one pass; skeletons
    that differ only in their sharing (which coverage does not see) are checked once."""
    out: list = [None] * len(items)
    todo: dict = {}  # key -> (first space, units, indices of items)
    for i, (sp, units) in enumerate(items):
        ev = sp.ev
        key = ("coverable", ev.stacks0, ev.stacks1, ev.inner, ev.mu.tobytes(), sp.dims, sp.rest.tobytes(),
               units.tobytes())
        hit = sp.cache.searches.get(key)
        if hit is not None:
            out[i] = hit
        else:
            todo.setdefault(key, (sp, units, []))[2].append(i)
    if todo:
        checks = []
        for sp, units, _ in todo.values():
            ev = sp.ev
            u = ev.full_factors(sp.dims, units)
            left = ev.full_factors(sp.dims, sp.rest[None, :] // units)
            ones = np.ones_like(u)
            # every dim's rest either all at the REGF level or all at the DRAM level
            checks.append((ev, np.concatenate([u, u]), np.concatenate([ones, left]), np.concatenate([left, ones]),
                           ev.dim_cols(sp.dims)))
        ok = joint_coverage(checks)
        at = 0
        for key, (sp, units, where) in todo.items():
            n = len(units)
            res = ok[at:at + n] | ok[at + n:at + 2 * n]
            at += 2 * n
            sp.cache.searches[key] = res
            for i in where:
                out[i] = res
    return out


def _block_factors(dims: tuple[str, ...], units: np.ndarray) -> np.ndarray:
    """Register blocks over ``dims`` as factors over every block dim ``(F, 6)``."""
    out = np.ones((len(units), len(BLOCK_DIMS)), dtype=np.int64)
    for j, d in enumerate(dims):
        out[:, BLOCK_DIMS.index(d)] = units[:, j]
    return out


def _unit_arrays(rows: _Arrays, blocks: np.ndarray) -> _Arrays:
    """Skeleton rows (one per register block) with each register block
    (``blocks``, over every block dim) folded into the mapping's unit."""
    rest = rows.rest // blocks
    mu = rows.mu.copy()
    mu[:, _BIDX] *= blocks
    values, where = np.unique(rest, return_inverse=True)
    table = np.array([_split_choices(int(n)) for n in values], dtype=np.int64)
    fields = {f: getattr(rows, f) for f in _ROW_FIELDS}
    fields.update(rest=rest, mu=mu)
    return _Arrays(rows.layer, rows.full, shr=rows.shr, choices=table[where.reshape(rest.shape)], **fields)


def _unit_moves(sp: _Space, u: tuple[int, ...]) -> list[tuple[int, ...]]:
    out = []
    ev = sp.ev
    for j, n in enumerate(sp.rest):
        for p in prime_factors(int(n)):
            for new in (u[j] * p, u[j] // p if u[j] % p == 0 else 0):
                if new < 1 or n % new:
                    continue
                cand = list(u)
                cand[j] = new
                out.append(tuple(cand))
    if not out:
        return out
    arr = np.array(out, dtype=np.int64)
    fits = ev.buffer_words(ev.unit_tile(sp.dims, arr), 0) <= ev.regf_cap
    return [out[i] for i in np.flatnonzero(fits)]


@dataclass
class _Search:
    """One GBUF-level search of a skeleton, ready to cost: distinct factor
    combinations (register blocks ``units``, REGF-level counts ``mids``), each
    candidate's combination and its orders at both levels."""

    units: np.ndarray
    mids: np.ndarray
    tops: np.ndarray
    rows: np.ndarray
    o1: np.ndarray
    o2: np.ndarray
    #: each candidate's (energy, time), inf where invalid, once costed (the same for every objective)
    costs: tuple[np.ndarray, np.ndarray] | None = None

    def request(self, sp: _Space):
        """The :func:`kapla.space.layer.batch.joint_scores` request of this search."""
        return (sp.ev, sp.dims, self.units, self.mids, self.tops, self.rows, self.o1, self.o2)

    def pick(self, sp: _Space, energy: np.ndarray, value: np.ndarray):
        """The search's winner from its candidates' energies and objectives
        (:func:`kapla.space.layer.batch.joint_scores`): (_Found or None, (objective, energy)),
        ties going to the lower energy, then to the first."""
        i = objective_of(sp.objective).argbest(value, energy)
        if not math.isfinite(value[i]):
            return None, _NONE
        f = self.rows[i]
        blocking = blocking_of(sp.dims, self.units[f], self.mids[f], self.tops[f], self.o1[i], self.o2[i])
        return _Found(blocking, tuple(int(v) for v in self.units[f])), (float(value[i]), float(energy[i]))


@functools.lru_cache(maxsize=4096)
def _splits(left: tuple[int, ...]) -> np.ndarray:
    """Every REGF-level count per dim dividing ``left`` (itertools.product order)."""
    out = np.array(list(itertools.product(*(divisors(v) for v in left))), dtype=np.int64).reshape(-1, len(left))
    out.flags.writeable = False
    return out


def _gbuf_search(sp: _Space, units: np.ndarray) -> _Search | None:
    """GBUF level: for each register block, every REGF/DRAM split of the
    remaining factors that fits the node buffer, under every distinct loop
    order of both levels (None if no split fits), in the order of register
    blocks, splits, REGF-level order, GBUF-level order.

    Built (and costed) once per skeleton and register blocks in a solver run:
    the descents of several objectives often ask for the same search."""
    key = ("gbuf", sp.skel, units.tobytes())
    return memoised(sp.cache.searches, key, _new_gbuf_search, sp, units)


def _new_gbuf_search(sp: _Space, units: np.ndarray) -> _Search | None:
    ev = sp.ev
    parts = [_splits(tuple(int(v) for v in sp.rest // u)) for u in units]
    A = np.concatenate(parts)
    U = np.repeat(units, [len(p) for p in parts], axis=0)
    fits = ev.buffer_words(ev.node_tile(sp.dims, U, A), 1) <= ev.gbuf_cap
    U, A = U[fits], A[fits]
    if len(U) == 0:
        return None
    tops = sp.rest[None, :] // (U * A)
    m1, m2 = looping_mask(A), looping_mask(tops)
    n1, n2 = order_counts(sp.classes, m1), order_counts(sp.classes, m2)
    first = sp.classes
    if int((n1 * n2).sum()) > MAX_JOINT_CANDIDATES:
        # too many: REGF-level orders by one choice of innermost loop only
        first = sp.innermost
        n1 = order_counts(first, m1)
    rows, (o1, o2) = order_product((first, sp.classes), (m1, m2), (n1, n2))
    return _Search(U, A, tops, rows, o1, o2)


