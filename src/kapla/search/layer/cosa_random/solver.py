"""CoSA's Random baseline (Huang et al., ISCA 2021, Sec. V-A): placements of
the layer's prime factors drawn at random (:mod:`kapla.space.layer.factors`,
the space CoSA's MIP searches) until ``valid`` of them pass the evaluator's
rules or ``samples`` were drawn; the best valid one wins. Seeded from
``seed`` and the layer solve, so a run repeats exactly."""

from __future__ import annotations

import time

import numpy as np

from kapla.model.cost import evaluate_nests
from kapla.model.evaluate import evaluate
from kapla.model.nests import from_schemes
from kapla.model.objective import objective_of
from kapla.search.base import IntraResult, IntraSolver
from kapla.search.sampling import check_seed, generator
from kapla.space.layer.factors import FactorSpace, level0_choices
from kapla.space.problem import NoSchemeError, Problem

BATCH = 256  # placements costed per model call


class CosaRandomSolver(IntraSolver):
    """The best of ``valid`` valid random placements (at most ``samples`` drawn)."""

    name = "cosa_random"

    def __init__(self, valid: int = 5, samples: int = 20_000, seed: int = 0) -> None:
        for key, value in (("valid", valid), ("samples", samples)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key} must be a whole number of at least 1, got {value!r}")
        self.valid, self.samples, self.seed = valid, samples, check_seed(seed)

    def run(self, problem: Problem) -> IntraResult:
        start = time.perf_counter()
        rng = generator(self.seed, problem.key)
        spaces = [FactorSpace(problem, fixed) for fixed in level0_choices(problem)]
        objective = objective_of(problem.objective)
        best, best_key, found, drawn = None, None, 0, 0
        while found < self.valid and drawn < self.samples:
            n = min(BATCH, self.samples - drawn)
            picks = rng.integers(len(spaces), size=n)
            schemes = [spaces[int(k)].scheme(spaces[int(k)].sample(rng)) for k in picks]
            drawn += n
            costs = evaluate_nests(from_schemes(schemes), problem.arch, problem.fed)
            value = costs.value(objective)
            for i in np.flatnonzero(costs.valid):
                if found == self.valid:
                    break
                found += 1
                key = (float(value[i]), float(costs.total[i]))
                if best_key is None or key < best_key:
                    best, best_key = schemes[int(i)], key
        if best is None:
            raise NoSchemeError(f"random placements found no valid scheme for layer '{problem.layer.name}' "
                                f"in {drawn} samples; raise samples")
        cost = evaluate(best, problem.arch, problem.feed)
        return IntraResult(best, cost, drawn, time.perf_counter() - start, complete=found == self.valid,
                           details={"samples": drawn, "valid": found})


__all__ = ["CosaRandomSolver"]
