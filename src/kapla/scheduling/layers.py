"""The layer service every network scheduler uses: a layer solver's answers by
key and objective, cached for the run, kept in an on-disk
:class:`~kapla.scheduling.store.LayerStore` when one is open, and solved in
worker processes that a budget or Ctrl-C can stop (the
:class:`~kapla.search.base.LayerService` interface)."""

from __future__ import annotations

import math
import queue
import time
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme, dataflow_key
from kapla.scheduling import collector
from kapla.scheduling.store import LayerStore, scope_of
from kapla.scheduling.workers import stop_workers
from kapla.search.base import Check, Done, IntraSolver, LayerProgress, Problem, Solved
from kapla.workload.layer import Layer, shape_key

_POLL_SECONDS = 0.5  # how often a check runs while the pool's workers solve


@dataclass
class LayerCache:
    """Layer solves by key: in memory, and in ``store`` under ``scope`` if given."""

    scope: str = ""
    store: LayerStore | None = None
    solved: dict[Hashable, LayerScheme | None] = field(default_factory=dict)
    details: dict[Hashable, Mapping[str, Any]] = field(default_factory=dict)  # a solver's own report, this run
    reused: int = 0  # solves this run took from the store
    new: int = 0  # solves this run made

    def __contains__(self, key: Hashable) -> bool:
        if key in self.solved:
            return True
        if self.store is None or (self.scope, key) not in self.store:
            return False
        self.solved[key] = self.store.get(self.scope, key)
        self.reused += 1
        return True

    def __getitem__(self, key: Hashable) -> LayerScheme | None:
        if key not in self:
            raise KeyError(key)
        return self.solved[key]

    def put(self, key: Hashable, solved: Solved) -> None:
        """Record a solve; one its time budget cut short is kept for this run only, never stored."""
        scheme, complete, details = solved
        self.solved[key] = scheme
        if scheme is not None and details:
            self.details[dataflow_key(scheme)] = details
        self.new += 1
        if self.store is not None and complete:
            self.store.put(self.scope, key, scheme)


class LayerService:
    """One layer solver's solves on one hardware, per objective (a cache each,
    under the store scope of solver, hardware and objective), in ``pool``'s
    workers when there is a pool. While a pool that says when its workers are
    up (:class:`~kapla.scheduling.workers.WorkerPool`) is still starting them,
    solves with no check to keep (no budget: a solve in this process cannot be
    stopped) are made in this process, so the start-up delays nothing.

    Jobs are keyed by the scheduler, but a solve depends only on its problem:
    jobs of one problem (equal :class:`~kapla.space.problem.Problem` values,
    in one call or across calls) are solved once, and every key gets the answer."""

    def __init__(self, solver: IntraSolver, arch: ArchSpec, pool: Executor | None = None,
                 store: LayerStore | None = None) -> None:
        self.solver = solver
        self.arch = arch
        self.pool = pool
        self.store = store
        self.caches: dict[str, LayerCache] = {}
        #: this run's answers by problem and objective (a scheduler's key may differ where the problem does not)
        self.answers: dict[tuple[Problem, str], Solved] = {}
        self.shared = 0  # jobs answered by another job's solve of the same problem
        #: seconds the last solve of a layer shape at a batch took (to hand the pool the longest first)
        self.seconds: dict[tuple[Layer, int], float] = {}

    def cache(self, objective: str) -> LayerCache:
        if objective not in self.caches:
            self.caches[objective] = LayerCache(scope_of(self.solver, self.arch, objective), self.store)
        return self.caches[objective]

    def known(self, key: Hashable, objective: str) -> bool:
        return key in self.cache(objective)

    def get(self, key: Hashable, objective: str) -> LayerScheme | None:
        return self.cache(objective)[key]

    def solve(self, jobs: Mapping[Any, tuple[Problem | None, tuple[str, ...]]],
              progress: LayerProgress | None = None, check: Check | None = None, done: Done | None = None,
              meanwhile: Callable[[], None] | None = None) -> None:
        put = self._put if done is None else partial(self._put_then, done)
        total = len(jobs)
        # the problems not answered yet, each once (several keys may ask for one)
        todo = {(problem, objectives) for problem, objectives in jobs.values()
                if self._answers(problem, objectives) is None}
        solve = partial(solve_layer, self.solver)
        if self.pool is None or (len(todo) <= 1 and check is None):
            if meanwhile is not None:
                meanwhile()
            # in order, each key recorded in its turn (a store then holds them in the order asked)
            for n, (key, (problem, objectives)) in enumerate(jobs.items()):
                if check is not None:
                    check()
                answers = self._answers(problem, objectives)
                if answers is None:
                    answers = solve(problem, objectives)
                    self._answered(problem, objectives, answers)
                else:
                    self.shared += problem is not None  # another key asked for the same problem before
                put(key, objectives, answers)
                if progress is not None:
                    progress(n + 1, total)
            return
        finished_keys = 0
        waiting: dict[tuple[Problem | None, tuple[str, ...]], list[Hashable]] = {}
        answered = []  # passed to ``done`` once the workers have theirs: it should not keep them waiting
        for key, (problem, objectives) in jobs.items():
            answers = self._answers(problem, objectives)
            if answers is None:
                keys = waiting.setdefault((problem, objectives), [])
                self.shared += bool(keys)
                keys.append(key)
            else:
                self._put(key, objectives, answers)
                answered.append(key)
                self.shared += problem is not None
                finished_keys += 1
        if finished_keys and progress is not None:
            progress(finished_keys, total)
        ready = getattr(self.pool, "ready", None)
        while waiting and check is None and ready is not None and not ready():
            # the workers are still starting (the first solves of a run): solve here meanwhile, in order
            (problem, objectives), keys = next(iter(waiting.items()))
            del waiting[(problem, objectives)]
            answers, seconds = _timed(solve, problem, objectives)
            self._took(problem, seconds)
            self._answered(problem, objectives, answers)
            for key in keys:
                put(key, objectives, answers)
            finished_keys += len(keys)
            if progress is not None:
                progress(finished_keys, total)
        # longest first (by what the same layer took before; unknown ones first): the last
        # solve of a round then is a short one, and no worker waits long for it
        ordered = sorted(waiting.items(), key=lambda item: -self._expected(item[0][0]))
        pending = {self.pool.submit(_timed, solve, problem, objectives): (problem, objectives, keys)
                   for (problem, objectives), keys in ordered}
        # each solve says when it is done: waiting on every pending one for the next to finish
        # costs a lock and a waiter per pending solve, per solve finished (GoogLeNet's training
        # DAG: 0.65 s of this process, beside the workers)
        finishing: queue.SimpleQueue[Future] = queue.SimpleQueue()
        for future in pending:
            future.add_done_callback(finishing.put)
        if done is not None:
            for key in answered:
                done(key)
        if meanwhile is not None:
            meanwhile()
        left = None if check is None else check()
        while pending:
            timeout = _POLL_SECONDS if left is None else max(0.0, min(_POLL_SECONDS, left))
            finished = _finished(finishing, timeout)
            for future in finished:
                problem, objectives, keys = pending.pop(future)
                answers, seconds = future.result()
                self._took(problem, seconds)
                self._answered(problem, objectives, answers)
                for key in keys:
                    put(key, objectives, answers)
                finished_keys += len(keys)
            if finished and progress is not None:
                progress(finished_keys, total)
            if check is not None and pending:
                left = check()

    def _took(self, problem: Problem | None, seconds: float) -> None:
        if problem is not None:
            self.seconds[(shape_key(problem.layer), problem.batch)] = seconds

    def _expected(self, problem: Problem | None) -> float:
        """How long a solve of ``problem`` should take: what its layer at its batch took last (inf: not seen)."""
        if problem is None:
            return 0.0
        return self.seconds.get((shape_key(problem.layer), problem.batch), math.inf)

    def stop(self) -> None:
        if self.pool is not None:
            stop_workers(self.pool)

    def solved_count(self) -> int:
        return len({key for cache in self.caches.values() for key in cache.solved})

    @property
    def reused(self) -> int:
        return sum(c.reused for c in self.caches.values())

    @property
    def new(self) -> int:
        return sum(c.new for c in self.caches.values())

    def details_of(self, scheme: LayerScheme) -> Mapping[str, Any]:
        """What the solver reported of its own when it found ``scheme`` this run (empty: nothing, or a stored solve)."""
        reported = [cache for cache in self.caches.values() if cache.details]
        if not reported:  # most solvers report nothing: no scheme's key to work out (ResNet-1001: 0.2 s)
            return {}
        key = dataflow_key(scheme)
        for cache in reported:
            if key in cache.details:
                return cache.details[key]
        return {}

    def _put(self, key: Hashable, objectives: tuple[str, ...], solved: list[Solved]) -> None:
        for objective, one in zip(objectives, solved, strict=True):
            self.cache(objective).put(key, one)

    def _put_then(self, done: Done, key: Hashable, objectives: tuple[str, ...], solved: list[Solved]) -> None:
        self._put(key, objectives, solved)
        done(key)

    def _answers(self, problem: Problem | None, objectives: tuple[str, ...]) -> list[Solved] | None:
        """The problem's answers for every objective if this run solved it already (under any key)."""
        if problem is None:
            return [(None, True, {})] * len(objectives)  # no buffer left for the layer's own blocks
        answers = []
        for objective in objectives:
            answer = self.answers.get((problem, objective))
            if answer is None:
                return None
            answers.append(answer)
        return answers

    def _answered(self, problem: Problem | None, objectives: tuple[str, ...], answers: list[Solved]) -> None:
        """Keep a solve's answers for any key that asks for the same problem later."""
        if problem is not None:
            for objective, one in zip(objectives, answers, strict=True):
                self.answers[(problem, objective)] = one


def _finished(finishing: queue.SimpleQueue[Future], timeout: float) -> list[Future]:
    """The solves done by now, waiting up to ``timeout`` seconds for the first (none: the time ran out)."""
    try:
        out = [finishing.get(timeout=timeout)]
    except queue.Empty:
        return []
    while True:
        try:
            out.append(finishing.get_nowait())
        except queue.Empty:
            return out


def _timed(solve: Callable[[Problem | None, tuple[str, ...]], list[Solved]], problem: Problem | None,
           objectives: tuple[str, ...]) -> tuple[list[Solved], float]:
    """``solve(problem, objectives)`` and the seconds it took (in the worker: no queueing counted)."""
    start = time.perf_counter()
    answers = solve(problem, objectives)
    return answers, time.perf_counter() - start


def solve_layer(solver: IntraSolver, problem: Problem | None, objectives: tuple[str, ...]) -> list[Solved]:
    """The layer solved for each objective (one search sharing its work, :meth:`IntraSolver.schemes_each`)."""
    if problem is None:  # no buffer left for the layer's own blocks
        return [(None, True, {})] * len(objectives)
    with collector.paused():
        return solver.schemes_each(problem, objectives)


__all__ = ["LayerCache", "LayerService", "solve_layer"]
