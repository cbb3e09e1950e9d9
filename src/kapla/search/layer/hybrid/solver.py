"""A Timeloop-Hybrid-like mapper, CoSA's stronger baseline (Huang et al., ISCA
2021, Sec. V-A; Parashar et al., ISPASS 2019): a random factorisation (each
prime factor of the layer's loop bounds at a random level, spatially or
temporally: :mod:`kapla.space.layer.factors`), then every order of the
permuted level's loops that differ (loops of one iteration pruned), explored
in turn; a search stops after ``patience`` consecutive valid mappings that
do not improve on its best, after ``samples`` mappings, or when the
``time_budget`` (seconds, all searches together) runs out. Like Timeloop's
threads, ``threads`` such searches run, one after another here, each from
its own seeded stream, and the best of all wins (4 by default: Timeloop ran
32, ``-O threads=32``, eight times as long). Seeded from ``seed`` and
the layer solve."""

from __future__ import annotations

import itertools
import time

from kapla.model.cost import evaluate_nests
from kapla.model.evaluate import evaluate
from kapla.model.nests import from_schemes
from kapla.model.objective import objective_of
from kapla.search.base import IntraResult, IntraSolver
from kapla.search.sampling import check_seed, generator
from kapla.space.layer.factors import FactorSpace, level0_choices
from kapla.space.problem import NoSchemeError, Problem

MAX_ORDERS = 720  # orders of one factorisation explored, at most (6 looping dims)
BATCH = 256  # mappings costed per model call


class HybridSolver(IntraSolver):
    """Random factorisations, each explored over its pruned loop orders, until
    ``patience`` valid mappings in a row do not improve."""

    name = "hybrid"

    def __init__(self, patience: int = 500, samples: int = 200_000, threads: int = 4, seed: int = 0,
                 time_budget: float | None = None) -> None:
        for key, value in (("patience", patience), ("samples", samples), ("threads", threads)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key} must be a whole number of at least 1, got {value!r}")
        self.patience, self.samples, self.threads, self.seed = patience, samples, threads, check_seed(seed)
        self.time_budget = time_budget

    def run(self, problem: Problem) -> IntraResult:
        start = time.perf_counter()
        spaces = [FactorSpace(problem, fixed) for fixed in level0_choices(problem)]
        objective = objective_of(problem.objective)
        best, best_key = None, None
        drawn = valid = 0
        cut = False
        for thread in range(self.threads):
            rng = generator(self.seed, problem.key, thread)
            mine, stale, mine_drawn = None, 0, 0
            while stale < self.patience and mine_drawn < self.samples:
                if self.time_budget is not None and time.perf_counter() - start > self.time_budget:
                    cut = True
                    break
                # factorisations drawn ahead and costed together (the model's per-call cost
                # dwarfs a few mappings); they are taken in order, so the search is the same
                schemes: list = []
                while len(schemes) < BATCH:
                    space = spaces[int(rng.integers(len(spaces)))]
                    schemes += [space.scheme(p) for p in _orders(space, space.sample(rng))]
                schemes = schemes[:self.samples - mine_drawn]
                costs = evaluate_nests(from_schemes(schemes), problem.arch, problem.fed)
                value = costs.value(objective)
                ok = costs.valid
                for i in range(len(schemes)):
                    mine_drawn += 1
                    if not ok[i]:
                        continue
                    valid += 1
                    key = (float(value[i]), float(costs.total[i]))
                    if mine is None or key < mine:
                        mine, stale = key, 0
                    else:
                        stale += 1
                    if best_key is None or key < best_key:
                        best, best_key = schemes[i], key
                    if stale == self.patience:
                        break
            drawn += mine_drawn
            if cut:
                break
        if best is None:
            raise NoSchemeError(f"the Hybrid-like mapper found no valid scheme for layer '{problem.layer.name}' "
                                f"in {drawn} mappings; raise samples")
        cost = evaluate(best, problem.arch, problem.feed)
        return IntraResult(best, cost, drawn, time.perf_counter() - start, complete=not cut,
                           details={"samples": drawn, "valid": valid, "threads": self.threads})


def _orders(space: FactorSpace, placement: list[int]) -> list[list[int]]:
    """The placement under every order of its permuted level's looping dims
    (the factors of one dim kept together, ranks from the innermost)."""
    ranks = [s for s, slot in enumerate(space.slots) if slot.kind == "rank"]
    at = [f for f, s in enumerate(placement) if space.slots[s].kind == "rank"]
    dims = list(dict.fromkeys(space.factors[f].dim for f in sorted(at)))
    out = []
    for order in itertools.islice(itertools.permutations(dims), MAX_ORDERS):
        p = list(placement)
        z = 0
        for d in order:
            for f in at:
                if space.factors[f].dim == d:
                    p[f] = ranks[z]
                    z += 1
        out.append(p)
    return out  # with nothing at the permuted level, the one empty order: the placement itself


__all__ = ["HybridSolver", "MAX_ORDERS"]
