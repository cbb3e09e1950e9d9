"""Solvers side by side on one network and one accelerator (``kapla compare``).

Each named solver schedules the same network on the same hardware with the
same objective, one after the other; a run ends ``ok`` (a valid schedule),
``budget`` (it ran out of the time it was given: never reported as a
result) or ``no-scheme`` (it found no valid schedule). Energies and times
are normalised to the exhaustive optimum when it finished, else to the best
finished run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kapla.api import resolve_network, schedule
from kapla.arch import load_arch
from kapla.arch.spec import ArchSpec
from kapla.errors import KaplaError
from kapla.model.objective import objective_of
from kapla.report.plots import check_plot_target, stacked_bar_plot
from kapla.scheduling.registry import accepted_options, make_solver, solver_names, takes_budget
from kapla.scheduling.store import LayerStore
from kapla.search.base import NoSchemeError, Progress, SearchBudgetExceeded
from kapla.search.result import RESULT_VERSION, UNITS, ScheduleResult, cycles
from kapla.workload.network import Network

OK, BUDGET, NO_SCHEME = "ok", "budget", "no-scheme"


@dataclass(frozen=True)
class SolverRun:
    """One solver's run: how it ended, its schedule if it finished, its seconds."""

    solver: str
    status: str
    seconds: float
    result: ScheduleResult | None = None
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {"status": self.status, "valid": bool(r is not None and r.valid),
                "energy_j": r.energy_j if r else None, "time_cycles": cycles(r.time) if r else None,
                "breakdown": dict(r.energy) if r else None, "solver_seconds": self.seconds,
                "message": self.message}


@dataclass(frozen=True)
class Comparison:
    """The runs of several solvers on one network, hardware and objective."""

    network: str
    arch: str
    batch: int
    training: bool
    objective: str
    runs: tuple[SolverRun, ...]

    @property
    def reference(self) -> SolverRun | None:
        """The run others are normalised to: the exhaustive optimum if it
        finished, else the finished run best at the objective."""
        done = [r for r in self.runs if r.status == OK]
        exact = [r for r in done if r.solver == "exhaustive"]
        if exact:
            return exact[0]
        return min(done, key=lambda r: _key(r, self.objective), default=None)

    def to_dict(self) -> dict[str, Any]:
        ref = self.reference
        return {"format": "kapla-comparison", "version": RESULT_VERSION, "units": UNITS,
                "network": self.network, "arch": self.arch, "batch": self.batch, "training": self.training,
                "objective": self.objective, "normalised_to": ref.solver if ref else None,
                "results": {r.solver: r.to_dict() for r in self.runs}}


def _key(run: SolverRun, objective: str) -> tuple[float, float]:
    assert run.result is not None
    return objective_of(objective).key(run.result.energy_j, run.result.time)


def check_solvers(names: Sequence[str]) -> tuple[str, ...]:
    """The solver names, each registered and named once (KaplaError otherwise)."""
    if not names:
        raise KaplaError("--solvers: name at least one solver")
    known = solver_names()
    for name in names:
        if name not in known:
            raise KaplaError(f"--solvers: unknown solver '{name}'; choose from {', '.join(known)}")
    if len(set(names)) != len(names):
        raise KaplaError("--solvers: a solver is named twice")
    return tuple(names)


def compare(network: Network | str | Path, arch: ArchSpec | str | Path, solvers: Sequence[str], *,
            batch: int | None = None, training: bool = False, objective: str = "energy",
            budget: float | None = None, seed: int = 0, jobs: int | None = None,
            options: Mapping[str, Mapping[str, Any]] | None = None,
            progress: Progress | None = None, store: LayerStore | str | Path | None = None) -> Comparison:
    """Run each of ``solvers`` on ``network`` and ``arch``. ``budget`` seconds
    bound each solver that takes a budget; ``seed`` seeds those that sample;
    ``options`` holds each solver's own (``{"random": {"p": 0.85}}``); ``store``
    keeps every solver's finished layer solves on disk (see :func:`kapla.schedule`)."""
    if store is not None and not isinstance(store, LayerStore):
        with LayerStore(store) as opened:
            return compare(network, arch, solvers, batch=batch, training=training, objective=objective,
                           budget=budget, seed=seed, jobs=jobs, options=options, progress=progress, store=opened)
    names = check_solvers(solvers)
    options = dict(options or {})
    for name in options:
        if name not in names:
            raise KaplaError(f"options given for solver '{name}', which is not compared")
        make_solver(name, options[name])  # a bad option is an error before anything runs
    net = resolve_network(network, batch, training)
    hw = arch if isinstance(arch, ArchSpec) else load_arch(str(arch))
    runs = []
    for name in names:
        own: dict[str, Any] = dict(options.get(name, {}))
        if "seed" in accepted_options(name):
            own.setdefault("seed", seed)
        start = time.perf_counter()
        try:
            result = schedule(net, hw, solver=name, solver_options=own, objective=objective,
                              time_budget=budget if takes_budget(name) else None, jobs=jobs,
                              progress=None if progress is None else _tagged(progress, name), store=store)
        except SearchBudgetExceeded as exc:
            runs.append(SolverRun(name, BUDGET, time.perf_counter() - start, message=str(exc)))
            continue
        except NoSchemeError as exc:
            runs.append(SolverRun(name, NO_SCHEME, time.perf_counter() - start, message=str(exc)))
            continue
        stopped = result.stopped
        if stopped is not None:  # the best of a search cut short is not the solver's result
            if stopped.by == "interrupt":
                raise KeyboardInterrupt
            runs.append(SolverRun(name, BUDGET, time.perf_counter() - start, message=stopped.reason))
            continue
        status = OK if result.valid else NO_SCHEME
        runs.append(SolverRun(name, status, result.solver_seconds, result if status == OK else None))
    return Comparison(net.name, hw.name, net.batch, net.training, objective, tuple(runs))


def _tagged(progress: Progress, solver: str) -> Progress:
    return lambda stage, done, total: progress(f"{solver}: {stage}", done, total)


def plot(comparison: Comparison, path: str | Path) -> None:
    """The KAPLA paper's bar chart for one network: each finished solver's
    energy, normalised to the reference and stacked by component, to a PNG or
    SVG file (by its suffix). Needs matplotlib (``pip install kapla[plot]``)."""
    check_plot_target(path)
    ref = comparison.reference
    if ref is None or ref.result is None:
        raise KaplaError("--plot: no solver finished, so there is nothing to draw")
    scale = ref.result.energy_j
    series = {comp: [(r.result.energy.get(comp, 0.0) / scale if r.status == OK and r.result else 0.0)
                     for r in comparison.runs] for comp in ref.result.energy}
    mode = "training" if comparison.training else "inference"
    stacked_bar_plot([r.solver for r in comparison.runs], series, f"energy / {ref.solver}",
                     f"{comparison.network} on {comparison.arch}\n({mode}, batch {comparison.batch})", path,
                     notes={i: r.status for i, r in enumerate(comparison.runs) if r.status != OK})


__all__ = ["BUDGET", "NO_SCHEME", "OK", "Comparison", "SolverRun", "check_solvers", "compare", "plot"]
