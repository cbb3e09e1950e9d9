"""The interfaces every scheduler is written against.

* :class:`IntraSolver` (a *layer solver*): finds a scheme for one layer
  solve (:class:`~kapla.space.problem.Problem`).
* :class:`NetworkScheduler`: schedules a whole network, asking a
  :class:`LayerService` for its layer solves, and returns one typed
  :class:`~kapla.search.result.ScheduleResult` whatever it does inside.
* :class:`LayerService`: what the runner (:mod:`kapla.scheduling`) hands a
  network scheduler: layer solves by key, cached, in worker processes, kept
  on disk, stopped when a budget runs out.

An implementation lives in a package of its own under ``search/layer/`` or
``search/network/``, imports only this module, :mod:`kapla.search.result`,
:mod:`kapla.search.sampling` and the layers below (``space``, ``model`` ...),
never another implementation, and is registered by an entry point
(``docs/architecture.md``).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.errors import KaplaError
from kapla.model.evaluate import LayerCost
from kapla.model.feed import FROM_DRAM, Feed
from kapla.model.objective import Objective
from kapla.space.problem import NoSchemeError, Problem
from kapla.workload.layer import Layer
from kapla.workload.network import Network

if TYPE_CHECKING:
    from kapla.search.result import ScheduleResult

#: ``progress(stage, done, total)``: a long search reports how far it is.
Progress = Callable[[str, int, int], None]


class SearchBudgetExceeded(KaplaError):
    """A search ran out of its time budget before it had any whole schedule."""


# ---------------------------------------------------------------- layer solvers

@dataclass(frozen=True)
class IntraResult:
    """The best scheme a solver found for one layer, its cost and the search effort."""

    scheme: LayerScheme
    cost: LayerCost
    evaluated: int  # complete schemes costed by the evaluator
    seconds: float
    complete: bool = True  # False: the solver's time budget cut its search short (the best it found by then)
    details: Mapping[str, Any] = field(default_factory=dict)  # what a solver reports of its own (a MIP's status)


class IntraSolver(ABC):
    """Finds a scheme for one layer (a :class:`Problem`), minimising its objective.

    The scheme returned satisfies the problem's feed (a forwarded input or
    pinned weights fetched once, an output kept on chip never spilled) and is
    costed with it; NoSchemeError says why there is none.
    """

    name: ClassVar[str]

    def solve(self, layer: Layer, batch: int, arch: ArchSpec, objective: str = "energy",
              ifm_name: str | None = None, feed: Feed | None = None) -> IntraResult:
        """:meth:`run` on the problem these arguments make."""
        return self.run(Problem(layer, batch, arch, objective, FROM_DRAM if feed is None else feed, ifm_name))

    @abstractmethod
    def run(self, problem: Problem) -> IntraResult: ...

    def run_each(self, problem: Problem, objectives: Sequence[str]) -> list[Outcome]:
        """:meth:`run` of the problem under each objective (its own is ignored):
        the result, or the NoSchemeError saying why there is none. A solver
        whose searches share work across objectives overrides this; the
        answers must be those of :meth:`run`."""
        return [outcome(self.run, replace(problem, objective=objective)) for objective in objectives]

    def schemes_each(self, problem: Problem, objectives: Sequence[str]) -> list[Solved]:
        """What a layer service keeps of :meth:`run_each`: per objective the
        scheme (None: no valid one), whether its search ran to the end, and the
        solver's own details. The service's callers cost each scheme where it
        runs (its segment, its batch groups); a solver that can leave out costing
        its results overrides this, with the schemes of :meth:`run_each`."""
        return [(None, True, {}) if isinstance(result, NoSchemeError) else (result.scheme, result.complete,
                                                                           dict(result.details))
                for result in self.run_each(problem, objectives)]


#: A layer solve's result, or why there is none.
Outcome = IntraResult | NoSchemeError


def outcome(run: Callable[[Problem], IntraResult], problem: Problem) -> Outcome:
    """``run(problem)``, or the NoSchemeError it raised."""
    try:
        return run(problem)
    except NoSchemeError as exc:
        return exc


def memoised(table: dict, key, make, *args):
    """``table[key]``, made by ``make(*args)`` the first time: a search's
    shared steps are worked out once however many descents take them."""
    if key not in table:
        table[key] = make(*args)
    return table[key]


# ---------------------------------------------------------------- network schedulers

#: A layer solve's scheme (None: no valid scheme), whether its search ran to the end, and what the solver
#: reports of its own (:attr:`IntraResult.details`).
Solved = tuple[LayerScheme | None, bool, Mapping[str, Any]]
#: ``progress(done, total)`` as layer solves finish.
LayerProgress = Callable[[int, int], None]
#: ``check()`` raises to stop the solving (a budget ran out), else returns the seconds left (None: no limit).
Check = Callable[[], float | None]
#: called with a job's key the moment its answers are recorded
Done = Callable[[Hashable], None]


class LayerService(Protocol):
    """Layer solves for a network scheduler: one layer solver's answers by a
    key the scheduler chooses (it must determine the solve's
    :class:`~kapla.space.problem.Problem` but for the objective), per
    objective, cached for the run and, where a store is open, on disk."""

    solver: IntraSolver

    def known(self, key: Hashable, objective: str) -> bool:
        """Whether the solve of ``key`` for ``objective`` is done (in memory or in the store)."""
        ...

    def get(self, key: Hashable, objective: str) -> LayerScheme | None:
        """The scheme solved for ``key`` and ``objective`` (None: it has none); KeyError if not solved."""
        ...

    def solve(self, jobs: Mapping[Any, tuple[Problem | None, tuple[str, ...]]],
              progress: LayerProgress | None = None, check: Check | None = None, done: Done | None = None,
              meanwhile: Callable[[], None] | None = None) -> None:
        """Solve every job (its problem, None when it cannot run at all, under
        each of its objectives), in the worker pool if there is one, each
        recorded the moment it finishes and then passed to ``done``; ``meanwhile``
        runs once the workers have the jobs; ``check`` may raise to stop."""
        ...

    def stop(self) -> None:
        """Stop the workers at once, with whatever they are solving."""
        ...

    def solved_count(self) -> int:
        """Layer solves done this run (each key once, whatever the objectives)."""
        ...


@dataclass(frozen=True)
class NetworkTask:
    """What a network scheduler is asked: a network on a hardware block under an objective."""

    net: Network
    arch: ArchSpec
    objective: Objective
    progress: Progress | None = None
    start: float = field(default_factory=time.perf_counter)


class NetworkScheduler(ABC):
    """Schedules a whole network: which layers run where and when, each layer's
    scheme from the :class:`LayerService`, the whole costed by the model.

    ``time_budget`` (seconds, None: none) bounds a scheduler that can stop
    early and return the best whole schedule found by then; the runner then
    solves layers in worker processes it can stop."""

    name: ClassVar[str]
    time_budget: float | None = None

    @abstractmethod
    def schedule(self, task: NetworkTask, layers: LayerService) -> ScheduleResult: ...


__all__ = ["Check", "IntraResult", "IntraSolver", "LayerProgress", "LayerService", "NetworkScheduler",
           "NetworkTask", "NoSchemeError", "Outcome", "Problem", "Progress", "SearchBudgetExceeded", "Solved",
           "memoised", "outcome"]
