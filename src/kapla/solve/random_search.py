"""Random search, Timeloop-style (KAPLA Sec. V-A, baseline R).

At every level of choice of a layer's space (node partitions, each with its
buffer sharing; the spatial choices of each array; blockings; loop orders) each
candidate is evaluated with probability ``p``; the best valid scheme of those
evaluated wins. A level with a single choice is always taken. The generator
is seeded from ``seed`` and the layer solve itself (its shape, hardware,
objective and feed), so a run repeats exactly whatever order the layers are
solved in, in one process or many.
"""

from __future__ import annotations

import time
import zlib

import numpy as np

from kapla.model.evaluate import evaluate
from kapla.solve.base import IntraResult, IntraSolver, NoSchemeError, Problem
from kapla.solve.layer_space import Found, LayerSpace

DEFAULT_P = 0.1  # the paper's setting on the multi-node accelerator


def check_probability(p: float) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 1:
        raise ValueError(f"p must be a probability in (0, 1], got {p!r}")
    return float(p)


def check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a whole number of at least 0, got {seed!r}")
    return seed


def generator(seed: int, *parts: object) -> np.random.Generator:
    """A generator seeded by ``seed`` and ``parts`` (by their text, so the same
    inputs give the same stream in every process)."""
    return np.random.default_rng([seed, zlib.crc32(repr(parts).encode())])


class RandomIntraSolver(IntraSolver):
    """Each candidate of the layer's space evaluated with probability ``p``."""

    name = "random"

    def __init__(self, p: float = DEFAULT_P, seed: int = 0, time_budget: float | None = None) -> None:
        self.p = check_probability(p)
        self.seed = check_seed(seed)
        self.time_budget = time_budget

    def run(self, problem: Problem) -> IntraResult:
        start = time.perf_counter()
        space = LayerSpace(problem)
        rng = generator(self.seed, problem.key)
        best: Found | None = None
        evaluated = 0
        cut = False

        def out_of_time() -> bool:  # then the best found so far stands
            nonlocal cut
            cut = cut or (self.time_budget is not None and time.perf_counter() - start > self.time_budget)
            return cut

        for frame in space.sample_frames(rng, self.p):
            if out_of_time():
                break
            for chunk in space.sample(frame, rng, self.p, self.p):
                if out_of_time():
                    break
                found = space.best(frame, chunk)
                evaluated += len(chunk)
                if found is not None and (best is None or found.key < best.key):
                    best = found
        if best is None:
            layer = problem.layer
            raise NoSchemeError(f"random search (p={self.p:g}, seed={self.seed}) found no valid scheme for layer "
                                f"'{layer.name}' among the {evaluated} it evaluated; raise p")
        cost = evaluate(best.scheme, problem.arch, problem.feed)
        return IntraResult(best.scheme, cost, evaluated, time.perf_counter() - start, complete=not cut)


__all__ = ["DEFAULT_P", "RandomIntraSolver", "check_probability", "check_seed", "generator"]
