"""Vectorised costs of many loop blockings of one skeleton at once.

The exhaustive intra-layer solver judges every loop blocking of every
skeleton (:mod:`kapla.solve.space`). Building a :class:`LayerScheme` and
running :func:`kapla.model.evaluate.evaluate` on each costs a few hundred
microseconds; this module computes the *same numbers* for arrays of
blockings with numpy.

Everything a skeleton fixes (node partition, buffer sharing, PE mapping) is
worked out once (:class:`BatchEvaluator`): the window dimensions
``Y X S R`` of every block, the PE-mapping loops and their steps, the NoC
distance, the constant access counts. A blocking then only changes the
``N G C K`` extents of the blocks and the counts (and, through the loop
orders, the positions) of the temporal loops, so each quantity of
:mod:`kapla.dataflow.traffic` and :mod:`kapla.model.evaluate` becomes a few
array operations. Candidates are grouped by loop-order pair: within a group
the loop structure is fixed and only the counts vary (a loop of count 1 is
dropped from the scheme, which the formulas here reproduce by never letting
such a loop be the one a tensor reloads on).

The numbers agree with the scalar evaluator (``check=False``) up to
floating-point summation order; ``tests/model/test_batch.py`` checks them to
``rtol=1e-9``.

Entry points:

* :func:`batch_costs` - costs of given blockings (factor arrays x order pairs);
* :func:`enumerate_blockings` - the capacity-feasible factor combinations of
  :func:`kapla.solve.exhaustive._blockings`, as arrays, in its order;
* :func:`enumerate_and_cost` - both, returning the best blocking of a skeleton.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from kapla.arch.spec import ArchSpec
from kapla.dataflow.tensors import DIMS, RELEVANT, Kind, footprint, ifm_extent, layer_dims, tensor_roles
from kapla.model.evaluate import ITCN, _channel_distance
from kapla.solve.space import BLOCK_DIMS, Blocking, Skeleton, divisors

__all__ = [
    "BatchEvaluator",
    "BatchResult",
    "BestBlocking",
    "active_dims",
    "batch_costs",
    "enumerate_and_cost",
    "enumerate_blockings",
    "innermost_orders",
]

_WINDOW_DIMS = ("Y", "X", "S", "R")
_WINDOW_AXIS = {"Y": 0, "S": 0, "X": 1, "R": 1}
_OBJECTIVES = ("energy", "latency", "edp")
# Per kind, the block dims a tensor depends on (its footprint is their product
# times a constant of the window dims).
_BLOCK_RELEVANT = {kind: tuple(d for d in BLOCK_DIMS if d in RELEVANT[kind]) for kind in Kind}


def active_dims(skel: Skeleton) -> tuple[str, ...]:
    """The block dims loop blocking splits (those with more than one step left),
    the columns of the factor arrays by default (as the exhaustive solver)."""
    rest = skel.rest
    return tuple(d for d in BLOCK_DIMS if rest[d] > 1)


def innermost_orders(dims: Sequence[str]) -> list[tuple[str, ...]]:
    """One loop order per choice of innermost loop (the exhaustive solver's orders)."""
    dims = list(dims)
    if not dims:
        return [()]
    return [tuple(d for d in dims if d != inner) + (inner,) for inner in dims]


@dataclass(frozen=True)
class BatchResult:
    """Costs of ``len(orders) x M`` blockings: arrays are indexed ``[order pair, candidate]``.

    Candidate ``m`` with order pair ``p`` is ``blocking(p, m)``; its numbers
    equal ``evaluate(build_scheme(skel, blocking(p, m)), arch, check=False)``:
    ``energy`` = ``total_energy`` (J), ``time`` (cycles), ``objective``,
    ``accesses[level]`` = ``level_accesses(level)`` (words; the arch's level
    names and ``"ITCN"``), ``noc_hops``, ``bus_time`` / ``dram_time`` (the
    time parts; ``compute_time`` is the same for every blocking of a
    covering skeleton). ``regf_words`` / ``gbuf_words`` (per candidate, shape
    ``(M,)``) are ``scheme.buffer_words(0)`` / ``(1)``, for capacity masks.
    """

    dims: tuple[str, ...]
    units: np.ndarray  # (M, len(dims)) unit (register block) factors
    mids: np.ndarray  # (M, len(dims)) REGF-level loop counts
    tops: np.ndarray  # (M, len(dims)) GBUF-level loop counts
    orders: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]  # (regf order, gbuf order), outermost first
    objective_name: str
    energy: np.ndarray
    time: np.ndarray
    objective: np.ndarray
    accesses: Mapping[str, np.ndarray]
    noc_hops: np.ndarray
    compute_time: np.ndarray
    bus_time: np.ndarray
    dram_time: np.ndarray
    regf_words: np.ndarray
    gbuf_words: np.ndarray

    @property
    def size(self) -> int:
        return self.energy.size

    def blocking(self, order: int, cand: int) -> Blocking:
        """The :class:`Blocking` of candidate ``cand`` under order pair ``order``."""
        o1, o2 = self.orders[order]
        col = {d: i for i, d in enumerate(self.dims)}
        return Blocking(
            tuple((d, int(self.units[cand, i])) for i, d in enumerate(self.dims)),
            tuple((d, int(self.mids[cand, col[d]])) for d in o1),
            tuple((d, int(self.tops[cand, col[d]])) for d in o2),
        )

    def argmin(self) -> tuple[int, int]:
        """(order pair, candidate) of the smallest objective; ties go to the
        candidate first in the exhaustive solver's order (factors, then orders)."""
        flat = int(np.argmin(self.objective.T, axis=None))
        cand, order = divmod(flat, self.objective.shape[0])
        return order, cand


@dataclass(frozen=True)
class BestBlocking:
    """What :func:`enumerate_and_cost` found for one skeleton."""

    blocking: Blocking | None  # None when no blocking fits the buffers
    value: float  # its objective (inf if none)
    evaluated: int  # candidates costed (capacity-feasible factors x order pairs)
    energy: float = math.inf
    time: float = math.inf


@dataclass
class _Role:
    kind: Kind
    written: bool
    copies: int
    name: str


@dataclass
class _Win:
    """Per kind, the constants of one block's window dims."""

    const: dict[Kind, int]  # footprint of the window dims (times the NGCK product)
    ifm_rows_cols: tuple[int, int]


@dataclass
class _Level:
    """Volumes of all roles at one boundary (per order pair)."""

    vol_child: dict[Kind, np.ndarray] = field(default_factory=dict)
    vol_group: dict[Kind, np.ndarray] = field(default_factory=dict)


class BatchEvaluator:
    """The blocking-independent part of the cost of a skeleton on ``arch``."""

    def __init__(self, skel: Skeleton, arch: ArchSpec) -> None:
        if len(arch.levels) != 3:
            raise ValueError(f"batch evaluation needs REGF, GBUF and DRAM levels (got {arch.level_names})")
        self.skel, self.arch = skel, arch
        layer, m = skel.layer, skel.mapping
        self.layer = layer
        self.full = full = layer_dims(layer, skel.batch)
        self.rest = skel.rest
        self.mu = {d: m.unit_dims.get(d, 1) for d in DIMS}
        self.s0 = {d: math.prod(st.count for st in m.stacks if st.dim == d) for d in DIMS}
        self.in0 = {d: math.prod(lp.count for lp in m.inner if lp.dim == d) for d in DIMS}
        self.s1 = {d: math.prod(st.count for st in skel.partition.stacks if st.dim == d) for d in DIMS}
        self.pes = math.prod(st.count for st in m.stacks)
        self.nodes = math.prod(st.count for st in skel.partition.stacks)
        self.shr = dict(skel.shr)
        self.roles = [_Role(r.kind, r.written, r.copies, r.name) for r in tensor_roles(layer)]
        self.kinds = tuple(dict.fromkeys(r.kind for r in self.roles))

        # Window dims of the four blocks the traffic model uses: the unit (child
        # at boundary 0), the PE-array group, the node tile (child at boundary
        # 1) and the partition group.
        nom0 = {d: self.mu[d] for d in _WINDOW_DIMS}
        clip0 = {d: min(nom0[d], full[d]) for d in _WINDOW_DIMS}
        grp0 = {d: clip0[d] * self.s0[d] for d in _WINDOW_DIMS}
        nom1 = {d: nom0[d] * self.s0[d] * self.in0[d] for d in _WINDOW_DIMS}
        clip1 = {d: min(nom1[d], full[d]) for d in _WINDOW_DIMS}
        grp1 = {d: clip1[d] * self.s1[d] for d in _WINDOW_DIMS}
        self.win = {name: self._window(block) for name, block in
                    (("c0", clip0), ("g0", grp0), ("c1", clip1), ("g1", grp1))}

        # The PE mapping's fixed loops, innermost at the REGF level: their steps
        # (for input windows sliding over Y/X/S/R) do not depend on the blocking.
        reach = {d: nom0.get(d, self.mu[d]) * self.s0[d] for d in DIMS}
        steps = []
        for lp in reversed(m.inner):
            steps.append(reach[lp.dim])
            reach[lp.dim] *= lp.count
        steps.reverse()
        self.inner = []  # (dim, count, {block: (extent, union)} for IFM windows or None)
        for lp, step in zip(m.inner, steps):
            wins = None
            if lp.dim in _WINDOW_AXIS and lp.count > 1:
                axis = _WINDOW_AXIS[lp.dim]
                stride = layer.stride[axis] if lp.dim in "YX" else layer.dilation[axis]
                shift = step * stride
                wins = {}
                for name in ("c0", "g0"):
                    extent = self.win[name].ifm_rows_cols[axis]
                    wins[name] = (extent, extent + (lp.count - 1) * min(extent, shift))
            self.inner.append((lp.dim, lp.count, wins))
        self.inner_distinct = {k: math.prod(c for d, c, _ in self.inner if d in RELEVANT[k]) for k in Kind}

        self.distance = _channel_distance(arch, skel.partition_grid)
        ops = layer.loop_ops * skel.batch
        self.ops = ops
        self.regf_datapath = float(sum(ops * r.copies * (2 if r.written else 1) for r in self.roles))
        self.systolic = arch.levels[0].same_level_transfer
        self.names = arch.level_names
        self.const_trips = math.prod(self.mu.values()) * math.prod(c for _, c, _ in self.inner)

    def _window(self, block: Mapping[str, int]) -> _Win:
        const = {k: footprint(k, block, self.layer) for k in Kind}
        return _Win(const, ifm_extent(block, self.layer))

    # ------------------------------------------------------------------ costs

    def costs(self, units: np.ndarray, mids: np.ndarray, tops: np.ndarray | None = None,
              orders: Sequence[tuple[Sequence[str], Sequence[str]]] | None = None,
              objective: str = "energy", dims: Sequence[str] | None = None) -> BatchResult:
        if objective not in _OBJECTIVES:
            raise ValueError(f"unknown objective {objective!r}; use energy, latency or edp")
        dims = tuple(active_dims(self.skel) if dims is None else dims)
        if len(set(dims)) != len(dims) or not set(dims) <= set(BLOCK_DIMS):
            raise ValueError(f"dims must be distinct block dims {BLOCK_DIMS} (got {dims})")
        units = _as_factors(units, len(dims), "units")
        mids = _as_factors(mids, len(dims), "mids")
        if tops is None:
            rest = np.array([self.rest[d] for d in dims], dtype=np.int64)
            tops = rest // (units * mids)
            if np.any(tops * units * mids != rest):
                raise ValueError("units x mids must divide the skeleton's remaining counts (or pass tops)")
        tops = _as_factors(tops, len(dims), "tops")
        if units.shape[0] != mids.shape[0] or units.shape[0] != tops.shape[0]:
            raise ValueError("units, mids and tops need the same number of rows")
        if orders is None:
            ords = innermost_orders(dims)
            orders = [(o1, o2) for o1 in ords for o2 in ords]
        orders = tuple((tuple(o1), tuple(o2)) for o1, o2 in orders)
        for o1, o2 in orders:
            for o in (o1, o2):
                if len(set(o)) != len(o) or not set(o) <= set(BLOCK_DIMS):
                    raise ValueError(f"an order lists distinct block dims (got {o})")
        M = units.shape[0]
        one = np.ones(M, dtype=np.int64)
        col = {d: i for i, d in enumerate(dims)}
        u = {d: units[:, col[d]] if d in col else one for d in BLOCK_DIMS}
        a = {d: mids[:, col[d]] if d in col else one for d in BLOCK_DIMS}
        t = {d: tops[:, col[d]] if d in col else one for d in BLOCK_DIMS}
        for o1, o2 in orders:
            for o, f, lvl in ((o1, a, "REGF"), (o2, t, "GBUF")):
                missing = [d for d in BLOCK_DIMS if d not in o and d in col and np.any(f[d] > 1)]
                if missing:
                    raise ValueError(f"{lvl} order {o} misses dims {missing} with loop counts > 1")

        full = self.full
        # N G C K extents of the four blocks (window dims are constants).
        nom0 = {d: self.mu[d] * u[d] for d in BLOCK_DIMS}
        c0 = {d: np.minimum(nom0[d], full[d]) for d in BLOCK_DIMS}
        g0 = {d: c0[d] * self.s0[d] for d in BLOCK_DIMS}
        nom1 = {d: nom0[d] * self.s0[d] * a[d] * self.in0[d] for d in BLOCK_DIMS}
        c1 = {d: np.minimum(nom1[d], full[d]) for d in BLOCK_DIMS}
        g1 = {d: c1[d] * self.s1[d] for d in BLOCK_DIMS}

        def fp(kind: Kind, block: dict, win: str) -> np.ndarray:
            out = np.full(M, self.win[win].const[kind], dtype=np.int64)
            for d in _BLOCK_RELEVANT[kind]:
                out = out * block[d]
            return out

        size = {(k, w): fp(k, blk, w) for k in self.kinds for blk, w in ((c0, "c0"), (g0, "g0"), (c1, "c1"), (g1, "g1"))}
        regf_words = np.zeros(M, dtype=np.int64)
        gbuf_words = np.zeros(M, dtype=np.int64)
        for r in self.roles:
            regf_words = regf_words + size[(r.kind, "c0")] * r.copies
            shr = self.shr.get(r.kind, 1)
            gbuf_words = gbuf_words + (-(-size[(r.kind, "c1")] // shr)) * r.copies
        # Distinct blocks a tensor visits: the product of its relevant loops.
        dist1 = {k: _prod([t[d] for d in _BLOCK_RELEVANT[k]], M) for k in self.kinds}
        dist0 = {k: dist1[k] * _prod([a[d] for d in _BLOCK_RELEVANT[k]], M) * self.inner_distinct[k]
                 for k in self.kinds}
        trips = self.const_trips * _prod([u[d] * a[d] * t[d] for d in BLOCK_DIMS], M)

        P = len(orders)
        shape = (P, M)
        out = {name: np.empty(shape) for name in ("energy", "time", "objective", "hops", "bus", "dram",
                                                  "regf", "gbuf", "dram_acc", "itcn")}
        cache1: dict[tuple[str, ...], tuple] = {}
        arch = self.arch
        e_regf, e_gbuf, e_dram = (lvl.access_energy for lvl in arch.levels)
        for p, (o1, o2) in enumerate(orders):
            loops1 = [(d, t[d], None) for d in o2]
            if o2 not in cache1:
                cache1[o2] = self._boundary1(loops1, size, dist1, M)
            gbuf1, dram1, hops1 = cache1[o2]
            loops0 = loops1 + [(d, a[d], None) for d in o1] + self.inner
            gbuf0, itcn0, regf0, bus0 = self._boundary0(loops0, size, dist0, M)
            regf = self.regf_datapath + regf0
            gbuf = gbuf0 + gbuf1
            energy = self.ops * arch.mac_energy + regf * e_regf + gbuf * e_gbuf + dram1 * e_dram
            energy = energy + itcn0 * arch.bus_energy + hops1 * arch.hop_energy
            bus = bus0 / self.nodes / arch.bus_width_words
            dram_t = dram1 / arch.dram_bandwidth_words
            time = np.maximum(np.maximum(trips, bus), dram_t)
            energy = energy + time * arch.static_energy
            out["energy"][p] = energy
            out["time"][p] = time
            out["hops"][p] = hops1
            out["bus"][p] = bus
            out["dram"][p] = dram_t
            out["regf"][p] = regf
            out["gbuf"][p] = gbuf
            out["dram_acc"][p] = dram1
            out["itcn"][p] = itcn0
        if objective == "energy":
            out["objective"] = out["energy"]
        elif objective == "latency":
            out["objective"] = out["time"]
        else:
            out["objective"] = out["energy"] * out["time"]
        names = self.names
        accesses = {names[0]: out["regf"], names[1]: out["gbuf"], names[2]: out["dram_acc"], ITCN: out["itcn"]}
        return BatchResult(dims, units, mids, tops, orders, objective, out["energy"], out["time"],
                           out["objective"], accesses, out["hops"],
                           np.broadcast_to(trips.astype(float), shape), out["bus"], out["dram"],
                           regf_words, gbuf_words)

    # ---------------------------------------------------------- boundaries

    def _volumes(self, loops: list, kind: Kind, sizes: Sequence[tuple[np.ndarray, str]], M: int) -> list[np.ndarray]:
        """``_block_volume`` of blocks of ``kind`` (one per ``sizes`` entry:
        footprints and the block's name, for windows) through ``loops``
        (outermost first; counts are ints or arrays)."""
        relevant = RELEVANT[kind]
        start = 0  # loops outside the innermost relevant fixed loop of count > 1 never sweep
        for j, (d, c, _) in enumerate(loops):
            if d in relevant and not isinstance(c, np.ndarray) and c > 1:
                start = j
        pre: np.ndarray | int = 1
        for d, c, _ in loops[:start]:
            pre = pre * c
        vols = [s.astype(float) for s, _ in sizes]
        for d, c, wins in loops[start:]:
            if d in relevant:
                window = kind == Kind.IFM and wins is not None
                fixed = not isinstance(c, np.ndarray)
                if fixed and c <= 1:
                    pre = pre * c
                    continue
                mask = None if fixed else c > 1
                for i, (s, name) in enumerate(sizes):
                    if window:
                        extent, union = wins[name]
                        cand = (pre * s) / extent * union
                    else:
                        cand = (pre * c * s).astype(float)
                    vols[i] = np.broadcast_to(cand, (M,)) if mask is None else np.where(mask, cand, vols[i])
            pre = pre * c
        return vols

    def _boundary1(self, loops: list, size: dict, distinct: dict, M: int):
        """GBUF <-> DRAM: (GBUF accesses, DRAM accesses, NoC hops)."""
        nodes = self.nodes  # units; parent units = 1
        gbuf = np.zeros(M)
        dram = np.zeros(M)
        hops = np.zeros(M)
        vols = {k: self._volumes(loops, k, [(size[(k, "c1")], "c1"), (size[(k, "g1")], "g1")], M)
                for k in self.kinds}
        for r in self.roles:
            vol_child, vol_group = vols[r.kind]
            cp = r.copies
            if r.written:
                writebacks = nodes * vol_child * cp
                first = nodes * distinct[r.kind] * size[(r.kind, "c1")] * cp
                parent_writes = 1 * vol_group * cp
                parent_first = 1 * distinct[r.kind] * size[(r.kind, "g1")] * cp
                fills = writebacks - first
                parent_reads = parent_writes - parent_first
                reduced = writebacks - parent_writes
                rotated = 0.0
            else:
                shr = self.shr.get(r.kind, 1)
                raw = nodes * vol_child * cp
                fills = raw / shr
                parent_reads = 1 * vol_group * cp
                parent_writes = 0.0
                writebacks = 0.0
                rotated = raw * (shr - 1) / shr
                reduced = 0.0
            dram = dram + (parent_reads + parent_writes)
            gbuf = gbuf + (fills + writebacks + 2 * rotated + 2 * reduced)
            hops = hops + (rotated + reduced) + (fills + writebacks - reduced) * self.distance
        return gbuf, dram, hops

    def _boundary0(self, loops: list, size: dict, distinct: dict, M: int):
        """REGF <-> GBUF: (GBUF accesses, ITCN words, extra REGF writes, bus words of the busiest tensor)."""
        units = self.nodes * self.pes
        parent_units = self.nodes
        gbuf = np.zeros(M)
        itcn = np.zeros(M)
        regf = np.zeros(M)
        bus: dict[str, np.ndarray] = {}
        vols = {k: self._volumes(loops, k, [(size[(k, "c0")], "c0"), (size[(k, "g0")], "g0")], M)
                for k in self.kinds}
        for r in self.roles:
            vol_child, vol_group = vols[r.kind]
            cp = r.copies
            if r.written:
                writebacks = units * vol_child * cp
                first = units * distinct[r.kind] * size[(r.kind, "c0")] * cp
                parent_writes = parent_units * vol_group * cp
                parent_first = parent_units * distinct[r.kind] * size[(r.kind, "g0")] * cp
                fills = writebacks - first
                parent_reads = parent_writes - parent_first
            else:
                fills = units * vol_child * cp  # no sharing between PEs (REGF shr = 1)
                parent_reads = parent_units * vol_group * cp
                parent_writes = 0.0
                writebacks = 0.0
            side = parent_reads + parent_writes
            delivered = fills + writebacks
            gbuf = gbuf + side
            if self.systolic:
                itcn = itcn + side
                regf = regf + np.maximum(delivered - side, 0.0)
            else:
                itcn = itcn + delivered
            bus[r.name] = bus.get(r.name, 0.0) + side
        busiest = np.zeros(M)
        for words in bus.values():
            busiest = np.maximum(busiest, words)
        return gbuf, itcn, regf, busiest


def _prod(arrays: Sequence[np.ndarray], M: int) -> np.ndarray:
    out = np.ones(M, dtype=np.int64)
    for x in arrays:
        out = out * x
    return out


def _as_factors(x, ncols: int, what: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.int64)
    if arr.ndim == 1 and ncols == 0:
        arr = arr.reshape(-1, 0)
    if arr.ndim != 2 or arr.shape[1] != ncols:
        raise ValueError(f"{what} must have shape (M, {ncols}) (got {arr.shape})")
    if np.any(arr < 1):
        raise ValueError(f"{what}: loop counts must be positive")
    return arr


_EVALUATORS: dict[tuple[Skeleton, ArchSpec], BatchEvaluator] = {}


def _evaluator(skel: Skeleton, arch: ArchSpec) -> BatchEvaluator:
    key = (skel, arch)
    ev = _EVALUATORS.get(key)
    if ev is None:
        if len(_EVALUATORS) > 256:
            _EVALUATORS.clear()
        ev = _EVALUATORS[key] = BatchEvaluator(skel, arch)
    return ev


def batch_costs(skel: Skeleton, arch: ArchSpec, units, mids, tops=None,
                orders: Sequence[tuple[Sequence[str], Sequence[str]]] | None = None,
                objective: str = "energy", dims: Sequence[str] | None = None) -> BatchResult:
    """Costs of the blockings ``units x mids x tops`` of ``skel`` under every order pair.

    ``units``, ``mids``, ``tops``: integer arrays of shape ``(M, len(dims))``,
    the unit factors, REGF-level and GBUF-level loop counts of each candidate
    over ``dims`` (default :func:`active_dims`; other block dims are 1).
    ``tops`` defaults to what is left of the skeleton's remaining counts.
    ``orders``: ``(regf order, gbuf order)`` pairs, outermost first, each a
    sequence of block dims (dims of count 1 may be listed or left out);
    default: every pair of :func:`innermost_orders`, regf-order major.
    Results are ``(len(orders), M)`` arrays (see :class:`BatchResult`).
    """
    return _evaluator(skel, arch).costs(units, mids, tops, orders, objective, dims)


# ------------------------------------------------------------- enumeration


def _words(ev: BatchEvaluator, blocks: Mapping[str, np.ndarray], win: str, shr: bool) -> np.ndarray:
    M = next(iter(blocks.values())).shape[0] if blocks else 1
    total = np.zeros(M, dtype=np.int64)
    for r in ev.roles:
        s = np.full(M, ev.win[win].const[r.kind], dtype=np.int64)
        for d in _BLOCK_RELEVANT[r.kind]:
            s = s * blocks[d]
        if shr:
            s = -(-s // ev.shr.get(r.kind, 1))
        total = total + s * r.copies
    return total


def _divisor_expand(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every divisor (ascending) of each value: (divisors per value, all divisors concatenated)."""
    uniq, inv = np.unique(values, return_inverse=True)
    tables = [np.array(divisors(int(v)), dtype=np.int64) for v in uniq]
    width = max((len(tb) for tb in tables), default=0)
    table = np.zeros((len(uniq), width), dtype=np.int64)
    for i, tb in enumerate(tables):
        table[i, :len(tb)] = tb
    counts = np.array([len(tb) for tb in tables], dtype=np.int64)[inv]
    starts = np.cumsum(counts) - counts
    within = np.arange(int(counts.sum())) - np.repeat(starts, counts)
    return counts, table[np.repeat(inv, counts), within]


def enumerate_blockings(skel: Skeleton, arch: ArchSpec, chunk: int = 1 << 18):
    """The capacity-feasible (units, mids) of ``skel`` as ``(M, len(dims))`` arrays,
    in the order :func:`kapla.solve.exhaustive._blockings` visits them, yielded in
    chunks of about ``chunk`` rows (factor combos; each gets every order pair)."""
    ev = _evaluator(skel, arch)
    rest = skel.rest
    dims = active_dims(skel)
    nd = len(dims)
    regf_cap = arch.levels[0].capacity // arch.word_bytes
    gbuf_cap = arch.levels[1].capacity // arch.word_bytes
    if nd:
        units = np.array(list(itertools.product(*(divisors(rest[d]) for d in dims))), dtype=np.int64)
    else:
        units = np.zeros((1, 0), dtype=np.int64)
    one = np.ones(len(units), dtype=np.int64)
    col = {d: i for i, d in enumerate(dims)}
    u = {d: units[:, col[d]] if d in col else one for d in BLOCK_DIMS}
    c0 = {d: np.minimum(ev.mu[d] * u[d], ev.full[d]) for d in BLOCK_DIMS}
    units = units[_words(ev, c0, "c0", False) <= regf_cap]
    rest_arr = np.array([rest[d] for d in dims], dtype=np.int64)
    # Expand units by the mids, a chunk of units at a time, keeping the order
    # (units lexicographic, then mids lexicographic).
    per_unit = np.ones(len(units), dtype=np.int64)
    for i in range(nd):
        uniq, inv = np.unique(rest_arr[i] // units[:, i], return_inverse=True)
        per_unit *= np.array([len(divisors(int(v))) for v in uniq], dtype=np.int64)[inv]
    begin = 0
    while begin < len(units):
        end = begin + 1
        acc = per_unit[begin]
        while end < len(units) and acc + per_unit[end] <= chunk:
            acc += per_unit[end]
            end += 1
        blk = units[begin:end]
        rows = np.arange(len(blk))
        mid_cols: list[np.ndarray] = []
        for i in range(nd):
            counts, vals = _divisor_expand(rest_arr[i] // blk[rows, i])
            mid_cols = [np.repeat(mc, counts) for mc in mid_cols] + [vals]
            rows = np.repeat(rows, counts)
        uu = blk[rows] if nd else np.zeros((1, 0), np.int64)
        mm = np.stack(mid_cols, axis=1) if nd else np.zeros((1, 0), np.int64)
        ones = np.ones(len(uu), dtype=np.int64)
        n1 = {d: ev.mu[d] * ((uu[:, col[d]] * mm[:, col[d]]) if d in col else ones) * ev.s0[d] * ev.in0[d]
              for d in BLOCK_DIMS}
        c1 = {d: np.minimum(n1[d], ev.full[d]) for d in BLOCK_DIMS}
        keep = _words(ev, c1, "c1", True) <= gbuf_cap
        if np.any(keep):
            yield uu[keep], mm[keep]
        begin = end


def enumerate_and_cost(skel: Skeleton, arch: ArchSpec, objective: str = "energy",
                       chunk: int = 1 << 16) -> BestBlocking:
    """The best blocking of ``skel`` over the exhaustive solver's candidate set
    (capacity-feasible factors x innermost-choice orders at both levels), with
    the same tie-breaking (the first best in its visiting order)."""
    if objective not in _OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; use energy, latency or edp")
    ev = _evaluator(skel, arch)
    dims = active_dims(skel)
    ords = innermost_orders(dims)
    orders = [(o1, o2) for o1 in ords for o2 in ords]
    best = BestBlocking(None, math.inf, 0)
    evaluated = 0
    for units, mids in enumerate_blockings(skel, arch, chunk):
        res = ev.costs(units, mids, None, orders, objective, dims)
        evaluated += res.size
        p, m = res.argmin()
        value = float(res.objective[p, m])
        if value < best.value:
            best = BestBlocking(res.blocking(p, m), value, 0, float(res.energy[p, m]), float(res.time[p, m]))
    return BestBlocking(best.blocking, best.value, evaluated, best.energy, best.time)
