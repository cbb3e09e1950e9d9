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
     levels (:func:`kapla.solve.space.distinct_orders`), in numpy batches
     (:meth:`kapla.solve.batch.BatchEvaluator.costs`, the evaluator's numbers);
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
from dataclasses import dataclass

import numpy as np

from kapla.arch.spec import ArchSpec
from kapla.dataflow.mapping import pe_mappings
from kapla.dataflow.tensors import DIMS, RELEVANT, Kind, layer_dims, tensor_roles
from kapla.model.hardware import channel_distance
from kapla.model.evaluate import FROM_DRAM, ITCN, Feed, evaluate
from kapla.solve.base import IntraResult, check_objective, no_scheme
from kapla.solve.batch import BatchEvaluator, shared_evaluator
from kapla.solve.space import (
    BLOCK_DIMS,
    Blocking,
    Skeleton,
    build_scheme,
    distinct_orders,
    divisors,
    skeletons,
)
from kapla.workload.layer import Layer

_MAX_CANDIDATES = 60_000  # per GBUF-level search; beyond it the REGF orders are thinned


class KaplaIntraSolver:
    """KAPLA's fast intra-layer solver: skeletons ranked by an estimate, the
    best ``top`` of them searched level by level, ``units`` register blocks
    per skeleton carried to the GBUF level."""

    name = "kapla"

    def __init__(self, top: int = 4, units: int = 3, refine: int = 30, refine_regf: int = 12) -> None:
        self.top = top
        self.units = units
        self.refine = refine
        self.refine_regf = refine_regf

    def solve(self, layer: Layer, batch: int, arch: ArchSpec, objective: str = "energy",
              ifm_name: str | None = None, feed: Feed | None = None) -> IntraResult:
        check_objective(objective)
        start = time.perf_counter()
        feed = None if feed is None or feed == FROM_DRAM else feed
        skels = _skeletons(layer, batch, arch)
        if not skels:
            raise no_scheme(layer, batch, arch)
        ranked, blocks = _rank(skels, arch, self.refine, self.refine_regf)
        evaluated = 0
        found: list[tuple[tuple[float, float], int, Skeleton, Blocking]] = []
        for i, skel in enumerate(ranked[: self.top]):
            res = _descend(skel, arch, objective, feed, self.units, blocks.get(id(skel)))
            evaluated += res[2]
            if res[0] is not None:
                found.append((res[1], i, skel, res[0]))
        if not found:
            # the buffers or a feed can rule out the best-ranked skeletons; look further down
            for i, skel in enumerate(ranked[self.top:], self.top):
                res = _descend(skel, arch, objective, feed, self.units)
                evaluated += res[2]
                if res[0] is not None:
                    found.append((res[1], i, skel, res[0]))
                    break
        found.sort(key=lambda item: item[:2])
        for _, _, skel, blocking in found:
            scheme = build_scheme(skel, blocking, ifm_name)
            cost = evaluate(scheme, arch, feed or FROM_DRAM)  # the independent check, on the winner
            evaluated += 1
            if cost.valid:
                return IntraResult(scheme, cost, evaluated, time.perf_counter() - start)
        raise no_scheme(layer, batch, arch)


# ------------------------------------------------------------------ skeletons


def _skeletons(layer: Layer, batch: int, arch: ArchSpec) -> list[Skeleton]:
    """The skeletons of :func:`kapla.solve.space.skeletons`, in its order."""
    return list(skeletons(layer, batch, arch))


def rank_skeletons(skels: list[Skeleton], arch: ArchSpec, refine: int = 0, refine_regf: int = 0) -> list[Skeleton]:
    """The skeletons, most promising first: by :func:`estimates`; the first
    ``refine`` of them, and the first ``refine_regf`` others by the
    register-aware estimate (:func:`_regf_estimates` in place of the on-chip
    bound), re-ranked together by :func:`_refined` (ties keep their order)."""
    return _rank(skels, arch, refine, refine_regf)[0]


def _rank(skels: list[Skeleton], arch: ArchSpec, refine: int, refine_regf: int):
    """:func:`rank_skeletons`, and the register blocks of the refined
    skeletons with their estimates (by ``id`` of the skeleton) for the descent."""
    arr = _arrays(skels, arch)
    on_chip, dram = _estimate_parts(arr, arch)
    values = on_chip + dram
    order = [int(i) for i in np.argsort(values, kind="stable")]
    blocks: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if refine and len(arch.levels) == 3:
        head = order[:refine]
        if refine_regf:
            # the on-chip bound assumes registers that hold a PE's whole block;
            # where they cannot, a skeleton it ranks low can be the best
            regf = arr.trips * arch.static_energy + _regf_estimates(arr, arch) + dram
            seen = set(head)
            head += [i for i in (int(j) for j in np.argsort(regf, kind="stable")) if i not in seen][:refine_regf]
        better, blocks = _refined([skels[i] for i in head], arr.take(head), arch, values[head])
        chosen = set(head)
        order = [head[j] for j in np.argsort(better, kind="stable")] + [i for i in order if i not in chosen]
    return [skels[i] for i in order], blocks


_ROWS_PER_CALL = 2048  # register blocks per _dram_estimates call (bounds its memory)


def _refined(skels: list[Skeleton], arr: _Arrays, arch: ArchSpec, first: np.ndarray):
    """Each skeleton's best register block estimate (:func:`_unit_estimates`),
    and every skeleton's feasible blocks with their estimates. A skeleton
    with nothing left to block keeps its ``first`` estimate."""
    out = np.array(first, dtype=float)
    pending = []  # (skeleton index, its space, its blocks, their on-array cost)
    for i, skel in enumerate(skels):
        sp = _space(skel, arch, "energy", None)
        if sp is None or not sp.dims:
            continue
        units = _feasible_units(sp)
        if len(units) == 0:
            out[i] = math.inf
            continue
        pending.append((i, sp, units, _on_array_costs(sp, units)))
    blocks: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if not pending:
        return out, blocks
    whole = _unit_arrays(arr.take(np.repeat([p[0] for p in pending], [len(p[2]) for p in pending])),
                         np.concatenate([_block_factors(sp.dims, units) for _, sp, units, _ in pending]))
    n = len(whole.rest)
    extra = np.concatenate([_dram_estimates(whole.take(np.arange(a, min(a + _ROWS_PER_CALL, n))), arch, once=True)
                            for a in range(0, n, _ROWS_PER_CALL)])
    a = 0
    for i, sp, units, cost in pending:
        value = cost + extra[a:a + len(units)]
        a += len(units)
        out[i] = value.min()
        blocks[id(skels[i])] = (units, value)
    return out, blocks


def _space(skel: Skeleton, arch: ArchSpec, objective: str, feed: Feed | None) -> _Space | None:
    """The blocking search of ``skel``, or None where the batch evaluator does not model the hardware."""
    try:
        ev = shared_evaluator(skel, arch)
    except ValueError:
        return None
    dims = tuple(d for d in BLOCK_DIMS if skel.rest[d] > 1)
    return _Space(skel, arch, ev, dims, np.array([skel.rest[d] for d in dims], dtype=np.int64), objective, feed)


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
        key = (id(s.partition), id(s.mapping), s.remaining)
        row = rows.get(key)
        if row is None:
            m = s.mapping
            r = s.rest
            rest = [r[d] for d in BLOCK_DIMS]
            mu, s0, in0, s1 = ([1] * n8 for _ in range(4))
            for d, n in m.unit_dims.items():
                mu[_IDX[d]] *= n
            for st in m.stacks:
                s0[_IDX[st.dim]] *= st.count
            for lp in m.inner:
                in0[_IDX[lp.dim]] *= lp.count
            for st in s.partition.stacks:
                s1[_IDX[st.dim]] *= st.count
            grid = s.partition_grid
            if grid not in dist_cache:
                dist_cache[grid] = channel_distance(arch, grid) if arch.node_level is not None else 0.0
            choice = [_split_choices(n) for n in rest]
            row = rows[key] = (rest, mu, s0, in0, s1, dist_cache[grid], math.prod(s1), math.prod(s0),
                               math.prod(mu) * math.prod(in0) * math.prod(rest), choice)
        cols.append(row)
    rest, mu, s0, in0, s1, dist, nodes, pes, trips, choices = (np.array(c) for c in zip(*cols))
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
    return itcn * arch.bus_energy + gbuf * arch.levels[1].access_energy + arr.trips * arch.static_energy


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
    full, rest = arr.full, arr.rest
    cap = arch.levels[0].capacity // arch.word_bytes
    systolic = arch.levels[0].same_level_transfer
    e_gbuf, e_bus, e_regf = arch.levels[1].access_energy, arch.bus_energy, arch.levels[0].access_energy
    in_dims = [i for i in range(len(DIMS)) if np.any(arr.in0[:, i] > 1)]
    best = np.full(S, np.inf)
    varying = [j for j in range(nd) if np.any(rest[:, j] > 1)]
    for T in dict.fromkeys(r.kind for r in roles):
        outer, inner, t = _family_counts(arr, T, varying)
        C = t.shape[1]
        block = np.repeat(arr.mu[:, None, :], C, axis=1)
        for j in range(nd):
            block[:, :, _BIDX[j]] *= rest[:, None, j] // t[:, :, j]
        c0 = np.minimum(block, full)
        g0 = np.minimum(c0 * arr.s0[:, None, :], full)
        fp_c, fp_g = _footprints(c0, layer), _footprints(g0, layer)
        words = sum(fp_c[r.kind] * r.copies for r in roles)
        # loops outermost first: T's dims, the others, then the mapping's inner loops
        order_counts = [t[:, :, j] for j in outer + inner] + [np.broadcast_to(arr.in0[:, None, i], (S, C))
                                                             for i in in_dims]
        order_dims = [BLOCK_DIMS[j] for j in outer + inner] + [DIMS[i] for i in in_dims]
        tt = np.stack(order_counts, axis=2) if order_counts else np.ones((S, C, 0), dtype=np.int64)
        cum = np.cumprod(tt, axis=2)
        gbuf = np.zeros((S, C))
        bus = np.zeros((S, C))
        regf = np.zeros((S, C))
        for r in roles:
            rel = np.array([d in RELEVANT[r.kind] for d in order_dims], dtype=bool)
            reload = _reloads(tt, cum, rel)
            group = fp_g[r.kind] * reload * r.copies * arr.nodes[:, None]
            pe = fp_c[r.kind] * reload * r.copies * (arr.nodes * arr.pes)[:, None]
            if r.written:
                distinct = np.prod(np.where(rel[None, None, :], tt, 1), axis=2)
                group = 2 * group - fp_g[r.kind] * distinct * r.copies * arr.nodes[:, None]
                pe = 2 * pe - fp_c[r.kind] * distinct * r.copies * (arr.nodes * arr.pes)[:, None]
            gbuf += group
            if systolic:
                bus += group
                regf += np.maximum(pe - group, 0)
            else:
                bus += pe
        energy = gbuf * e_gbuf + bus * e_bus + regf * e_regf
        energy = np.where(words <= cap, energy, np.inf)
        best = np.minimum(best, energy.min(axis=1))
    return best


def _family_counts(arr: _Arrays, T: Kind, varying: list[int]):
    """The loop counts above the buffer of a family keeping ``T`` resident:
    ``T``'s own varying dims (``outer``) split by each combination of
    :data:`_SPLITS`, the others (``inner``) looping over all that is left;
    ``t`` is ``(S, C, 6)`` over the block dims, one column of ``C`` per combination."""
    S, nd = arr.rest.shape
    outer = [j for j in varying if BLOCK_DIMS[j] in RELEVANT[T]]
    inner = [j for j in varying if BLOCK_DIMS[j] not in RELEVANT[T]]
    combos = list(itertools.product(range(len(_SPLITS)), repeat=len(outer)))
    combos = np.array(combos, dtype=np.int64).reshape(len(combos), len(outer))
    t = np.ones((S, len(combos), nd), dtype=np.int64)
    for jj, j in enumerate(outer):
        t[:, :, j] = arr.choices[:, j, :][:, combos[:, jj]]
    for j in inner:
        t[:, :, j] = arr.rest[:, None, j]
    return outer, inner, t


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
    cap = arch.levels[1].capacity // arch.word_bytes
    kinds = [r.kind for r in roles]
    best = np.full(S, np.inf)
    varying = [j for j in range(nd) if np.any(rest[:, j] > 1)]
    for T in dict.fromkeys(kinds):
        outer, inner, t = _family_counts(arr, T, varying)
        C = t.shape[1]
        m_factor = np.ones((S, C, len(DIMS)), dtype=np.int64)
        for j in range(nd):
            m_factor[:, :, bidx[j]] = rest[:, None, j] // t[:, :, j]
        nom = base[:, None, :] * m_factor
        c1 = np.minimum(nom, full)
        g1 = np.minimum(c1 * s1[:, None, :], full)
        fps_c = _footprints(c1, layer)
        fps_g = _footprints(g1, layer)
        words = np.zeros((S, C))
        for r in roles:
            words += -(-fps_c[r.kind] // shr[r.kind][:, None]) * r.copies
        # loop order: T's dims (outer) in BLOCK_DIMS order, then the others
        order = outer + inner
        tt = t[:, :, order]  # (S, C, L)
        cum = np.cumprod(tt, axis=2)
        dram = np.zeros((S, C))
        noc = np.zeros((S, C))
        rot = np.zeros((S, C))
        for r in roles:
            rel = np.array([BLOCK_DIMS[j] in RELEVANT[r.kind] for j in order], dtype=bool)
            reload = _reloads(tt, cum, rel)
            distinct = np.prod(np.where(rel[None, None, :], tt, 1), axis=2)
            group_words = fps_g[r.kind] * reload * r.copies
            node_words = fps_c[r.kind] * reload * r.copies * nodes[:, None]
            if r.written:
                first = fps_g[r.kind] * distinct * r.copies
                dram += 2 * group_words - first
                noc += (2 * group_words - first) * dist[:, None]
            else:
                k_shr = shr[r.kind][:, None]
                dram += group_words
                noc += node_words / k_shr * dist[:, None]
                rot += node_words * (k_shr - 1) / k_shr
        energy = (dram * arch.levels[-1].access_energy + (noc + rot) * arch.hop_energy
                  + 2 * rot * arch.levels[1].access_energy
                  + np.maximum(dram / arch.dram_bandwidth_words - trips[:, None], 0) * arch.static_energy)
        energy = np.where(words <= cap, energy, np.inf)
        best = np.minimum(best, energy.min(axis=1))
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
        best = best - (dram * arch.levels[-1].access_energy + (noc + rot) * arch.hop_energy
                       + 2 * rot * arch.levels[1].access_energy
                       + np.maximum(dram / arch.dram_bandwidth_words - trips, 0) * arch.static_energy)
    # a skeleton none of whose analytic blockings fits still gets ranked (last)
    finite = np.isfinite(best)
    if not finite.all():
        best = np.where(finite, best, (best[finite].max() if finite.any() else 0.0) * 4 + 1.0)
    return best


def _reloads(counts: np.ndarray, cum: np.ndarray, relevant: np.ndarray) -> np.ndarray:
    """How often a tensor is fetched through loops of ``counts`` ``(S, C, L)``
    (outermost first; ``cum`` their running products): the product of the
    counts down to its innermost looping relevant loop (``relevant``, per loop)."""
    S, C, L = counts.shape
    if not L:
        return np.ones((S, C), dtype=np.int64)
    looping = (counts > 1) & relevant[None, None, :]
    pos = np.where(looping, np.arange(L)[None, None, :], -1).max(axis=2)
    return np.where(pos >= 0, np.take_along_axis(cum, np.maximum(pos, 0)[:, :, None], axis=2)[:, :, 0], 1)


def _window(out, kernel, stride, dilation, whole):
    span = (out - 1) * stride + (kernel - 1) * dilation + 1
    return np.minimum(np.minimum(span, out * kernel), whole)


def _footprints(block: np.ndarray, layer: Layer) -> dict[Kind, np.ndarray]:
    from kapla.dataflow.tensors import window

    sy, sx = layer.stride
    dy, dx = layer.dilation
    n, g, c, k, y, x, s, r = (block[..., _IDX[d]] for d in "NGCKYXSR")
    rows = _window(y, s, sy, dy, window(layer.yo, layer.s, sy, dy))
    cols = _window(x, r, sx, dx, window(layer.xo, layer.r, sx, dx))
    return {Kind.WGT: g * k * c * s * r, Kind.OFM: n * g * k * y * x, Kind.IFM: n * g * c * rows * cols}


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
    evaluated: int = 0

    def __post_init__(self) -> None:
        kinds = tuple(sorted({r.kind for r in tensor_roles(self.skel.layer)}))
        self._orders = _ORDERS.setdefault((kinds, self.dims), {})

    def orders(self, counts: np.ndarray) -> np.ndarray:
        """Every distinct loop order of the looping dims, as full column permutations
        (dims of count 1 outermost)."""
        looping = counts > 1
        key = looping.tobytes()
        perms = self._orders.get(key)
        if perms is None:
            on = tuple(d for d, flag in zip(self.dims, looping) if flag)
            still = [j for j, flag in enumerate(looping) if not flag]
            col = {d: j for j, d in enumerate(self.dims)}
            perms = np.array([still + [col[d] for d in o] for o in distinct_orders(self.skel.layer, on)],
                             dtype=np.int64).reshape(-1, len(self.dims))
            self._orders[key] = perms
        return perms

    def costs(self, units, mids, rows, o1, o2):
        self.evaluated += len(rows)
        return self.ev.costs(units, mids, None, o1, o2, self.objective, self.dims, rows, self.feed)


_ORDERS: dict = {}


def _descend(skel: Skeleton, arch: ArchSpec, objective: str, feed: Feed | None, n_units: int, known=None):
    """Bottom-up search of one skeleton: (best blocking or None, its (objective, energy), candidates costed).
    ``known``: its feasible register blocks with their estimates, if the ranking made them."""
    sp = _space(skel, arch, objective, feed)
    if sp is None:
        return _descend_scalar(skel, arch, objective, feed)
    ev, dims = sp.ev, sp.dims
    if not dims:
        res = sp.costs(np.ones((1, 0), np.int64), np.ones((1, 0), np.int64), np.zeros(1, np.int64),
                       np.zeros((1, 0), np.int64), np.zeros((1, 0), np.int64))
        if res.gbuf_words[0] > ev.gbuf_cap or res.regf_words[0] > ev.regf_cap:
            return None, _NONE, sp.evaluated
        return _finish(sp, res)
    units = known[0] if known is not None else _feasible_units(sp)
    if len(units) == 0:
        return None, _NONE, sp.evaluated
    chosen = _rank_units(sp, units, n_units, known)
    best = (None, _NONE)
    tried: set[tuple[int, ...]] = set()
    frontier = [tuple(int(v) for v in u) for u in chosen]
    for _ in range(4):
        frontier = [u for u in dict.fromkeys(frontier) if u not in tried]
        if not frontier:
            break
        tried.update(frontier)
        found = _gbuf_level(sp, np.array(frontier, dtype=np.int64))
        if _better(found[1], best[1]):
            best = found
        else:
            break
        # descent on the register block: one prime factor more or less along each dim
        u = best[0].unit_key
        frontier = _unit_moves(sp, u)
    ones = (1,) * len(dims)
    if best[0] is None and ones not in tried:
        # the smallest register block leaves the node buffer the most room
        best = _gbuf_level(sp, np.array([ones], dtype=np.int64))
    if best[0] is None:
        return None, _NONE, sp.evaluated
    return best[0].blocking, best[1], sp.evaluated


_NONE = (math.inf, math.inf)  # the (objective, energy) of no scheme


def _better(new: tuple[float, float], old: tuple[float, float]) -> bool:
    """``new`` (objective, energy) beats ``old``: a lower objective, or the same
    with less energy (latency ties), beyond float noise."""
    return new[0] < old[0] * (1 - 1e-12) or (new[0] <= old[0] and new[1] < old[1] * (1 - 1e-12))


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
    """Every register block (unit factors) that fits the register file, grown dim by dim."""
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
    arch = sp.arch
    nd = len(sp.dims)
    mids = sp.rest[None, :] // units
    F = len(units)
    rows = np.repeat(np.arange(F), nd)
    o1 = np.array([[j for j in range(nd) if j != i] + [i] for i in range(nd)] * F, dtype=np.int64)
    o2 = np.tile(np.arange(nd), (len(rows), 1))
    res = sp.ev.costs(units, mids, None, o1, o2, "energy", sp.dims, rows)
    sp.evaluated += len(rows)
    if total:
        low = res.energy
    else:
        low = res.accesses[ITCN] * arch.bus_energy + res.accesses[arch.levels[0].name] * arch.levels[0].access_energy
    return low.reshape(F, nd).min(axis=1)


def _rank_units(sp: _Space, units: np.ndarray, n: int, known=None) -> np.ndarray:
    """REGF level: the ``n`` most promising register blocks (:func:`_unit_estimates`;
    ``known``: these blocks with their estimates, from the ranking)."""
    if len(units) <= n:
        return units
    if known is not None:
        units, value = known
    else:
        value = _unit_estimates(sp, units)
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
    return np.where(_coverable(sp, units), _unit_costs(sp, units, total=True), np.inf)


def _coverable(sp: _Space, units: np.ndarray) -> np.ndarray:
    """Register blocks that leave no wholly idle iteration with the rest of
    each dim either all at the REGF level or all at the DRAM level (a block
    failing both is rarely rescued by a split in between, and only costs
    the descent a wasted search)."""
    ev = sp.ev
    u = ev.full_factors(sp.dims, units)
    left = ev.full_factors(sp.dims, sp.rest[None, :] // units)
    ones = np.ones_like(u)
    return ev.coverage_ok(u, ones, left) | ev.coverage_ok(u, left, ones)


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
        for p in _primes(int(n)):
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


def _gbuf_level(sp: _Space, units: np.ndarray):
    """GBUF level: for each register block, every REGF/DRAM split of the
    remaining factors that fits the node buffer, under every distinct loop
    order of both levels."""
    ev = sp.ev
    nd = len(sp.dims)
    all_u, all_m = [], []
    for u in units:
        left = sp.rest // u
        mids = np.array(list(itertools.product(*(divisors(int(v)) for v in left))), dtype=np.int64).reshape(-1, nd)
        uu = np.repeat(u[None, :], len(mids), axis=0)
        fits = ev.buffer_words(ev.node_tile(sp.dims, uu, mids), 1) <= ev.gbuf_cap
        all_u.append(uu[fits])
        all_m.append(mids[fits])
    U = np.concatenate(all_u)
    A = np.concatenate(all_m)
    if len(U) == 0:
        return None, _NONE
    tops = sp.rest[None, :] // (U * A)
    per1 = [sp.orders(a) for a in A]
    per2 = [sp.orders(t) for t in tops]
    total = sum(len(p1) * len(p2) for p1, p2 in zip(per1, per2))
    if total > _MAX_CANDIDATES:
        # too many: REGF-level orders by one choice of innermost loop only
        per1 = [_innermost_orders(a, nd) for a in A]
    rows, o1, o2 = [], [], []
    for f, (p1, p2) in enumerate(zip(per1, per2)):
        n1, n2 = len(p1), len(p2)
        rows.append(np.full(n1 * n2, f, dtype=np.int64))
        o1.append(np.repeat(p1, n2, axis=0))
        o2.append(np.tile(p2, (n1, 1)))
    rows = np.concatenate(rows)
    res = sp.costs(U, A, rows, np.concatenate(o1), np.concatenate(o2))
    i = res.best()
    value = float(res.objective[i])
    if not math.isfinite(value):
        return None, _NONE
    return _Found(res.blocking(i), tuple(int(v) for v in U[rows[i]])), (value, float(res.energy[i]))


def _innermost_orders(counts: np.ndarray, nd: int) -> np.ndarray:
    looping = [j for j in range(nd) if counts[j] > 1]
    still = [j for j in range(nd) if counts[j] <= 1]
    if not looping:
        return np.arange(nd)[None, :]
    return np.array([still + [j for j in looping if j != i] + [i] for i in looping], dtype=np.int64)


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


# ------------------------------------------------------------------ hardware without a batch evaluator


def _descend_scalar(skel: Skeleton, arch: ArchSpec, objective: str, feed: Feed | None):
    """For hardware the batch evaluator does not model (not REGF, GBUF, DRAM):
    the same levels, costed one scheme at a time with a greedy descent."""
    rest = skel.rest
    dims = [d for d in BLOCK_DIMS if rest[d] > 1]
    regf_cap = arch.levels[0].capacity // arch.word_bytes
    gbuf_cap = arch.levels[1].capacity // arch.word_bytes
    unit = {d: 1 for d in dims}
    mid = {d: 1 for d in dims}
    evaluated = 0

    def cost(u, a, o1, o2):
        nonlocal evaluated
        blocking = Blocking(tuple(u.items()), tuple((d, a[d]) for d in o1),
                            tuple((d, rest[d] // (u[d] * a[d])) for d in o2))
        scheme = build_scheme(skel, blocking)
        if scheme.buffer_words(0) > regf_cap or scheme.buffer_words(1) > gbuf_cap:
            return _NONE, blocking
        evaluated += 1
        cost = evaluate(scheme, arch, feed or FROM_DRAM, check=False)
        return (cost.objective(objective), cost.total_energy), blocking

    best = cost(unit, mid, dims, dims)
    improved = True
    while improved:
        improved = False
        for table in (unit, mid):
            for d in dims:
                for p in _primes(rest[d] // (unit[d] * mid[d])):
                    table[d] *= p
                    trial = cost(unit, mid, dims, dims)
                    if _better(trial[0], best[0]):
                        best, improved = trial, True
                    else:
                        table[d] //= p
    if not math.isfinite(best[0][0]):
        return None, _NONE, evaluated
    return best[1], best[0], evaluated
