"""The validity rules of loop nests, each written once and vectorised.

A nest is valid when

* its loops cover every loop dimension of the layer exactly once
  (:func:`coverage`): blocks tile each dimension bottom-up (a loop advances
  by the block inside it), they reach at least the layer's extent (no lost
  work), and no loop iteration or unit block lies wholly beyond it (no idle
  work); the last block may be partial, which costs time, not correctness;
* every buffer holds what the nest puts in it, per unit (:func:`capacity`);
  a level split into per-tensor buffers checks each buffer on its own;
* stacks never use more units than the level's array (:func:`arrays`);
* buffer sharing is only used where the hardware allows neighbour transfers,
  over units that really hold the same block (:func:`sharing`);
* data a segment keeps on chip are fetched once (:func:`kapla.model.feed.feed_violations`).

Each rule returns ``(mask, message)`` pairs: the ``(M,)`` nests breaking one
constraint, and what is wrong (the evaluator names every broken constraint
of a single scheme; a solver just drops the masked candidates).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import cast

import numpy as np

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.mapping import STREAMED_DIMS
from kapla.dataflow.tensors import DIM_INDEX, DIMS, RELEVANT_MASK, Kind, TensorRole, footprints
from kapla.model.hardware import Hardware, hardware
from kapla.model.nests import Nests, counts_by_dim, from_schemes
from kapla.workload.layer import Layer


@dataclass(frozen=True, eq=False)
class Violation:
    """The ``(M,)`` nests that break one constraint, and what is wrong with nest ``m``."""

    mask: np.ndarray
    describe: Callable[[int], str]


@dataclass(frozen=True, eq=False)
class Coverage:
    """How the loops of ``M`` nests tile each dimension.

    ``idle``: ``(M, L)`` loops with a wholly idle iteration (``dims``,
    ``counts``, ``steps`` describe them, ``labels`` name them); ``covered``:
    ``(M, 8)`` extent the loops reach; ``unit_over``: ``(M, 8)`` unit blocks
    beyond the layer; ``nonpositive``: ``(M, L)`` loop counts below one.
    """

    full: np.ndarray
    dims: np.ndarray
    counts: np.ndarray
    steps: np.ndarray
    labels: list[str]
    idle: np.ndarray
    nonpositive: np.ndarray
    covered: np.ndarray
    unit_over: np.ndarray
    unit: np.ndarray

    def unit_over_value(self, m: int, j: int) -> int:
        """The unit block's extent of dim ``j`` in nest ``m`` (the first reach)."""
        return int(self.unit[m, j])

    @property
    def ok(self) -> np.ndarray:
        # (M, L) and (M, 8) arrays reduced over axis 1: always an array, never the scalar numpy's stubs allow
        return cast(np.ndarray, ~(self.idle.any(axis=1) | self.nonpositive.any(axis=1)
                                  | (self.covered < self.full).any(axis=1) | self.unit_over.any(axis=1)))


_SMALL = 1024  # loop columns (nests x loops) up to which tile_coverage works on every dim at once


def tile_coverage(full: np.ndarray, unit: np.ndarray, dims: np.ndarray, counts: np.ndarray,
                  labels: list[str] | None = None) -> Coverage:
    """The coverage rule on loops given innermost first: ``unit`` ``(M, 8)`` blocks,
    then loops ``(M, L)`` over ``dims`` with ``counts``, each advancing by the
    block everything inside it covers."""
    M, L = dims.shape
    reach = np.array(unit, dtype=np.int64)  # a copy, updated in place through a flat view
    if L and M * L <= _SMALL:
        # few nests: each loop's step at once, from a running product per dim over
        # ``(M, L, 8)`` arrays (a few numpy calls; past a thousand columns the arrays cost more)
        running = np.cumprod(counts_by_dim(dims, counts), axis=1)
        before = np.ones_like(running)
        before[:, 1:] = running[:, :-1]
        steps = (before.reshape(-1)[np.arange(M * L) * reach.shape[1] + dims.reshape(-1)].reshape(M, L)
                 * np.take_along_axis(reach, dims, axis=1))
        reach = reach * running[:, -1]
    else:
        steps = np.zeros((M, L), dtype=np.int64)
        flat = reach.reshape(-1)
        base = np.arange(M) * reach.shape[1]
        for k in range(L):
            idx = base + dims[:, k]
            step = flat[idx]
            steps[:, k] = step
            flat[idx] = step * counts[:, k]
    idle = wholly_beyond(counts, steps, full[dims])
    return Coverage(full, dims, counts, steps, labels or [""] * L, idle, counts < 1, reach, unit > full, unit)


def coverage(nests: Nests) -> Coverage:
    """The coverage of every dimension by every nest (see the module docstring)."""
    dims, counts, labels = nests.dim_loops()
    return tile_coverage(nests.full, nests.unit[nests.rows], dims, counts, labels)


def coverage_ok(nests: Nests) -> np.ndarray:
    """``(M,)`` :attr:`Coverage.ok` of every nest; where loop orders cannot
    change it (:attr:`Nests.order_free`), worked out once per factor combination."""
    if not nests.order_free or nests.combos >= len(nests):
        return coverage(nests).ok
    first = nests.first_rows
    dims, counts, _ = nests.dim_loops(first)
    return tile_coverage(nests.full, nests.unit[nests.rows[first]], dims, counts).ok[nests.rows]


def wholly_beyond(counts: np.ndarray, steps: np.ndarray, full: np.ndarray) -> np.ndarray:
    """Loops (or stacks) whose last iteration (unit) starts at or past the
    layer's extent ``full``: wholly idle work."""
    return (counts - 1) * steps >= full


def used_units(nests: Nests) -> list[np.ndarray]:
    """Per level (DRAM last, one unit), ``(M,)`` units in use on the whole
    hardware: a stack's units lying wholly beyond the layer (which a valid
    nest never has: :func:`coverage`) get no work and move no data."""
    F = nests.combos
    per_level = [np.prod(_stack_use(nests, i), axis=1) for i in range(nests.levels)]
    out = [np.ones(F, dtype=np.int64)]
    for p in reversed(per_level):
        out.append(out[-1] * p)
    return [u[nests.rows] for u in out[::-1]]


def _stack_use(nests: Nests, level: int) -> np.ndarray:
    """``(F, stacks)`` units of each stack of ``level`` in use (see :func:`used_units`)."""
    st = nests.stacks[level]
    d, n = st.dims, st.counts
    S = d.shape[1]
    # what each stack advances by: the level's nominal block, times the stacks of its
    # dim inside it (innermost first); all stacks at once (a model call's fixed cost)
    step = np.take_along_axis(nests.nominal_tiles[level], d, axis=1)
    if S > 1:
        inside = (d[:, :, None] == d[:, None, :]) & _inside(S)
        if inside.any():
            step = step * np.prod(np.where(inside, n[:, None, :], 1), axis=2)
    full = nests.full[d]
    return np.where(wholly_beyond(n, step, full), -(-full // np.maximum(step, 1)), n)


@lru_cache(maxsize=64)
def _inside(stacks: int) -> np.ndarray:
    """``[k, j]``: stack ``j`` lies inside stack ``k`` (innermost first)."""
    out = np.tri(stacks, k=-1, dtype=bool)
    out.setflags(write=False)
    return out


def used_sharers(nests: Nests, level: int, kind: Kind) -> np.ndarray:
    """``(M,)`` units in use of ``level`` in one group that needs the same block of
    ``kind``: over its stacks of dims the tensor does not depend on."""
    irrelevant = ~RELEVANT_MASK[kind][nests.stacks[level].dims]
    return np.prod(np.where(irrelevant, _stack_use(nests, level), 1), axis=1)[nests.rows]


def coverage_violations(nests: Nests) -> list[Violation]:
    return [Violation(~coverage_ok(nests), lambda m: "; ".join(idle_dims(coverage(nests), m)))]


def block_words(block: np.ndarray, layer: Layer, roles: tuple[TensorRole, ...], hw: Hardware, level: int,
                bypass: tuple[frozenset[Kind], ...] = (),
                shr: Mapping[Kind, np.ndarray | np.integer | int] | None = None) -> dict[Kind, np.ndarray]:
    """Words of each tensor one unit of ``level`` holds for blocks ``(..., 8)``:
    footprints after buffer sharing (``shr``), element-wise inputs counted per
    copy; tensors the level does not hold are absent."""
    shr = shr or {}
    if level == 0 and hw.regf_window:
        block = streamed_window(block)
    fp = footprints(block, layer, tuple(dict.fromkeys(r.kind for r in roles)))
    out: dict[Kind, np.ndarray] = {}
    for role in roles:
        if level not in hw.holders(role.kind, bypass):
            continue
        words = fp[role.kind]
        n = shr.get(role.kind)
        if n is not None:
            words = -(-words // n)
        out[role.kind] = out.get(role.kind, 0) + words * role.copies
    return out


def streamed_window(block: np.ndarray) -> np.ndarray:
    """The part of PE unit blocks ``(..., 8)`` a register file holds when the
    unit's outputs stream through it (counting ``regf_holds: window``):
    one output's partial sums and the filter window of input it reads."""
    out = np.array(block, dtype=np.int64)
    for d in STREAMED_DIMS:
        out[..., DIM_INDEX[d]] = 1
    return out


def held_words(block: np.ndarray, nests: Nests, hw: Hardware, level: int,
               shr: Mapping[Kind, np.ndarray | np.integer | int] | None = None) -> dict[Kind, np.ndarray]:
    """:func:`block_words` of the nests' layer (``shr`` defaults to the nests')."""
    return block_words(block, nests.layer, nests.roles, hw, level, nests.bypass,
                       nests.shr[level] if shr is None else shr)


def fits(words: Mapping[Kind, np.ndarray | int], hw: Hardware, level: int) -> np.ndarray:
    """Which blocks (by their :func:`block_words`) one unit of ``level`` holds:
    each per-tensor buffer on its own, or all of them in a shared one (words
    that broadcast together: their broadcast shape)."""
    lvl = hw.levels[level]
    ok = np.ones(np.shape(next(iter(words.values()))) if words else (), dtype=bool)
    # not in place: words of several shapes give their broadcast shape (an estimate's grid)
    if lvl.split_bits:
        for kind, w in words.items():
            ok = ok & (w * hw.bits[kind] <= lvl.split_bits[kind])
    elif lvl.capacity_bits is not None:
        ok = ok & (sum(w * hw.bits[k] for k, w in words.items()) <= lvl.capacity_bits)
    return ok


def buffer_words(nests: Nests, hw: Hardware, level: int) -> dict[Kind, np.ndarray]:
    """``(F,)`` words of each tensor one unit of ``level`` holds (:func:`held_words` of its block)."""
    return held_words(nests.tiles[level], nests, hw, level)


def buffer_bits(nests: Nests, hw: Hardware, level: int) -> dict[Kind | None, np.ndarray]:
    """``(F,)`` bits one unit of ``level`` needs: per buffer of a split level,
    or in total (key None) for a shared one."""
    words = buffer_words(nests, hw, level)
    bits: dict[Kind | None, np.ndarray] = {k: w * hw.bits[k] for k, w in words.items()}
    if hw.levels[level].split_bits:
        return bits
    return {None: sum(bits.values(), np.zeros(nests.combos, dtype=np.int64))}


def capacity(nests: Nests, hw: Hardware) -> list[tuple[int, Kind | None, np.ndarray, int]]:
    """Per buffer: (level, tensor or None for a shared buffer, ``(F,)`` bits
    needed per unit, bits it holds)."""
    out = []
    for i in range(hw.onchip):
        lvl = hw.levels[i]
        for kind, need in buffer_bits(nests, hw, i).items():
            cap = lvl.capacity_bits if kind is None else lvl.split_bits.get(kind)
            if cap is not None:
                out.append((i, kind, need, cap))
    return out


def capacity_violations(nests: Nests, hw: Hardware) -> list[Violation]:
    out = []
    for i, kind, need, cap in capacity(nests, hw):
        over = need > cap
        if over.any():
            what = hw.levels[i].name + ("" if kind is None else f" ({kind} buffer)")
            out.append(Violation(over[nests.rows], partial(_over_capacity, what, need, nests.rows, cap)))
    return out


def _over_capacity(what: str, need: np.ndarray, rows: np.ndarray, cap: int, m: int) -> str:
    return f"{what} needs {_bytes(int(need[rows[m]]))} per unit but holds {_bytes(cap)}"


def _bytes(bits: int) -> str:
    return f"{bits // 8} B" if bits % 8 == 0 else f"{bits / 8:g} B"


def arrays(nests: Nests, hw: Hardware) -> list[Violation]:
    """Stacks that use more units than a level's array."""
    out = []
    for i in range(hw.onchip):
        rows, cols = nests.stacks[i].grid()
        limit = hw.levels[i].array
        over = (rows > limit[0]) | (cols > limit[1])
        if over.any():
            name = hw.levels[i].name
            out.append(Violation(over[nests.rows], partial(_over_array, name, rows, cols, nests.rows, limit)))
    return out


def _over_array(name: str, rows: np.ndarray, cols: np.ndarray, nest_rows: np.ndarray, limit: tuple[int, int],
                m: int) -> str:
    return (f"{name} stacks use {rows[nest_rows[m]]}x{cols[nest_rows[m]]} units but only "
            f"{limit[0]}x{limit[1]} exist")


def sharing(nests: Nests, hw: Hardware) -> list[Violation]:
    """Buffer sharing only with neighbour transfers, over units holding the same block."""
    out = []
    has_weights = any(r.kind == Kind.WGT for r in nests.roles)
    f = nests.rows
    for i in range(hw.onchip):
        lvl = hw.levels[i]
        allowed = lvl.same_level_transfer and (i == 0 or hw.buffer_sharing)
        st = nests.stacks[i]
        for kind, shr in nests.shr[i].items():
            shared = shr > 1
            if not shared.any():
                continue
            name = lvl.name
            if not allowed:
                out.append(Violation(shared[f], partial(_sharing_not_allowed, name, kind, shr, f)))
            irrelevant = ~RELEVANT_MASK[kind][st.dims]
            sharers = np.prod(np.where(irrelevant, st.counts, 1), axis=1)
            bad = shared & (sharers % np.maximum(shr, 1) != 0)
            if bad.any():
                out.append(Violation(bad[f], partial(_too_few_sharers, name, kind, shr, sharers, f)))
            if i not in hw.holders(kind, nests.bypass):
                out.append(Violation(shared[f], partial(_shared_and_bypassed, name, kind)))
            if kind == Kind.WGT and not has_weights:
                out.append(Violation(shared[f], lambda m: "shares weights the layer does not have"))
    return out


def _sharing_not_allowed(name: str, kind: Kind, shr: np.ndarray, rows: np.ndarray, m: int) -> str:
    return (f"{name} shares {kind} over {int(shr[rows[m]])} units but the hardware has no "
            "neighbour transfers (or buffer sharing is off)")


def _too_few_sharers(name: str, kind: Kind, shr: np.ndarray, sharers: np.ndarray, rows: np.ndarray, m: int) -> str:
    return (f"{name} shares {kind} over {int(shr[rows[m]])} units but only {int(sharers[rows[m]])} "
            f"units hold the same {kind} block")


def _shared_and_bypassed(name: str, kind: Kind, m: int) -> str:
    return f"{name} cannot both share and bypass {kind}"


def idle_dims(cov: Coverage, m: int = 0) -> list[str]:
    """Human-readable coverage problems of nest ``m`` (for the evaluator's messages)."""
    out = []
    for j, d in enumerate(DIMS):
        if cov.unit_over[m, j]:
            out.append(f"the PE unit block has {d}={cov.unit_over_value(m, j)} but the layer only {cov.full[j]} "
                       "(idle work)")
    for k, label in enumerate(cov.labels):
        d = DIMS[cov.dims[m, k]]
        if cov.nonpositive[m, k]:
            out.append(f"{label}({d}) x{cov.counts[m, k]}: a loop count must be positive")
        elif cov.idle[m, k]:
            out.append(f"{label}({d}) x{cov.counts[m, k]} steps by {cov.steps[m, k]} over only "
                       f"{cov.full[cov.dims[m, k]]} {d} (idle iterations)")
    for j, d in enumerate(DIMS):
        if cov.covered[m, j] < cov.full[j]:
            out.append(f"the loops over {d} cover {cov.covered[m, j]} of {cov.full[j]} (lost work)")
    return out


__all__ = [
    "Coverage", "arrays", "block_words", "buffer_bits", "buffer_words", "capacity", "capacity_violations",
    "coverage", "coverage_ok", "coverage_violations", "fits", "held_words", "idle_dims",
    "scheme_buffer_words", "sharing", "tile_coverage", "used_units", "wholly_beyond",
]


def scheme_buffer_words(scheme: LayerScheme, arch: ArchSpec, level: int) -> int:
    """Words one unit of ``level`` holds for ``scheme`` (every tensor it keeps)."""
    nests = from_schemes([scheme])
    return int(sum(int(w[0]) for w in buffer_words(nests, hardware(arch), level).values()))
