"""Running a named solver on a network: its network scheduler and layer
solver from the registry, the layer service (worker pool, cache, store) they
share, and one typed :class:`~kapla.search.result.ScheduleResult`."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kapla.arch.spec import ArchSpec
from kapla.model.objective import Objective, objective_of
from kapla.scheduling.collector import rare_full_collections
from kapla.scheduling.layers import LayerService
from kapla.scheduling.registry import accepted_options, make_solver
from kapla.scheduling.store import LayerStore
from kapla.scheduling.workers import check_jobs, worker_pool
from kapla.search.base import IntraSolver, NetworkScheduler, NetworkTask, Progress
from kapla.search.result import LayerResult, ScheduleResult, StoreUse
from kapla.space.options import SearchOptions
from kapla.workload.network import Network

MAX_DEFAULT_JOBS = 4  # worker processes by default: more rarely pays on one machine (layers are few and short)


def run(net: Network, arch: ArchSpec, solver: str = "kapla", *, options: Mapping[str, Any] | None = None,
        objective: Objective | str = "energy", search: SearchOptions | None = None,
        time_budget: float | None = None, jobs: int | None = None, progress: Progress | None = None,
        store: LayerStore | None = None) -> ScheduleResult:
    """Schedule ``net`` on ``arch`` with the registered solver ``solver`` (its
    parts' ``options``), under the run's ``search`` options."""
    search = SearchOptions() if search is None else search
    options = dict(options or {})
    if "top_k" in accepted_options(solver):
        options.setdefault("top_k", search.top_k)
    scheduler, layer_solver = make_solver(solver, options, budget=time_budget)
    result = run_parts(net, search.apply(arch), scheduler, layer_solver, objective, jobs=jobs, progress=progress,
                       store=store)
    return replace(result, solver=solver)


def run_parts(net: Network, arch: ArchSpec, scheduler: NetworkScheduler, layer_solver: IntraSolver,
              objective: Objective | str = "energy", *, jobs: int | None = None, progress: Progress | None = None,
              store: LayerStore | None = None) -> ScheduleResult:
    """Schedule ``net`` on ``arch`` with these parts. ``jobs`` worker
    processes solve layers in parallel (default: one per CPU, at most
    ``MAX_DEFAULT_JOBS``); the result does not depend on it. With a
    ``store``, layer solves it holds are taken from it and new ones recorded
    as they finish, so a run that was stopped resumes without solving a layer
    twice."""
    obj = objective_of(objective)
    start = time.perf_counter()
    check_jobs(jobs)
    jobs = min(os.cpu_count() or 1, MAX_DEFAULT_JOBS) if jobs is None else jobs
    # A budget is kept by stopping workers: even one job then solves in a worker process.
    with rare_full_collections(), worker_pool(jobs, always=scheduler.time_budget is not None,
                                              preload=(type(layer_solver).__module__,)) as pool:
        service = LayerService(layer_solver, arch, pool, store)
        result = scheduler.schedule(NetworkTask(net, arch, obj, progress, start), service)

    def reported(lr: LayerResult) -> LayerResult:
        # what the layer solver reported of its own for the scheme (a MIP's status, gap and objective);
        # a layer with nothing to add is kept as it is (ResNet-1001: 1,338 layers, most solvers report nothing)
        details = service.details_of(lr.scheme)
        return lr if details == lr.solver_details else replace(lr, solver_details=details)

    result = replace(result, layers=tuple(map(reported, result.layers)))
    if store is not None:
        result = replace(result, store=StoreUse(str(store.path), service.reused, service.new))
    return result


__all__ = ["MAX_DEFAULT_JOBS", "run", "run_parts"]
