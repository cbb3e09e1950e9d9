"""Solvers found by name: intra-layer solvers, network strategies, and the
named pairings ``kapla schedule --solver NAME`` offers.

A *solver* of a whole network is a network strategy (which segment chains
to solve: :mod:`kapla.solve.network`) with an intra-layer solver (each
layer's scheme). Each part takes its own options; ``solver_options`` are
handed to whichever part accepts them, and an option neither accepts is an
error that names the ones they do. A new solver is one :func:`register_intra`
or :func:`register_strategy` call and, to offer it by name, one
:func:`register_solver`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kapla.errors import KaplaError
from kapla.solve.base import IntraSolver
from kapla.solve.exhaustive import ExhaustiveIntraSolver
from kapla.solve.kapla_intra import KaplaIntraSolver
from kapla.solve.ml_search import MlIntraSolver
from kapla.solve.network import ExhaustiveStrategy, KaplaStrategy, NetworkStrategy, RandomStrategy
from kapla.solve.random_search import RandomIntraSolver


@dataclass(frozen=True)
class Entry:
    """A registered part: its name, one line on what it does, and its factory."""

    name: str
    summary: str
    make: Callable[..., Any]

    @property
    def options(self) -> tuple[str, ...]:
        """The keyword options its factory takes."""
        params = inspect.signature(self.make).parameters.values()
        return tuple(p.name for p in params if p.kind == p.KEYWORD_ONLY or p.default is not p.empty)


@dataclass(frozen=True)
class Solver:
    """A named pairing of a network strategy and an intra-layer solver."""

    name: str
    summary: str
    strategy: str
    intra: str


INTRA: dict[str, Entry] = {}
STRATEGIES: dict[str, Entry] = {}
SOLVERS: dict[str, Solver] = {}


def register_intra(name: str, summary: str, make: Callable[..., IntraSolver]) -> None:
    INTRA[name] = Entry(name, summary, make)


def register_strategy(name: str, summary: str, make: Callable[..., NetworkStrategy]) -> None:
    STRATEGIES[name] = Entry(name, summary, make)


def register_solver(name: str, summary: str, strategy: str, intra: str) -> None:
    if strategy not in STRATEGIES or intra not in INTRA:
        raise KaplaError(f"solver '{name}' pairs unknown parts ({strategy!r}, {intra!r})")
    SOLVERS[name] = Solver(name, summary, strategy, intra)


def solver_names() -> tuple[str, ...]:
    return tuple(SOLVERS)


def accepted_options(name: str) -> frozenset[str]:
    """The options solver ``name``'s parts take (KeyError for an unknown name)."""
    solver = SOLVERS[name]
    return frozenset(STRATEGIES[solver.strategy].options) | frozenset(INTRA[solver.intra].options)


def takes_budget(name: str) -> bool:
    """Whether solver ``name``'s network search can be bounded in time."""
    return "time_budget" in STRATEGIES[SOLVERS[name].strategy].options


def make_solver(name: str, options: Mapping[str, Any] | None = None,
                budget: float | None = None) -> tuple[NetworkStrategy, IntraSolver]:
    """The strategy and intra-layer solver of solver ``name``, with ``options``
    handed to whichever accepts each (KaplaError for an unknown name or option).

    ``budget`` (seconds) bounds the whole network search: it goes to the
    strategy, which stops the layer solves in flight when it runs out, and
    not to the intra-layer solver (whose own ``time_budget`` option bounds
    each layer solve and makes it return its best so far)."""
    try:
        solver = SOLVERS[name]
    except KeyError:
        raise KaplaError(f"unknown solver '{name}'; choose one of {', '.join(SOLVERS)}") from None
    strategy, intra = STRATEGIES[solver.strategy], INTRA[solver.intra]
    options = dict(options or {})
    known = accepted_options(name)
    for key in options:
        if key not in known:
            raise KaplaError(f"solver '{name}' has no option '{key}' (options: {', '.join(sorted(known)) or 'none'})")
    for key, value in options.items():
        _check_option(name, key, value, strategy if key in strategy.options else intra)
    own = {k: v for k, v in options.items() if k in strategy.options}
    if budget is not None:
        if not takes_budget(name):
            raise KaplaError(f"solver '{name}' takes no time budget (solvers that do: "
                             f"{', '.join(n for n in SOLVERS if takes_budget(n))})")
        _check_option(name, "time_budget", budget, strategy)
        own["time_budget"] = budget
    try:
        return (strategy.make(**own), intra.make(**{k: v for k, v in options.items() if k in intra.options}))
    except (TypeError, ValueError) as exc:
        raise KaplaError(f"solver '{name}': {exc}") from None


def _check_option(solver: str, key: str, value: Any, entry: Entry) -> None:
    """Options are counts (a whole number, at least 1; the ``refine`` counts may be 0)
    or budgets (positive seconds, or None), as the factory's default says."""
    default = inspect.signature(entry.make).parameters[key].default
    if isinstance(default, int) and not isinstance(default, bool):
        least = 0 if key.startswith("refine") or key == "seed" else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise KaplaError(f"solver '{solver}': option '{key}' must be a whole number of at least {least} "
                             f"(got {value!r})")
    elif default is None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise KaplaError(f"solver '{solver}': option '{key}' must be a positive number of seconds "
                             f"(got {value!r})")


register_intra("kapla", "KAPLA's bottom-up cost descent (Sec. IV-C): skeletons ranked by an estimate, "
               "the best searched level by level", KaplaIntraSolver)
register_intra("exhaustive", "the reference optimum: every partition, mapping, blocking and loop-order "
               "class, with branch and bound", ExhaustiveIntraSolver)
register_strategy("kapla", "KAPLA's inter-layer search (Sec. IV-B): validity and Pareto pruning, a top-k DP "
                  "over segment chains on calibrated estimates, the chains solved", KaplaStrategy)
register_strategy("exhaustive", "every valid inter-layer scheme of every segment solved, then the DP on true "
                  "costs (the optimum of the space)", ExhaustiveStrategy)
register_intra("random", "Timeloop-style random search: each partition, mapping, blocking and loop order "
               "evaluated with probability p (seeded)", RandomIntraSolver)
register_strategy("random", "every segment slicing, each inter-layer scheme of a multi-layer segment solved with "
                  "probability p (seeded), then the DP on true costs", RandomStrategy)
register_intra("ml", "AutoTVM-style ML-guided search: simulated annealing on an XGBoost cost model retrained "
               "on the schemes measured so far", MlIntraSolver)
register_solver("kapla", "KAPLA: pruned inter-layer search + bottom-up intra-layer descent", "kapla", "kapla")
register_solver("exhaustive", "the exhaustive baseline: every inter-layer scheme, exhaustive intra-layer search "
                "(slow; bound it with --budget)", "exhaustive", "exhaustive")
register_solver("random", "random search, the KAPLA paper's baseline R: every level of the space sampled with "
                "probability p (option p, default 0.1; seed)", "random", "random")
register_solver("ml", "ML-guided search, the KAPLA paper's baseline M: every inter-layer scheme, each layer tuned "
                "by annealing on a learned cost model (options rounds, batch; seed; needs kapla[ml])",
                "exhaustive", "ml")

__all__ = ["Entry", "accepted_options", "INTRA", "STRATEGIES", "SOLVERS", "Solver", "make_solver", "register_intra",
           "register_solver", "register_strategy", "solver_names", "takes_budget"]
