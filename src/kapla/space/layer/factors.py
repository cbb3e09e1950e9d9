"""The intra-layer space as placements of prime factors (CoSA's view of it).

Every loop bound left to schedule is split into its prime factors; a
*placement* puts each factor in one *slot*: the PE's loops over its register
block (kapla's ``unit``), a level's temporal loops, a level's array along its
rows or its columns, or one *rank* of the permuted level's loop order (the
lowest innermost). Level ``i``'s block is the product of every factor in a
slot below it. The permuted level is the one whose loops walk the top
on-chip buffer's block (CoSA permutes the global buffer's loops); the other
levels' loops run in kapla's dim order.

A PE-mapping template at level 0 (row stationary, systolic) fixes that
level's stacks, unit block and innermost loops: a :class:`FactorSpace` is
built per such choice (:func:`level0_choices`), the factors being those of
what the choice leaves. A placement decodes into kapla's directives
(:meth:`FactorSpace.scheme`); whether the scheme fits is the evaluator's
call. CoSA's MIP, and the random and Timeloop-Hybrid-like samplers compared
with it, all search this space.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from kapla.dataflow.directives import LayerScheme, LevelScheme, Loop, Stack
from kapla.dataflow.mapping import STREAMED_DIMS
from kapla.dataflow.tensors import DIMS, layer_dims, tensor_roles
from kapla.model.hardware import hardware
from kapla.space.layer.frames import frames
from kapla.space.layer.skeletons import PARTITION_DIMS
from kapla.space.layer.unroll import Spatial
from kapla.space.problem import Problem


@dataclass(frozen=True)
class Slot:
    """Where a factor goes: ``unit`` (the PE's register block), ``temporal``
    (level ``level``'s loops), ``spatial`` (its array, ``axis`` 0 rows, 1
    columns) or ``rank`` (position ``rank`` of the permuted level's loops)."""

    kind: str
    level: int = -1
    axis: int = -1
    rank: int = -1

    def below(self, level: int) -> bool:
        """Whether the factor is part of ``level``'s block."""
        return self.kind == "unit" or self.level < level


@dataclass(frozen=True)
class Factor:
    dim: str
    prime: int

    @property
    def log(self) -> float:
        return math.log2(self.prime)


def prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def divisors(n: int) -> list[int]:
    primes = prime_factors(n)
    return sorted({math.prod(c) for k in range(len(primes) + 1) for c in itertools.combinations(primes, k)})


def exponents(n: int) -> dict[int, int]:
    out: dict[int, int] = {}
    for p in prime_factors(n):
        out[p] = out.get(p, 0) + 1
    return out


def level0_choices(problem: Problem) -> list[Spatial | None]:
    """What level 0 leaves to a placement: None where its array is free, else
    each spatial choice kapla's space offers under a PE-mapping template."""
    arch = problem.arch
    if arch.unroll_of(0).kind != "template":
        return [None]
    seen = sorted({f.spatial[0] for f in frames(problem.layer, problem.batch, arch)},
                  key=lambda s: (s.describe(), repr(s)))
    return list(seen)


class FactorSpace:
    """The placements of one layer solve's prime factors under one level-0
    choice (``fixed``: a template's, None where level 0 is free)."""

    def __init__(self, problem: Problem, fixed: Spatial | None = None) -> None:
        self.problem, self.fixed = problem, fixed
        arch = problem.arch
        self.hw = hw = hardware(arch)
        self.layer = layer = problem.layer
        self.n = n = hw.onchip
        self.full = layer_dims(layer, problem.batch)
        self.roles = tensor_roles(layer, problem.ifm_name)
        self.kinds = tuple(dict.fromkeys(r.kind for r in self.roles))
        self.copies = {k: sum(r.copies for r in self.roles if r.kind == k) for k in self.kinds}
        self.perm = max(n - 2, 0)  # the loops that walk the top on-chip buffer's block
        self.mu = dict(fixed.unit) if fixed is not None else {}
        self.stacked: dict[str, int] = {}
        for st in fixed.stacks if fixed is not None else ():
            self.stacked[st.dim] = self.stacked.get(st.dim, 1) * st.count
        self.inner: dict[str, int] = {}
        for lp in fixed.inner if fixed is not None else ():
            self.inner[lp.dim] = self.inner.get(lp.dim, 1) * lp.count
        self.covered = {d: self.mu.get(d, 1) * self.stacked.get(d, 1) * self.inner.get(d, 1) for d in DIMS}
        self.rest = {d: -(-self.full[d] // self.covered[d]) for d in DIMS}
        self.factors = [Factor(d, p) for d in DIMS for p in prime_factors(self.rest[d])]
        self.slots = self._slots()

    def _slots(self) -> list[Slot]:
        arch = self.problem.arch
        out = [Slot("unit")]
        for i in range(self.n):
            if not (i == 0 and self.fixed is not None):
                array = self.hw.levels[i].array
                for axis in (0, 1):
                    if array[axis] > 1 and arch.unroll_of(i).kind != "template":
                        out.append(Slot("spatial", i, axis))
            if i == self.perm:
                out += [Slot("rank", i, rank=z) for z in range(len(self.factors))]
            else:
                out.append(Slot("temporal", i))
        return out

    def axis_dims(self, level: int, axis: int) -> tuple[str, ...]:
        """The dims a level's unroll lets spread along an axis of its array."""
        unroll = self.problem.arch.unroll_of(level)
        if unroll.kind == "partition":
            return PARTITION_DIMS
        if unroll.kind == "dims" and not unroll.replicate:
            return unroll.rows if axis == 0 else unroll.cols
        return DIMS

    def allowed(self, f: Factor, s: Slot) -> bool:
        if s.kind != "spatial":
            return True
        return f.dim in self.axis_dims(s.level, s.axis) and f.prime <= self.hw.levels[s.level].array[s.axis]

    @cached_property
    def options(self) -> list[list[int]]:
        """Per factor, the slots (indices into ``slots``) it may take."""
        return [[s for s, slot in enumerate(self.slots) if self.allowed(f, slot)] for f in self.factors]

    # ------------------------------------------------------------ blocks

    def tile_const(self, level: int, dim: str) -> int:
        """What the fixed template covers of ``dim`` in ``level``'s block; with
        nothing left to schedule, no more than the layer has (a block is clipped
        to the layer; with factors left, it is counted unclipped: an upper bound)."""
        const = self.mu.get(dim, 1) if level == 0 else self.covered[dim]
        return min(const, self.full[dim]) if self.rest[dim] == 1 else const

    def window_dropped(self, level: int, dim: str) -> bool:
        """A register file holding one streamed output's window holds none of the streamed dims."""
        return level == 0 and self.hw.regf_window and dim in STREAMED_DIMS

    # ------------------------------------------------------------ placements

    def smallest_blocks(self) -> list[int]:
        """Every factor looping at the top: the smallest block at every level,
        the placement most likely to fit (the ranks in order where the top is
        the permuted level)."""
        top = [s for s, slot in enumerate(self.slots) if slot.kind == "temporal" and slot.level == self.n - 1]
        if top:
            return [top[0]] * len(self.factors)
        ranks = [s for s, slot in enumerate(self.slots) if slot.kind == "rank"]
        return ranks[:len(self.factors)]

    def sample(self, rng: np.random.Generator) -> list[int]:
        """A random placement: each factor in a slot its level allows, the
        permuted ones in a random order (ranks from the innermost)."""
        plain = [[s for s in opts if self.slots[s].kind != "rank"] for opts in self.options]
        ranks = [s for s, slot in enumerate(self.slots) if slot.kind == "rank"]
        perm = -1  # stands for "at the permuted level" until ranks are dealt
        out = []
        for opts in plain:
            k = int(rng.integers(len(opts) + 1))
            out.append(opts[k] if k < len(opts) else perm)
        at_perm = [f for f, s in enumerate(out) if s == perm]
        for z, f in enumerate(rng.permutation(at_perm)):
            out[int(f)] = ranks[z]
        return out

    def scheme(self, placement: Sequence[int]) -> LayerScheme:
        """kapla's directives for a placement (slot indices, one per factor)."""
        arch, n = self.problem.arch, self.n
        unit = dict(self.mu)
        stacks: list[dict[tuple[str, int], int]] = [{} for _ in range(n)]
        counts: list[dict[str, int]] = [{} for _ in range(n)]
        rank_of: dict[str, int] = {}
        for fac, s in zip(self.factors, placement, strict=True):
            slot = self.slots[s]
            if slot.kind == "unit":
                unit[fac.dim] = unit.get(fac.dim, 1) * fac.prime
            elif slot.kind == "spatial":
                key = (fac.dim, slot.axis)
                stacks[slot.level][key] = stacks[slot.level].get(key, 1) * fac.prime
            else:
                counts[slot.level][fac.dim] = counts[slot.level].get(fac.dim, 1) * fac.prime
                if slot.kind == "rank":  # a dim's loop sits at its innermost rank (CoSA's merge)
                    rank_of[fac.dim] = min(rank_of.get(fac.dim, slot.rank), slot.rank)
        levels = []
        for i in range(n):
            if i == 0 and self.fixed is not None:
                level_stacks = tuple(self.fixed.stacks)
            else:
                level_stacks = tuple(Stack(d, stacks[i].get((d, 0), 1), stacks[i].get((d, 1), 1))
                                     for d in DIMS if (d, 0) in stacks[i] or (d, 1) in stacks[i])
            if i == self.perm:
                order = sorted(counts[i], key=lambda d: -rank_of.get(d, -1))
            else:
                order = [d for d in DIMS if d in counts[i]]
            updates = [Loop(d, counts[i][d]) for d in order]
            if i == 0 and self.fixed is not None:
                updates += list(self.fixed.inner)
            levels.append(LevelScheme(arch.levels[i].name, level_stacks, tuple(updates)))
        return LayerScheme(self.layer, self.problem.batch, tuple(unit.items()), tuple(levels),
                           self.problem.ifm_name)


__all__ = ["Factor", "FactorSpace", "Slot", "divisors", "exponents", "level0_choices", "prime_factors"]
