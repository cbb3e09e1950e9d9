"""A small mixed-integer linear program and its solution by HiGHS.

The formulation builds a :class:`Program` (columns with bounds and
integrality, sparse rows, a linear objective to minimise); :func:`solve`
hands it to HiGHS (``highspy``, the ``mip`` extra) on one thread with a fixed
seed, so the same program gives the same answer, and reports whether the
answer is proven optimal, cut short by the time limit, or infeasible.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from kapla.errors import KaplaError

OPTIMAL, TIME_LIMIT, INFEASIBLE = "optimal", "time limit", "infeasible"
MISSING = "the cosa solver needs HiGHS: pip install 'kapla[mip]' (highspy)"


@dataclass
class Program:
    """A MILP under construction: minimise ``cost . x`` subject to ``lo <= A x <= hi``."""

    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    cost: list[float] = field(default_factory=list)
    rows: list[tuple[dict[int, float], float, float]] = field(default_factory=list)
    offset: float = 0.0

    def var(self, lower: float = 0.0, upper: float = 1.0, integer: bool = True) -> int:
        self.lower.append(lower)
        self.upper.append(upper)
        self.integer.append(integer)
        self.cost.append(0.0)
        return len(self.cost) - 1

    def add(self, coefs: Mapping[int, float], lo: float = -math.inf, hi: float = math.inf) -> None:
        """The row ``lo <= sum(c * x[j]) <= hi`` (terms of one column summed)."""
        row = {j: c for j, c in coefs.items() if c != 0.0}
        if row:
            self.rows.append((row, lo, hi))
        elif lo > 1e-9 or hi < -1e-9:
            self.rows.append(({0: 0.0}, lo, hi))  # a constant row that cannot hold: the program is infeasible

    def minimise(self, coefs: Mapping[int, float], constant: float = 0.0) -> None:
        for j, c in coefs.items():
            self.cost[j] += c
        self.offset += constant

    @property
    def columns(self) -> int:
        return len(self.cost)


@dataclass(frozen=True)
class Answer:
    """What the solver made of a program: its status, the values (None when
    there are none), the objective, the relative gap to the bound, seconds."""

    status: str
    values: np.ndarray | None
    objective: float
    gap: float
    seconds: float


def require() -> None:
    """KaplaError naming what to install when HiGHS is missing."""
    try:
        import highspy  # noqa: F401
    except ImportError:
        raise KaplaError(MISSING) from None


def solve(program: Program, time_limit: float | None = None, gap: float = 1e-4) -> Answer:
    """``program`` solved by HiGHS; ``time_limit`` in seconds (None: none),
    ``gap``: the relative gap at which an answer counts as optimal. HiGHS's
    presolve has called feasible programs infeasible (the chords of a shared
    buffer): an infeasible verdict is confirmed without it."""
    start = time.perf_counter()
    answer = _solve(program, time_limit, gap, presolve=True)
    if answer.status == INFEASIBLE:
        left = None if time_limit is None else time_limit - (time.perf_counter() - start)
        if left is None or left > 0:
            answer = _solve(program, left, gap, presolve=False)
    return Answer(answer.status, answer.values, answer.objective, answer.gap, time.perf_counter() - start)


def relaxed(program: Program) -> float:
    """The least objective of ``program`` with its integer columns relaxed: a
    lower bound of its optimum (inf: not even the relaxation is feasible)."""
    loose = Program(program.lower, program.upper, [False] * program.columns, program.cost, program.rows,
                    program.offset)
    answer = solve(loose, None, 0.0)
    return answer.objective if answer.values is not None else math.inf


def _solve(program: Program, time_limit: float | None, gap: float, presolve: bool) -> Answer:
    require()
    import highspy

    start = time.perf_counter()
    h = highspy.Highs()
    for name, value in (("output_flag", False), ("threads", 1), ("random_seed", 0), ("mip_rel_gap", float(gap)),
                        ("mip_abs_gap", 1e-9), ("presolve", "on" if presolve else "off")):
        h.setOptionValue(name, value)
    if time_limit is not None:
        h.setOptionValue("time_limit", max(float(time_limit), 0.01))
    lp = highspy.HighsLp()
    n = program.columns
    lp.num_col_ = n
    lp.num_row_ = len(program.rows)
    lp.col_cost_ = np.array(program.cost, dtype=float)
    lp.col_lower_ = np.array(program.lower, dtype=float)
    lp.col_upper_ = np.array(program.upper, dtype=float)
    lp.offset_ = float(program.offset)
    lp.row_lower_ = np.array([lo for _, lo, _ in program.rows], dtype=float)
    lp.row_upper_ = np.array([hi for _, _, hi in program.rows], dtype=float)
    starts: list[int] = [0]
    index: list[int] = []
    entries: list[float] = []
    for coefs, _, _ in program.rows:
        for j in sorted(coefs):
            index.append(j)
            entries.append(coefs[j])
        starts.append(len(index))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(entries, dtype=float)
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = len(program.rows)
    kinds = highspy.HighsVarType
    lp.integrality_ = [kinds.kInteger if flag else kinds.kContinuous for flag in program.integer]
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    info = h.getInfo()
    seconds = time.perf_counter() - start
    has_values = info.primal_solution_status == 2  # a feasible point is known
    values = np.array(h.getSolution().col_value, dtype=float) if has_values else None
    if status == highspy.HighsModelStatus.kOptimal:
        verdict = OPTIMAL
    elif status in (highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kUnboundedOrInfeasible):
        verdict = INFEASIBLE
    else:
        verdict = TIME_LIMIT
    objective = float(info.objective_function_value) if values is not None else math.inf
    gap_value = float(info.mip_gap) if values is not None else math.inf
    return Answer(verdict, values, objective, gap_value if math.isfinite(gap_value) else math.inf, seconds)


__all__ = ["INFEASIBLE", "MISSING", "OPTIMAL", "TIME_LIMIT", "Answer", "Program", "relaxed", "require", "solve"]
