"""Where a sweep's points run: local worker processes, or a Ray cluster.

Both yield ``(index, row)`` as points finish (in any order: the sweep puts
them back in order and stores each at once). However the sweep ends, the
points still running are stopped: local workers are terminated, Ray tasks
cancelled, and a Ray runtime started here is shut down.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, wait
from typing import Any

from kapla.errors import KaplaError
from kapla.scheduling.workers import worker_pool

EXECUTORS = ("local", "ray")


def run_unordered(executor: str, points: Sequence[Any], jobs: int, address: str | None = None
                  ) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(index, row)`` of each of ``points`` (:class:`~kapla.explore.sweep.Point`) as it finishes."""
    if executor == "local":
        if address is not None:
            raise KaplaError("--ray-address: only with --executor ray")
        return _local(points, jobs)
    if executor == "ray":
        return _ray(points, jobs, address)
    raise KaplaError(f"unknown executor '{executor}'; choose one of {', '.join(EXECUTORS)}")


def _local(points: Sequence[Any], jobs: int) -> Iterator[tuple[int, dict[str, Any]]]:
    from kapla.explore.sweep import run_point

    if not points:
        return
    with worker_pool(min(jobs, len(points))) as pool:
        if pool is None:
            for i, point in enumerate(points):
                yield i, run_point(point)
            return
        futures = {pool.submit(run_point, point): i for i, point in enumerate(points)}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            # several may finish together: in the order of the points, so a run is reproducible
            for future in sorted(done, key=futures.__getitem__):
                yield futures[future], future.result()


def _ray(points: Sequence[Any], jobs: int, address: str | None) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        import ray
    except ImportError:
        raise KaplaError("--executor ray needs Ray: pip install 'kapla[ray]'") from None
    from kapla.explore.sweep import run_point

    if not points:
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    started = not ray.is_initialized()
    if started:
        try:
            if address is None:
                ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False, configure_logging=False)
            else:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise KaplaError(f"--executor ray: cannot reach a Ray cluster at {address or 'a new local one'} "
                             f"({' '.join(str(exc).split())[:200]})") from None
    task = ray.remote(num_cpus=1, max_retries=0)(run_point)
    refs = {task.remote(point): i for i, point in enumerate(points)}
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield refs[ref], ray.get(ref)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()


__all__ = ["EXECUTORS", "run_unordered"]
