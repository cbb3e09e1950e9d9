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

from kapla.model.evaluate import evaluate
from kapla.search.base import IntraResult, IntraSolver
from kapla.search.sampling import DEFAULT_P, check_probability, check_seed, generator
from kapla.space.layer.layer_space import Found, LayerSpace
from kapla.space.problem import NoSchemeError, Problem


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


__all__ = ["RandomIntraSolver"]
