"""Running many schedules: points (a network, a hardware spec, a solver and
its settings), each scheduled on its own, in local worker processes or on
a Ray cluster (:mod:`kapla.explore.executors`).

A point that cannot run (its hardware holds no scheme for some layer, a
budget ran out) is a row with its status and reason, never dropped and
never fatal. Rows come back in the order of the points whatever the number
of workers or the executor, so a sweep is deterministic. With a store
(:mod:`kapla.explore.store`) each row is kept the moment its point finishes
and a point already kept is not run again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kapla.api import schedule
from kapla.arch.spec import ArchSpec
from kapla.errors import KaplaError
from kapla.scheduling.workers import check_jobs
from kapla.search.result import LayerResult, cycles
from kapla.space.problem import NoSchemeError
from kapla.workload.network import Network

if TYPE_CHECKING:
    from kapla.explore.store import PointStore

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


def pe_utilisation(layers: Sequence[LayerResult]) -> float:
    """The share of PE-cycles doing a MAC over the layers (each on its region,
    for its time): the layers' own utilisations weighted by PE-cycles."""
    busy = sum(lr.pes * lr.cost.time for lr in layers)
    return sum(lr.macs for lr in layers) / busy if busy > 0 else 0.0


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
                   breakdown=dict(result.energy), utilisation=pe_utilisation(result.layers))
        if not result.valid:
            row.update(status=FAILED, message="the schedule failed the evaluator's check")
    row["seconds"] = time.perf_counter() - start
    return row


def run_points(points: Sequence[Point], jobs: int | None = None, progress: SweepProgress | None = None,
               store: PointStore | str | Path | None = None, executor: str = "local",
               address: str | None = None) -> list[dict[str, Any]]:
    """Every point's row, in the order of ``points``. ``jobs`` worker processes
    (default 1: this process; on Ray, the CPUs of a local cluster), stopped with
    the sweep however it ends; ``store`` (a directory) keeps each finished row
    and supplies the rows of points it holds (those rows say ``"stored": true``);
    ``executor`` ``"local"`` or ``"ray"`` (``address``: the cluster's, else
    ``RAY_ADDRESS``, else a local one)."""
    from kapla.explore.executors import run_unordered
    from kapla.explore.store import PointStore, point_key

    jobs = check_jobs(jobs) or 1
    if store is not None and not isinstance(store, PointStore):
        store = PointStore(store)
    keys = [point_key(p) for p in points] if store is not None else []
    rows: list[dict[str, Any] | None] = [None] * len(points)
    todo = []
    for i, point in enumerate(points):
        kept = store.get(keys[i]) if store is not None else None
        if kept is None:
            todo.append(i)
        else:
            rows[i] = {**kept, **point.labels, "stored": True}
    done = len(points) - len(todo)
    if progress is not None:
        progress(done, len(points))
    for i, row in run_unordered(executor, [points[i] for i in todo], jobs, address):
        index = todo[i]
        if store is not None:
            store.put(keys[index], points[index], row)
        rows[index] = row
        done += 1
        if progress is not None:
            progress(done, len(points))
    return [row for row in rows if row is not None]


__all__ = ["FAILED", "INFEASIBLE", "OK", "Point", "run_point", "run_points"]
