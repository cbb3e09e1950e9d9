"""Worker processes that solve layers in parallel, and that stop with the run.

The pool's workers start from a forkserver, not by fork: a forked worker
inherits the state of libraries that run threads (XGBoost's OpenMP pool
deadlocks in a child forked after the parent used it). However a run ends
(an error, Ctrl-C, or SIGTERM, which is turned into ``SystemExit`` for the
run's duration so the cleanup below runs), its workers are stopped at once
rather than left to finish, or run on, the layer solves they hold.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager

from kapla.errors import KaplaError


def check_jobs(jobs: int | None) -> int | None:
    """``jobs`` as a worker count: None (the default) or a whole number of at least 1."""
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise KaplaError(f"jobs must be a whole number of at least 1 (got {jobs!r})")
    return jobs


@contextmanager
def worker_pool(jobs: int, always: bool = False) -> Iterator[ProcessPoolExecutor | None]:
    """A pool of ``jobs`` workers (None for a single job, solving in this
    process, unless ``always``: a worker can be stopped mid-solve, this process cannot)."""
    if jobs <= 1 and not always:
        yield None
        return
    pool = ProcessPoolExecutor(max(jobs, 1), mp_context=multiprocessing.get_context("forkserver"),
                               initializer=_ignore_interrupts)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield pool
    except BrokenProcessPool:
        stop_workers(pool)
        raise KaplaError(
            "kapla's worker processes stopped unexpectedly. Run from a script, kapla must be called under "
            "`if __name__ == \"__main__\":` (each worker imports the script); or pass jobs=1 (--jobs 1)") from None
    except BaseException:
        stop_workers(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def stop_workers(pool: Executor) -> None:
    """Terminate the pool's workers, busy or not."""
    # The executor has no public way to stop busy workers before Python 3.14
    # (terminate_workers); its process table is the only handle on them.
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _ignore_interrupts() -> None:
    # Ctrl-C reaches the whole process group; the parent handles it and stops the workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


__all__ = ["check_jobs", "stop_workers", "worker_pool"]
