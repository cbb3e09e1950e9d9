"""CoSA's scheduling problem (Huang et al., ISCA 2021, Sec. III) on kapla's
hardware template, as a mixed-integer linear program.

Every loop bound left to schedule is split into its prime factors; a binary
variable places each factor in one *slot*: the PE's own loops over its
register block (kapla's ``unit``), a level's temporal loops, a level's
spatial fan-out along the rows or the columns of its array, or one *rank* of
the permuted level's loop order (one factor per rank, the lowest innermost).
kapla's levels map onto CoSA's as follows: level ``i``'s block is the product
of every factor in a slot below it (the unit, the stacks and loops of levels
``0 .. i-1``); the permuted level is the one whose loops walk the top
on-chip buffer's block (CoSA permutes the global buffer's loops), the loops
above it fetch that buffer's blocks from DRAM.

In log space the block of a tensor is a sum of the factors relevant to it,
so capacities and fan-outs are linear constraints. The input fmap's block
is not a product (its rows are ``(Y-1)*stride + (S-1)*dilation + 1``): for
each level it is read exactly from one binary per pair of divisors of the
``Y`` and ``S`` loops left to schedule (likewise ``X`` and ``R``), linked to
the factors by the exponent of every prime, so that no kernel factor is
pushed anywhere by an approximation. A buffer shared by several tensors is
split among them: each tensor's words are bounded by the chords of the
exponential between close breakpoints, which keeps the constraint linear
and conservative (CoSA fixes the split instead).

The objective is CoSA's (eq. 12): ``- w_U * utilisation + w_C * compute +
w_T * traffic``, all in log2 units: utilisation sums the log footprints of
the tensors each buffer inside the top one holds; compute the log of the
temporal trips; traffic, per tensor, the log of the block the permuted
level's loops deliver, of its spread over relevant spatial units, of the
loops at or outside the innermost relevant one in the permuted order
(``Y`` of eqs. 9-10: the products of a factor's rank variable and ``Y`` are
linearised exactly) and of the DRAM-level loops. The default weights are
those of the authors' public code (0.1, 10, 1). One addition: where a
tensor skips the buffers between its outermost holder and the permuted level
(Simba's weights go from DRAM straight into the PEs), the loops in between
count as fetching it again; CoSA's traffic term sees only the global buffer
and would leave them free.

A PE-mapping template at level 0 (row stationary, systolic) fixes that
level's spatial part, its unit block and its innermost loops: the
formulation takes one such choice as constants (:class:`Formulation` is
built once per choice).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kapla.dataflow.tensors import DIMS, RELEVANT, Kind, as_block, ifm_extents
from kapla.search.layer.cosa.mip import Program
from kapla.space.layer.factors import FactorSpace, divisors, exponents

#: Breakpoints per unit of log2 of the chords that bound a shared buffer's words.
CHORDS = 4

#: The input window's axes: (output dim, kernel dim).
WINDOWS = (("Y", "S"), ("X", "R"))


@dataclass(frozen=True)
class Weights:
    """CoSA's objective weights (eq. 12): utilisation (maximised), compute and traffic (minimised)."""

    utilisation: float = 0.1
    compute: float = 10.0
    traffic: float = 1.0


class Formulation:
    """The MIP of one layer solve under one fixed level-0 choice (``fixed``:
    a template's spatial choice, None where level 0 is free)."""

    def __init__(self, space: FactorSpace, weights: Weights | None = None) -> None:
        self.space, self.weights = space, weights or Weights()
        self.problem, self.fixed, self.hw = space.problem, space.fixed, space.hw
        self.layer, self.n = space.layer, space.n
        self.full, self.kinds, self.copies, self.perm = space.full, space.kinds, space.copies, space.perm
        self.stacked, self.inner, self.rest = space.stacked, space.inner, space.rest
        self.factors, self.slots = space.factors, space.slots
        self.p = p = Program()
        self.x = {(f, s): p.var() for f, opts in enumerate(space.options) for s in opts}
        self._pairs: dict[tuple[int, int], tuple[list[int], list[float], float]] = {}
        self._footprints: dict[tuple[int, Kind], tuple[dict[int, float], float]] = {}
        self._build()

    def _in(self, pred) -> dict[int, float]:
        """``sum(log2(prime) * x)`` over the placements ``pred(factor, slot)`` accepts."""
        out: dict[int, float] = {}
        for (f, s), j in self.x.items():
            if pred(self.factors[f], self.slots[s]):
                out[j] = out.get(j, 0.0) + self.factors[f].log
        return out

    # ------------------------------------------------------------ footprints

    def footprint(self, level: int, kind: Kind) -> tuple[dict[int, float], float]:
        """log2 words of ``kind`` in ``level``'s block: (coefficients, constant).
        Worked out once: the capacities, the utilisation and the traffic read it."""
        key = (level, kind)
        if key not in self._footprints:
            self._footprints[key] = self._footprint(level, kind)
        return self._footprints[key]

    def _footprint(self, level: int, kind: Kind) -> tuple[dict[int, float], float]:
        coefs: dict[int, float] = {}
        const = math.log2(self.copies[kind])
        dims = [d for d in DIMS if d in RELEVANT[kind]]
        if kind == Kind.IFM:
            dims = [d for d in dims if d in "NGC"]
            for axis in range(2):
                js, vals, fixed = self._window_pairs(level, axis)
                const += fixed
                for j, v in zip(js, vals, strict=True):
                    coefs[j] = coefs.get(j, 0.0) + v
        for d in dims:
            if self.space.window_dropped(level, d):
                continue
            const += math.log2(self.space.tile_const(level, d))
            for j, c in self._in(lambda f, s, d=d: f.dim == d and s.below(level)).items():
                coefs[j] = coefs.get(j, 0.0) + c
        return coefs, const

    def _window_pairs(self, level: int, axis: int) -> tuple[list[int], list[float], float]:
        """One binary per pair of divisors of the output and kernel loops left
        on ``axis`` inside ``level``'s block, with the log2 of the input
        extent it reads; or, with nothing left to choose, the constant log2
        extent: (binaries, their values, constant)."""
        key = (level, axis)
        if key in self._pairs:
            return self._pairs[key]
        out_dim, ker_dim = WINDOWS[axis]
        dims = (out_dim, ker_dim)
        choices = [[1] if self.space.window_dropped(level, d) else divisors(self.rest[d]) for d in dims]
        pairs = list(itertools.product(*choices))
        logs = []
        for pair in pairs:
            block = {d: min(self._extent(level, d, v), self.full[d]) for d, v in zip(dims, pair, strict=True)}
            rows, cols = ifm_extents(as_block(block), self.layer)
            logs.append(math.log2(int(rows) if axis == 0 else int(cols)))
        if len(pairs) == 1:
            self._pairs[key] = ([], [], logs[0])
            return self._pairs[key]
        js = [self.p.var() for _ in pairs]
        self.p.add({j: 1.0 for j in js}, 1.0, 1.0)
        for k, d in enumerate(dims):
            if self.space.window_dropped(level, d):
                continue
            # the pair's divisor is the product of the dim's factors inside the block, prime by prime
            for prime in exponents(self.rest[d]):
                row = {j: float(exponents(pair[k]).get(prime, 0)) for j, pair in zip(js, pairs, strict=True)}
                for (f, s), xj in self.x.items():
                    fac = self.factors[f]
                    if fac.dim == d and fac.prime == prime and self.slots[s].below(level):
                        row[xj] = row.get(xj, 0.0) - 1.0
                self.p.add(row, 0.0, 0.0)
        self._pairs[key] = (js, logs, 0.0)
        return self._pairs[key]

    def _extent(self, level: int, dim: str, divisor: int) -> int:
        if self.space.window_dropped(level, dim):
            return 1
        return self.space.tile_const(level, dim) * divisor

    # ------------------------------------------------------------ the program

    def _build(self) -> None:
        p, hw = self.p, self.hw
        F, S = len(self.factors), len(self.slots)
        # every factor in exactly one slot
        for f in range(F):
            p.add({self.x[f, s]: 1.0 for s in range(S) if (f, s) in self.x}, 1.0, 1.0)
        # a rank holds one factor at most, ranks filled from the innermost
        ranks = [s for s in range(S) if self.slots[s].kind == "rank"]
        for a, b in itertools.pairwise(ranks):
            row = {self.x[f, a]: 1.0 for f in range(F)}
            for f in range(F):
                row[self.x[f, b]] = row.get(self.x[f, b], 0.0) - 1.0
            p.add(row, 0.0, math.inf)
        for s in ranks:
            p.add({self.x[f, s]: 1.0 for f in range(F)}, -math.inf, 1.0)
        # identical factors are interchangeable: keep them in slot order
        for a, b in itertools.pairwise(range(F)):
            if self.factors[a] == self.factors[b]:
                row = {self.x[a, s]: float(s) for s in range(S) if (a, s) in self.x}
                for s in range(S):
                    if (b, s) in self.x:
                        row[self.x[b, s]] = row.get(self.x[b, s], 0.0) - float(s)
                p.add(row, -math.inf, 0.0)
        # fan-out of each array axis
        for s, slot in enumerate(self.slots):
            if slot.kind == "spatial":
                row = {self.x[f, s]: self.factors[f].log for f in range(F) if (f, s) in self.x}
                p.add(row, -math.inf, math.log2(hw.levels[slot.level].array[slot.axis]) + 1e-9)
        self._capacities()
        self._feed()
        self._objective()

    def _capacities(self) -> None:
        hw = self.hw
        for level in range(self.n):
            lvl = hw.levels[level]
            held = [k for k in self.kinds if level in hw.holders(k)]
            if not held:
                continue
            if lvl.split_bits:
                for k in held:
                    if k in lvl.split_bits:
                        self._fits(level, k, math.log2(lvl.split_bits[k]))
            elif lvl.capacity_bits is not None:
                cap = math.log2(lvl.capacity_bits)
                if len(held) == 1:
                    self._fits(level, held[0], cap)
                    continue
                self._shared(level, held, cap)

    def _shared(self, level: int, held: Sequence[Kind], cap_bits: float) -> None:
        """Tensors sharing one buffer: their words add up, which is not linear in
        log space. Each tensor's share of the buffer is bounded below by the
        chords of ``2**footprint`` between breakpoints a quarter of a log2 apart
        (a convex function lies under its chords: the bound is conservative, by
        0.4 % at most, and exact at the breakpoints), and the shares sum to one."""
        shares = []
        for k in held:
            coefs, const = self.footprint(level, k)
            top = cap_bits - math.log2(self.hw.bits[k])  # log2 words the buffer holds of this tensor alone
            self.p.add(coefs, -math.inf, top - const + 1e-9)
            share = self.p.var(0.0, math.inf, integer=False)
            shares.append(share)
            scale = 2.0 ** -top  # words as a fraction of the buffer
            steps = max(int(math.ceil(top * CHORDS)), 1)
            for b in range(steps):
                lo, hi = b / CHORDS, (b + 1) / CHORDS
                slope = (2.0 ** hi - 2.0 ** lo) * CHORDS * scale
                # share >= 2**lo * scale + slope * (footprint - lo)
                row = {share: 1.0}
                for j, c in coefs.items():
                    row[j] = row.get(j, 0.0) - slope * c
                self.p.add(row, 2.0 ** lo * scale + slope * (const - lo), math.inf)
        self.p.add({j: 1.0 for j in shares}, -math.inf, 1.0 + 1e-9)

    def _fits(self, level: int, kind: Kind, cap_bits: float) -> None:
        coefs, const = self.footprint(level, kind)
        self.p.add(coefs, -math.inf, cap_bits - const - math.log2(self.hw.bits[kind]) + 1e-9)

    def _feed(self) -> None:
        """Data a segment keeps on chip cross DRAM at most once: no loop above
        their outermost holder may be one they do not depend on."""
        feed = self.problem.fed
        if feed is None:
            return
        for kind in feed.kept & set(self.kinds):
            holders = self.hw.holders(kind)
            if not holders:
                continue
            top = max(holders)
            for (f, s), j in self.x.items():
                slot = self.slots[s]
                loops = slot.kind in ("temporal", "rank") and slot.level >= top
                if loops and self.factors[f].dim not in RELEVANT[kind]:
                    self.p.add({j: 1.0}, 0.0, 0.0)

    def _objective(self) -> None:
        p, w, n = self.p, self.weights, self.n
        F = len(self.factors)
        util: dict[int, float] = {}
        util_const = 0.0
        for level in range(n - 1 if n >= 2 else n):
            for k in self.kinds:
                if level in self.hw.holders(k):
                    coefs, const = self.footprint(level, k)
                    _accumulate(util, coefs)
                    util_const += const
        compute = self._in(lambda f, s: s.kind in ("unit", "temporal", "rank"))
        compute_const = sum(math.log2(c) for c in self.inner.values())
        traffic: dict[int, float] = {}
        traffic_const = 0.0
        ranks = [s for s in range(len(self.slots)) if self.slots[s].kind == "rank"]
        self.y: dict[tuple[Kind, int], int] = {}
        for k in self.kinds:
            coefs, const = self.footprint(self.perm, k)  # the block each step of the permuted loops delivers
            _accumulate(traffic, coefs)
            traffic_const += const
            _accumulate(traffic, self._in(lambda f, s, k=k: s.kind == "spatial" and s.level == self.perm
                                          and f.dim in RELEVANT[k]))
            if self.perm == 0 and self.fixed is not None:
                traffic_const += sum(math.log2(c) for d, c in self.stacked.items() if d in RELEVANT[k])
            # Y: some loop the tensor depends on sits at this rank or inside it
            prev = None
            for z, s in enumerate(ranks):
                y = p.var()
                self.y[k, z] = y
                here = {self.x[f, s]: 1.0 for f in range(F) if self.factors[f].dim in RELEVANT[k]}
                p.add({y: 1.0, **{j: -c for j, c in here.items()}}, 0.0, math.inf)
                if prev is None:
                    p.add({y: 1.0, **{j: -c for j, c in here.items()}}, -math.inf, 0.0)
                else:
                    p.add({y: 1.0, prev: -1.0}, 0.0, math.inf)
                    p.add({y: 1.0, prev: -1.0, **{j: -c for j, c in here.items()}}, -math.inf, 0.0)
                prev = y
                for f in range(F):
                    x = self.x[f, s]
                    prod = p.var(integer=False)
                    p.add({prod: 1.0, x: -1.0}, -math.inf, 0.0)
                    p.add({prod: 1.0, y: -1.0}, -math.inf, 0.0)
                    p.add({prod: 1.0, x: -1.0, y: -1.0}, -1.0, math.inf)
                    traffic[prod] = traffic.get(prod, 0.0) + self.factors[f].log
            if self.perm < n - 1:
                _accumulate(traffic, self._in(lambda f, s: s.kind == "temporal" and s.level == n - 1))
            # a tensor no buffer keeps from its outermost holder up to the permuted
            # level (Simba's weights, fetched from DRAM straight into the PEs) is
            # fetched again for every step of the loops in between
            held = self.hw.holders(k)
            outer = max(held) if held else -1
            _accumulate(traffic, self._in(lambda f, s, outer=outer: s.kind == "temporal"
                                          and max(outer, 0) <= s.level < self.perm))
        self.terms = {"utilisation": (util, util_const), "compute": (compute, compute_const),
                      "traffic": (traffic, traffic_const)}
        total: dict[int, float] = {}
        _accumulate(total, util, -w.utilisation)
        _accumulate(total, compute, w.compute)
        _accumulate(total, traffic, w.traffic)
        p.minimise(total, -w.utilisation * util_const + w.compute * compute_const + w.traffic * traffic_const)

    def fixed_to(self, placement: Sequence[int]) -> Program:
        """The program with every factor held in a given slot (indices into
        ``slots``): what is left is read off the placement."""
        prog = Program(list(self.p.lower), list(self.p.upper), list(self.p.integer), list(self.p.cost),
                       list(self.p.rows), self.p.offset)
        for (f, s), j in self.x.items():
            prog.lower[j] = prog.upper[j] = 1.0 if placement[f] == s else 0.0
        return prog

    # ------------------------------------------------------------ answers

    def term_values(self, values: np.ndarray) -> dict[str, float]:
        return {name: float(sum(c * values[j] for j, c in coefs.items()) + const)
                for name, (coefs, const) in self.terms.items()}

    def placement(self, values: np.ndarray) -> list[int]:
        """The slot (an index into ``slots``) of every factor in a solution."""
        out = [-1] * len(self.factors)
        for (f, s), j in self.x.items():
            if values[j] > 0.5:
                out[f] = s
        assert min(out, default=0) >= 0
        return out


def _accumulate(into: dict[int, float], coefs: Mapping[int, float], scale: float = 1.0) -> None:
    for j, c in coefs.items():
        into[j] = into.get(j, 0.0) + scale * c


__all__ = ["Formulation", "Weights"]
