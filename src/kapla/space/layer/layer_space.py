"""The intra-layer space of one :class:`~kapla.search.base.Problem`, as an object
any search strategy can enumerate, sample and score in batches.

The space is the one of :mod:`kapla.space.layer.frames`, over any memory hierarchy:
its *frames* fix the spatial choices at every level (node partition, buffer
sharing, PE mapping, the unrolling of middle levels); each frame's
*blockings* split what is left into a register block and a loop count per
level, each level with a loop order (one per class of orders that cost the
same). A strategy picks frames and blockings; the space builds them as
arrays, costs them with the one cost model under the problem's feed, and
turns the best into directives. Exhaustive search walks all of it; random
search samples it; a learned or MIP search scores what it proposes.

Sampling is Timeloop-style (KAPLA Sec. V-A, baseline R): every candidate of
a level of choice is kept with a probability, level by level, so a seeded
generator repeats a run exactly.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache

import numpy as np

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.tensors import DIMS
from kapla.model.cost import Costs
from kapla.model.hardware import Hardware, hardware
from kapla.model.objective import Objective, objective_of
from kapla.space.layer.bound import Bound, frame_bound, partial_bounds
from kapla.space.layer.frames import CHUNK, Blockings, Frame, FrameEvaluator, blockings, factor_combos, frames
from kapla.space.layer.skeletons import class_table, looping_mask, order_counts, order_product
from kapla.space.problem import Problem
from kapla.workload.layer import Layer

_ORDERS_PER_ROW = 8  # a rough count of order combinations per factor split, to size sampled chunks


@dataclass(frozen=True)
class Found:
    """The best valid candidate of a batch: its (objective, energy) key and its directives."""

    key: tuple[float, float]
    scheme: LayerScheme


class LayerSpace:
    """The frames and blockings of one layer solve (see the module)."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.objective: Objective = objective_of(problem.objective)
        self.frames: tuple[Frame, ...] = _frames(problem.layer, problem.batch, problem.arch)
        self._evaluators: dict[int, FrameEvaluator] = {}
        self._bounds: dict[int, Bound] = {}
        #: a search's memo of what depends on the frames and the feed alone, not on the
        #: objective: shared by the spaces :meth:`under` gives
        self.scratch: dict = {}

    def __len__(self) -> int:
        return len(self.frames)

    def under(self, objective: str) -> LayerSpace:
        """The same space searched for ``objective`` (its frames and their evaluators shared)."""
        other = copy.copy(self)
        other.problem = replace(self.problem, objective=objective)
        other.objective = objective_of(objective)
        return other

    def siblings(self, frame: int) -> tuple[int, ...]:
        """The frames with ``frame``'s spatial choices and rest under every buffer
        sharing (``frame`` among them), in order."""
        return self._sibling_groups[frame]

    @cached_property
    def _sibling_groups(self) -> list[tuple[int, ...]]:
        # :func:`frames` lists a spatial choice's sharing variants with one tuple
        by_spatial: dict[tuple, list[int]] = {}
        for j, f in enumerate(self.frames):
            by_spatial.setdefault((id(f.spatial), f.rest), []).append(j)
        groups: list[tuple[int, ...]] = [()] * len(self.frames)
        for members in by_spatial.values():
            for j in members:
                groups[j] = tuple(members)
        return groups

    def evaluator(self, frame: int) -> FrameEvaluator:
        """The cost-model view of frame ``frame`` (built once)."""
        ev = self._evaluators.get(frame)
        if ev is None:
            ev = self._evaluators[frame] = FrameEvaluator(self.frames[frame], self._hardware)
        return ev

    @cached_property
    def _hardware(self) -> Hardware:
        # resolved once: looking the spec up in the cache hashes it, for every frame
        return hardware(self.problem.arch)

    # ------------------------------------------------------------ candidates

    def sample_frames(self, rng: np.random.Generator, p: float) -> list[int]:
        """Frames kept level by level: at each level, top down, every spatial
        choice (at the node level, a partition with its buffer sharing) that
        has an alternative is kept with probability ``p``; a frame is kept when
        all its choices are. A level with a single choice is always taken."""
        n = len(self.frames[0].spatial) if self.frames else 0
        # top down; the node level's buffer sharing is part of its partition choice
        paths = [((f.spatial[-1], f.shr),) + tuple(reversed(f.spatial[:-1])) for f in self.frames]
        siblings: dict[tuple, set] = {}
        for path in paths:
            for depth in range(n):
                siblings.setdefault(path[:depth], set()).add(path[depth])
        keep: dict[tuple, bool] = {}
        out = []
        for i, path in enumerate(paths):
            ok = True
            for depth in range(n):
                prefix = path[: depth + 1]
                if prefix not in keep:
                    keep[prefix] = len(siblings[path[:depth]]) == 1 or bool(rng.random() < p)
                ok = ok and keep[prefix]
            if ok:
                out.append(i)
        return out

    def blockings(self, frame: int, chunk: int = CHUNK) -> Iterator[Blockings]:
        """Every blocking of the frame that fits the buffers, in chunks."""
        return blockings(self.evaluator(frame), chunk)

    def sample(self, frame: int, rng: np.random.Generator, p_factors: float, p_orders: float,
               chunk: int = CHUNK) -> Iterator[Blockings]:
        """The frame's blockings with each factor split (a register block and a
        loop count per level that fit the buffers) kept with probability
        ``p_factors`` and each of its combinations of loop orders with
        ``p_orders``, in chunks."""
        ev = self.evaluator(frame)
        unit, counts = factor_combos(ev)
        keep = rng.random(unit.shape[0]) < p_factors
        unit, counts = unit[keep], tuple(c[keep] for c in counts)
        table = class_table(ev.frame.layer, DIMS)
        masks = [looping_mask(c) for c in counts]
        rows_per_chunk = max(1, chunk // _ORDERS_PER_ROW)
        for start in range(0, unit.shape[0], rows_per_chunk):
            part = slice(start, start + rows_per_chunk)
            rows, orders = order_product([table] * len(counts), [m[part] for m in masks],
                                         [order_counts(table, m[part]) for m in masks])
            pick = rng.random(len(rows)) < p_orders
            if np.any(pick):
                yield Blockings(unit[part], tuple(c[part] for c in counts), rows[pick],
                                tuple(o[pick] for o in orders))

    def assignment(self, frame: int, unit: Mapping[str, int], counts: Sequence[Mapping[str, int]],
                   orders: Sequence[Sequence[str]] = ()) -> Blockings:
        """One point of the frame from a factor assignment, as a one-candidate
        :class:`Blockings`: ``unit`` the register block's factors beyond the
        frame's spatial unit, ``counts`` each on-chip level's loop counts
        (innermost level first), ``orders`` each level's loop order (dims
        outermost first; dims left out follow in the usual order). A dim
        left out of ``unit`` or a count is 1. What a MIP or a learned search
        decodes its answer into; ValueError when the factors do not cover
        the frame exactly."""
        rest = self.frames[frame].rest
        levels = len(self.frames[frame].spatial)
        if len(counts) != levels or len(orders) not in (0, levels):
            raise ValueError(f"frame {frame} has {levels} levels: give counts (and orders) for each")
        for name in [*unit, *(d for c in counts for d in c), *(d for o in orders for d in o)]:
            if name not in DIMS:
                raise ValueError(f"unknown dim '{name}' (dims: {', '.join(DIMS)})")
        u = np.array([[int(unit.get(d, 1)) for d in DIMS]], dtype=np.int64)
        cs = tuple(np.array([[int(c.get(d, 1)) for d in DIMS]], dtype=np.int64) for c in counts)
        covered = u[0] * np.prod(np.stack([c[0] for c in cs]), axis=0)
        for j, d in enumerate(DIMS):
            if covered[j] != rest[j]:
                raise ValueError(f"dim {d}: the factors cover {covered[j]} of the {rest[j]} steps the frame leaves")
        perms = []
        for lvl in range(levels):
            named = [DIMS.index(d) for d in (orders[lvl] if orders else ())]
            perms.append(np.array([named + [j for j in range(len(DIMS)) if j not in named]], dtype=np.int64))
        return Blockings(u, cs, np.zeros(1, dtype=np.int64), tuple(perms))

    # ------------------------------------------------------------ bounds

    def bound(self, frame: int) -> Bound:
        """Least energy and time of any valid scheme of frame ``frame`` under the
        problem's feed (:func:`~kapla.space.layer.bound.frame_bound`, worked out once)."""
        b = self._bounds.get(frame)
        if b is None:
            b = self._bounds[frame] = frame_bound(self.frames[frame], hardware(self.problem.arch), self.problem.fed)
        return b

    def bound_key(self, frame: int) -> tuple[float, float]:
        """The least ``(objective, energy)`` key a scheme of frame ``frame`` can have."""
        return self.bound(frame).key(self.objective)

    def partial_keys(self, frame: int, top: Sequence[np.ndarray], left: np.ndarray,
                     cutoff: tuple[float, float] | None = None) -> np.ndarray:
        """``(F, 2)`` the least ``(objective, energy)`` key of any completion of each
        partial blocking of frame ``frame``: ``top`` the loop counts of its
        outermost levels (innermost of them first), ``left`` what the unit and
        the levels below still cover (:func:`~kapla.space.layer.bound.partial_bounds`).
        With a ``cutoff``, keys not below it may be the weaker bound without
        loop orders (enough to tell they are not below it)."""
        hw, fed, f = hardware(self.problem.arch), self.problem.fed, self.frames[frame]
        if cutoff is None:
            return self._keys(*partial_bounds(f, hw, fed, top, left))
        keys = self._keys(*partial_bounds(f, hw, fed, top, left, orders=False))
        below = np.flatnonzero(key_below(keys, cutoff))
        if len(below):
            keys[below] = self._keys(*partial_bounds(f, hw, fed, [t[below] for t in top], left[below]))
        return keys

    def _keys(self, energy: np.ndarray, elapsed: np.ndarray) -> np.ndarray:
        return np.stack([np.asarray(self.objective.of(energy, elapsed), dtype=float), energy], axis=1)

    # ------------------------------------------------------------ costs

    def score(self, frame: int, b: Blockings) -> Costs:
        """Costs of the blockings under the problem's feed (invalid ones marked)."""
        return self.evaluator(frame).costs(b, self.problem.fed)

    def best(self, frame: int, b: Blockings, costs: Costs | None = None) -> Found | None:
        """The best valid candidate of ``b`` (None if none is valid); ``costs``: its :meth:`score`, if known."""
        costs = self.score(frame, b) if costs is None else costs
        value = costs.value(self.objective)
        i = self.objective.argbest(value, costs.total)
        if not math.isfinite(value[i]):
            return None
        scheme = self.evaluator(frame).scheme(b, i, self.problem.ifm_name)
        return Found((float(value[i]), float(costs.total[i])), scheme)


@lru_cache(maxsize=32)
def _frames(layer: Layer, batch: int, arch: ArchSpec) -> tuple[Frame, ...]:
    # a network's schedule solves a layer on a block of nodes under several feeds (and objectives):
    # its frames depend on neither (immutable, so shared). A few dozen kept: most of the hits
    # (AlexNet and MobileNet's recorded solves: 33 hits of 49 with 128), a fraction of the memory
    # (a frame list is up to 0.7 MB; ResNet-1001's training DAG held 55 MB more per worker with 128)
    return tuple(frames(layer, batch, arch))


def key_below(keys: np.ndarray, cutoff: tuple[float, float]) -> np.ndarray:
    """``(F,)`` which ``(objective, energy)`` rows of ``keys`` come before ``cutoff``."""
    return (keys[:, 0] < cutoff[0]) | ((keys[:, 0] == cutoff[0]) & (keys[:, 1] < cutoff[1]))


__all__ = ["CHUNK", "Found", "LayerSpace", "key_below"]
