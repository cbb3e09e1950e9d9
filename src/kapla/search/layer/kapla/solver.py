"""KAPLA's intra-layer solver (Sec. IV-C, Algorithm 1), over any memory hierarchy.

One descent for every hierarchy (:mod:`kapla.search.layer.kapla.levels`): the
frames of :mod:`kapla.space.layer.frames` ranked by KAPLA's analytic estimates
(:mod:`kapla.search.layer.kapla.estimates`), the best few searched level by
level from the registers out, and the best blockings refined locally.
"""

from __future__ import annotations

from collections.abc import Sequence

from kapla.search.base import IntraResult, IntraSolver, Outcome, Solved
from kapla.search.layer.kapla.levels import REFINE, REFINE_REGF, SEEDS, solve_any_each, solve_levels_each
from kapla.space.problem import NoSchemeError, Problem


class KaplaIntraSolver(IntraSolver):
    """KAPLA's fast intra-layer solver: frames ranked by an estimate (the first
    ``refine``, and ``refine_regf`` more by a register-aware one, re-ranked by
    their best register block), the best ``top`` searched level by level with
    ``units`` register blocks each."""

    name = "kapla"

    def __init__(self, top: int = 4, units: int = 3, refine: int = REFINE, refine_regf: int = REFINE_REGF) -> None:
        self.top = top
        self.units = units
        self.refine = refine
        self.refine_regf = refine_regf

    def run(self, problem: Problem) -> IntraResult:
        found = self.run_each(problem, (problem.objective,))[0]
        if isinstance(found, NoSchemeError):
            raise found
        return found

    def run_each(self, problem: Problem, objectives: Sequence[str]) -> list[Outcome]:
        """The solve under each objective: the frames and their ranking (by
        energy estimates, whatever the objective) are shared, each objective
        descending on its own."""
        return solve_any_each(problem, objectives, self.top, self.units, self.refine, self.refine_regf)

    def schemes_each(self, problem: Problem, objectives: Sequence[str]) -> list[Solved]:
        """:meth:`run_each`'s schemes, not costed (a tenth of an ``edge`` solve's time): a layer
        service's callers cost each scheme where it runs."""
        return [(scheme, True, {}) for scheme, _ in solve_levels_each(problem, objectives, self.top, self.units,
                                                                       self.refine, SEEDS, self.refine_regf)]


__all__ = ["KaplaIntraSolver"]
