"""CoSA as a kapla layer solver: one MIP per layer solve (per level-0 template
choice where the hardware fixes one), solved by HiGHS, decoded into kapla's
directives and costed by kapla's evaluator like any other solver's scheme."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

from kapla.model.evaluate import evaluate
from kapla.search.base import IntraResult, IntraSolver
from kapla.search.layer.cosa.formulation import Formulation, Weights
from kapla.search.layer.cosa.mip import INFEASIBLE, OPTIMAL, TIME_LIMIT, relaxed, require, solve
from kapla.space.layer.factors import FactorSpace, level0_choices
from kapla.space.problem import NoSchemeError, Problem

#: Seconds allowed to complete the smallest blocks when the time limit found no point.
FALLBACK_SECONDS = 5.0


@dataclass(frozen=True)
class _Tried:
    status: str
    objective: float
    gap: float
    seconds: float
    terms: dict
    why: str = ""


class CosaSolver(IntraSolver):
    """CoSA's one-shot MIP (time limit per layer solve in seconds, relative gap, objective weights)."""

    name = "cosa"

    def __init__(self, time_limit: float = 60.0, gap: float = 1e-4, w_util: float = 0.1, w_compute: float = 10.0,
                 w_traffic: float = 1.0) -> None:
        require()
        if not time_limit > 0:
            raise ValueError(f"time_limit must be positive (got {time_limit})")
        if not 0 <= gap < 1:
            raise ValueError(f"gap must be in [0, 1) (got {gap})")
        for key, value in (("w_util", w_util), ("w_compute", w_compute), ("w_traffic", w_traffic)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{key} must be a finite number (got {value!r})")
        self.time_limit, self.gap = float(time_limit), float(gap)
        self.weights = Weights(float(w_util), float(w_compute), float(w_traffic))

    def run(self, problem: Problem) -> IntraResult:
        start = time.perf_counter()
        # one program per level-0 choice, solved in the order of their relaxations' bounds;
        # a choice whose bound cannot beat the best answer found is left out (it could not win)
        options = level0_choices(problem)
        built: list[tuple[float, FactorSpace, Formulation]] = []
        for fixed in options:
            space = FactorSpace(problem, fixed)
            form = Formulation(space, self.weights)
            built.append((relaxed(form.p) if len(options) > 1 else -math.inf, space, form))
        built.sort(key=lambda b: b[0])  # stable: equal bounds keep kapla's order of the choices
        tried: list[_Tried] = []
        best = None
        pruned = 0
        for k, (bound, space, form) in enumerate(built):
            left = self.time_limit - (time.perf_counter() - start)
            if left <= 0:
                break
            if best is not None and bound >= best[0] - 1e-9:
                pruned += 1
                continue
            # the most promising choices first, with the larger shares of the time left
            answer = solve(form.p, left / 2 if k < len(built) - 1 else left, self.gap)
            if answer.values is None and answer.status == TIME_LIMIT:
                # no point found in time: the smallest blocks, if they fit, rather than nothing
                fallback = solve(form.fixed_to(space.smallest_blocks()), FALLBACK_SECONDS, self.gap)
                if fallback.values is not None:
                    answer = replace(fallback, status=TIME_LIMIT, gap=math.inf,
                                     seconds=answer.seconds + fallback.seconds)
            if answer.values is None:
                tried.append(_Tried(answer.status, math.inf, math.inf, answer.seconds, {},
                                    "no feasible point" if answer.status == INFEASIBLE else "none found in time"))
                continue
            scheme = space.scheme(form.placement(answer.values))
            cost = evaluate(scheme, problem.arch, problem.feed)
            terms = form.term_values(answer.values)
            if not cost.valid:
                tried.append(_Tried(answer.status, answer.objective, answer.gap, answer.seconds, terms,
                                    "; ".join(cost.validity.reasons)))
                continue
            tried.append(_Tried(answer.status, answer.objective, answer.gap, answer.seconds, terms))
            if best is None or answer.objective < best[0] - 1e-9:
                best = (answer.objective, scheme, cost, tried[-1])
        if best is None:
            why = "; ".join(f"{t.status}: {t.why}" for t in tried) or "out of time"
            raise NoSchemeError(f"CoSA found no valid scheme for layer '{problem.layer.name}' ({why})")
        _, scheme, cost, chosen = best
        complete = len(tried) + pruned == len(built) and all(t.status == OPTIMAL for t in tried)
        details = {"mip_status": chosen.status, "mip_gap": chosen.gap if math.isfinite(chosen.gap) else None,
                   "mip_objective": chosen.objective,
                   "mip_terms": chosen.terms, "solve_seconds": sum(t.seconds for t in tried),
                   "mip_choices": len(built), "mip_choices_pruned": pruned}
        return IntraResult(scheme, cost, len(tried), time.perf_counter() - start, complete=complete, details=details)


__all__ = ["CosaSolver"]
