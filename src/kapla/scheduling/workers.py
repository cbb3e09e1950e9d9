"""Worker processes that solve layers in parallel, and that stop with the run.

The pool's workers start from a forkserver, not by fork: a forked worker
inherits the state of libraries that run threads (XGBoost's OpenMP pool
deadlocks in a child forked after the parent used it). However a run ends
(an error, Ctrl-C, or SIGTERM, which is turned into ``SystemExit`` for the
run's duration so the cleanup below runs), its workers are stopped at once
rather than left to finish, or run on, the layer solves they hold.

Start-up is kept short: every worker is started when the pool is made,
not when the first solve is submitted, and imports what it needs
(``preload``: numpy, the solver) at once; this process makes the first
solves itself until they are up (:meth:`WorkerPool.ready`). A run with no
budget has the forkserver import those modules once, before it forks the
workers, so no worker imports them again (the workers are started from a
thread that waits for that import, not this process: a budgeted run, which
must stay able to stop on time, has its workers import on their own). The
forkserver is started once per process, by the first pool.
"""

from __future__ import annotations

import importlib
import multiprocessing
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any

from kapla.errors import KaplaError


def check_jobs(jobs: int | None) -> int | None:
    """``jobs`` as a worker count: None (the default) or a whole number of at least 1."""
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise KaplaError(f"jobs must be a whole number of at least 1 (got {jobs!r})")
    return jobs


class WorkerPool(ProcessPoolExecutor):
    """A process pool whose workers all start when it is made, each importing
    ``preload`` first, and that says when they are up.

    The workers are started from a thread of their own: starting one waits
    for the forkserver, which imports numpy and the solver first (about 0.4 s),
    and this process solves layers meanwhile instead of waiting."""

    def __init__(self, workers: int, preload: Sequence[str] = (), **options: Any) -> None:
        super().__init__(workers, **options)
        self.stopped = False  # its workers were stopped on purpose (a budget ran out)
        self._up: list[Future[None]] = []
        self._error: BaseException | None = None
        self._starter = threading.Thread(target=self._start, args=(workers, tuple(preload)), daemon=True,
                                         name="kapla-worker-start")
        self._starter.start()

    def _start(self, workers: int, preload: tuple[str, ...]) -> None:
        # each submission to a pool with no idle worker starts one
        try:
            for _ in range(workers):
                if self.stopped:
                    return
                self._up.append(self.submit(_started, preload))
        except BaseException as exc:  # noqa: BLE001 - re-raised by started(), in the thread that waits
            self._error = exc

    def ready(self) -> bool:
        """Whether the workers have started and imported what they need."""
        return not self._starter.is_alive() and self._error is None and all(f.done() for f in self._up)

    def started(self) -> None:
        """Wait until the workers are up; BrokenProcessPool if they could not start
        (not when they were stopped on purpose)."""
        self._starter.join()
        if self.stopped:
            return
        if self._error is not None:
            raise self._error
        for future in self._up:
            future.result()

    def submit(self, *args: Any, **kwargs: Any) -> Future[Any]:
        if threading.current_thread() is not self._starter:
            # a solve submitted while workers still start would start one itself: wait for the starter instead
            self._starter.join()
        return super().submit(*args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._starter.join()  # no worker is started while the pool shuts down
        super().shutdown(wait, cancel_futures=cancel_futures)


#: the interpreter's switch interval while a pool runs (seconds): its threads get the lock soon
_SWITCH_SECONDS = 0.0005

#: What every worker imports: the layer service's solve and what it needs (numpy, the cost model).
PRELOAD = ("kapla.scheduling.layers",)


@contextmanager
def worker_pool(jobs: int, always: bool = False, preload: Sequence[str] = ()) -> Iterator[WorkerPool | None]:
    """A pool of ``jobs`` workers, all started at once (None for a single job,
    solving in this process, unless ``always``: a worker can be stopped
    mid-solve, this process cannot). Each worker imports :data:`PRELOAD` and
    the modules ``preload`` names as it starts (from the forkserver, if it is
    started here with no ``always``: see the module)."""
    if jobs <= 1 and not always:
        yield None
        return
    context = multiprocessing.get_context("forkserver")
    modules = tuple(dict.fromkeys((*PRELOAD, *preload)))
    # "__main__" first, as by default: a worker runs the script's imports as it always did
    context.set_forkserver_preload(["__main__"] + ([] if always else list(modules)))
    workers = max(jobs, 1)
    previous = previous_int = None
    _STOPPED_BY.clear()
    if threading.current_thread() is threading.main_thread():
        # before the first worker starts: a SIGTERM from then on stops them all
        previous = signal.signal(signal.SIGTERM, _terminated)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            previous_int = signal.signal(signal.SIGINT, _interrupted)
    pool: WorkerPool | None = None
    # The pool's threads in this process (the executor's manager, its queue's feeder) hand each
    # worker its next solve and take its answer; while this thread costs segments they wait for
    # the interpreter's lock, by default up to 5 ms a time, and a worker with a solve of 10 ms
    # waits with them (EfficientNet-B0 on ``edge``, three pairs of runs: 1.30-1.43 -> 1.26-1.33 s)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, _SWITCH_SECONDS))
    try:
        pool = WorkerPool(workers, modules, mp_context=context, initializer=_ignore_interrupts)
        yield pool
        # a run this process finished alone still says when its workers could not start (a script
        # without the main guard): the error does not depend on how fast the solves were
        pool.started()
    except BrokenProcessPool:
        if pool is not None:
            stop_workers(pool)
        # a Ctrl-C reaches the whole process group: a worker it killed before it could ignore
        # it breaks the pool, sometimes before this process sees its own interrupt
        if _STOPPED_BY:
            raise (KeyboardInterrupt() if _STOPPED_BY[0] == signal.SIGINT else SystemExit(128 + _STOPPED_BY[0])) \
                from None
        raise KaplaError(
            "kapla's worker processes stopped unexpectedly. Run from a script, kapla must be called under "
            "`if __name__ == \"__main__\":` (each worker imports the script); or pass jobs=1 (--jobs 1)") from None
    except BaseException:
        if pool is not None:
            stop_workers(pool)
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        sys.setswitchinterval(switch)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if previous_int is not None:
            signal.signal(signal.SIGINT, previous_int)


def stop_workers(pool: Executor) -> None:
    """Terminate the pool's workers, busy or not."""
    # The executor has no public way to stop busy workers before Python 3.14
    # (terminate_workers); its process table is the only handle on them.
    if isinstance(pool, WorkerPool):
        pool.stopped = True
        pool._starter.join()  # a worker being started now is in the table below once it is up
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _started(modules: tuple[str, ...]) -> None:
    """A worker's first task: import what its solves need, so that it starts now, ready."""
    for name in modules:
        importlib.import_module(name)


def _ignore_interrupts() -> None:
    # Ctrl-C reaches the whole process group; the parent handles it and stops the workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)


#: The signal that stopped the run, once one has (SIGINT or SIGTERM).
_STOPPED_BY: list[int] = []


def _terminated(signum: int, frame: object) -> None:
    _STOPPED_BY[:] = [signum]
    raise SystemExit(128 + signum)


def _interrupted(signum: int, frame: object) -> None:
    _STOPPED_BY[:] = [signum]
    raise KeyboardInterrupt


__all__ = ["PRELOAD", "WorkerPool", "check_jobs", "stop_workers", "worker_pool"]
