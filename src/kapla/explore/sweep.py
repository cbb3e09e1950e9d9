"""Running many schedules: points (a network, a hardware spec, a solver and
its settings), each scheduled on its own, in local worker processes.

A point that cannot run (its hardware holds no scheme for some layer, a
budget ran out) is a row with its status and reason, never dropped and
never fatal. Rows come back in the order of the points whatever the number
of workers, so a sweep is deterministic.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kapla.api import schedule
from kapla.arch.spec import ArchSpec
from kapla.errors import KaplaError
from kapla.scheduling.workers import check_jobs, worker_pool
from kapla.search.result import cycles
from kapla.space.problem import NoSchemeError
from kapla.workload.network import Network

OK, INFEASIBLE, FAILED = "ok", "infeasible", "failed"

#: ``progress(done, total)`` as points finish.
SweepProgress = Callable[[int, int], None]


@dataclass(frozen=True)
class Point:
    """One schedule of a sweep; ``labels`` say what varies (written into its row)."""

    network: Network | str
    arch: ArchSpec
    batch: int | None = None
    training: bool = False
    solver: str = "kapla"
    objective: str = "energy"
    options: Mapping[str, Any] = field(default_factory=dict)
    labels: Mapping[str, Any] = field(default_factory=dict)


def run_point(point: Point) -> dict[str, Any]:
    """The point scheduled (in this process): its labels, status, energy, time, validity and seconds."""
    start = time.perf_counter()
    row: dict[str, Any] = {**point.labels, "status": OK, "energy_j": None, "time_cycles": None, "valid": False,
                           "message": ""}
    try:
        result = schedule(point.network, point.arch, batch=point.batch, training=point.training,
                          solver=point.solver, solver_options=dict(point.options), objective=point.objective,
                          jobs=1)
    except NoSchemeError as exc:
        row.update(status=INFEASIBLE, message=str(exc))
    except KaplaError as exc:
        row.update(status=FAILED, message=str(exc))
    else:
        row.update(energy_j=result.energy_j, time_cycles=cycles(result.time), valid=result.valid,
                   breakdown=dict(result.energy))
        if not result.valid:
            row.update(status=FAILED, message="the schedule failed the evaluator's check")
    row["seconds"] = time.perf_counter() - start
    return row


def run_points(points: Sequence[Point], jobs: int | None = None,
               progress: SweepProgress | None = None) -> list[dict[str, Any]]:
    """Every point's row, in the order of ``points``; ``jobs`` worker processes
    (default 1: this process), stopped with the sweep however it ends."""
    jobs = check_jobs(jobs) or 1
    rows: list[dict[str, Any]] = []
    with worker_pool(jobs if len(points) > 1 else 1) as pool:
        for row in (map(run_point, points) if pool is None else pool.map(run_point, points)):
            rows.append(row)
            if progress is not None:
                progress(len(rows), len(points))
    return rows


__all__ = ["FAILED", "INFEASIBLE", "OK", "Point", "run_point", "run_points"]
