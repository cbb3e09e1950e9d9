"""Everything found by name: layer solvers, network schedulers, the named
solvers that pair them (``kapla schedule --solver NAME``) and studies.

The registry imports no implementation. Each implementation package has a
``register(registry)`` function, named by an entry point of the group
``kapla.plugins`` (kapla's own in its ``pyproject.toml``; a third-party
package declares its own the same way); the registry calls them the first
time a name is looked up. :func:`add_plugin` registers one by its
``module:function`` path without installing it (the worked example in
``docs/architecture.md``).

A *solver* pairs a network scheduler with a layer solver. Each part takes
its own options; ``solver_options`` are handed to whichever part accepts
them, and an option neither accepts is an error that names the ones they do.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from kapla.errors import KaplaError
from kapla.search.base import IntraSolver, NetworkScheduler

GROUP = "kapla.plugins"


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
    """A named pairing of a network scheduler and a layer solver."""

    name: str
    summary: str
    network: str
    layer: str


@dataclass
class Registry:
    """The registered parts by name (the ``registry`` a plugin's ``register`` receives)."""

    layer_solvers: dict[str, Entry] = field(default_factory=dict)
    network_schedulers: dict[str, Entry] = field(default_factory=dict)
    solvers: dict[str, Solver] = field(default_factory=dict)
    studies: dict[str, Entry] = field(default_factory=dict)
    plugins: list[str] = field(default_factory=list)  # the plugins registered, by entry point

    def layer_solver(self, name: str, summary: str, make: Callable[..., IntraSolver]) -> None:
        _unique(self.layer_solvers, name, "layer solver")
        self.layer_solvers[name] = Entry(name, summary, make)

    def network_scheduler(self, name: str, summary: str, make: Callable[..., NetworkScheduler]) -> None:
        _unique(self.network_schedulers, name, "network scheduler")
        self.network_schedulers[name] = Entry(name, summary, make)

    def solver(self, name: str, summary: str, network: str, layer: str) -> None:
        """Offer ``network`` with ``layer`` as ``--solver name`` (the parts may be registered later)."""
        _unique(self.solvers, name, "solver")
        self.solvers[name] = Solver(name, summary, network, layer)

    def study(self, name: str, summary: str, make: Callable[..., Any]) -> None:
        _unique(self.studies, name, "study")
        self.studies[name] = Entry(name, summary, make)

    def check(self) -> None:
        """Every named solver pairs registered parts."""
        for s in self.solvers.values():
            if s.network not in self.network_schedulers or s.layer not in self.layer_solvers:
                raise KaplaError(f"solver '{s.name}' pairs unknown parts (network scheduler {s.network!r}, "
                                 f"layer solver {s.layer!r})")


def _unique(table: Mapping[str, Any], name: str, kind: str) -> None:
    if name in table:
        raise KaplaError(f"two plugins register the {kind} '{name}'")


_REGISTRY: Registry | None = None


def registry() -> Registry:
    """The registry, its plugins loaded (the first call loads them, in the order of their names)."""
    global _REGISTRY
    if _REGISTRY is None:
        reg = Registry()
        found = sorted(entry_points(group=GROUP), key=lambda ep: ep.name)
        if not found:
            raise KaplaError(f"no kapla plugins are installed (entry points '{GROUP}'): reinstall kapla "
                             "(pip install -e .)")
        for ep in found:
            _register(reg, ep.value, ep.load)
        reg.check()
        _REGISTRY = reg
    return _REGISTRY


def add_plugin(path: str) -> None:
    """Register the plugin ``module:function`` now, as an installed entry point would be."""
    module, _, attr = path.partition(":")

    def load() -> Callable[[Registry], None]:
        return getattr(importlib.import_module(module), attr or "register")

    reg = registry()
    _register(reg, path, load)
    reg.check()


def _register(reg: Registry, path: str, load: Callable[[], Any]) -> None:
    try:
        register = load()
    except Exception as exc:  # a broken plugin is named, not a traceback
        raise KaplaError(f"plugin {path} cannot be loaded: {exc}") from exc
    register(reg)
    reg.plugins.append(path)


# ---------------------------------------------------------------- named solvers

def solver_names() -> tuple[str, ...]:
    return tuple(registry().solvers)


def solver_of(name: str) -> Solver:
    """The named solver (KaplaError naming the choices for an unknown name)."""
    solvers = registry().solvers
    try:
        return solvers[name]
    except KeyError:
        raise KaplaError(f"unknown solver '{name}'; choose one of {', '.join(solvers)}") from None


def accepted_options(name: str) -> frozenset[str]:
    """The options solver ``name``'s parts take."""
    reg, solver = registry(), solver_of(name)
    return frozenset(reg.network_schedulers[solver.network].options) | frozenset(
        reg.layer_solvers[solver.layer].options)


def takes_budget(name: str) -> bool:
    """Whether solver ``name``'s network search can be bounded in time."""
    return "time_budget" in registry().network_schedulers[solver_of(name).network].options


def make_solver(name: str, options: Mapping[str, Any] | None = None,
                budget: float | None = None) -> tuple[NetworkScheduler, IntraSolver]:
    """The network scheduler and layer solver of solver ``name``, with
    ``options`` handed to whichever accepts each (KaplaError for an unknown
    name or option).

    ``budget`` (seconds) bounds the whole network search: it goes to the
    network scheduler, which stops the layer solves in flight when it runs
    out, and not to the layer solver (whose own ``time_budget`` option bounds
    each layer solve and makes it return its best so far)."""
    reg, solver = registry(), solver_of(name)
    network, layer = reg.network_schedulers[solver.network], reg.layer_solvers[solver.layer]
    options = dict(options or {})
    known = accepted_options(name)
    check_option_names(f"solver '{name}'", options, known)
    for key, value in options.items():
        _check_option(name, key, value, network if key in network.options else layer)
    own = {k: v for k, v in options.items() if k in network.options}
    if budget is not None:
        if not takes_budget(name):
            raise KaplaError(f"solver '{name}' takes no time budget (solvers that do: "
                             f"{', '.join(n for n in reg.solvers if takes_budget(n))})")
        _check_option(name, "time_budget", budget, network)
        own["time_budget"] = budget
    try:
        return (network.make(**own), layer.make(**{k: v for k, v in options.items() if k in layer.options}))
    except (TypeError, ValueError) as exc:
        raise KaplaError(f"solver '{name}': {exc}") from None


def check_option_names(owner: str, given: Iterable[str], known: Iterable[str]) -> None:
    """KaplaError naming the first option of ``given`` that ``owner`` does not take, and the ones it does."""
    known = set(known)
    for key in given:
        if key not in known:
            raise KaplaError(f"{owner} has no option '{key}' (options: {', '.join(sorted(known)) or 'none'})")


def _check_option(solver: str, key: str, value: Any, entry: Entry) -> None:
    """Options are switches (true or false), counts (a whole number, at least 1; the
    ``refine`` counts may be 0) or budgets (positive seconds, or None), as the factory's default says."""
    default = inspect.signature(entry.make).parameters[key].default
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise KaplaError(f"solver '{solver}': option '{key}' must be true or false (got {value!r})")
    elif isinstance(default, int):
        least = 0 if key.startswith("refine") or key == "seed" else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise KaplaError(f"solver '{solver}': option '{key}' must be a whole number of at least {least} "
                             f"(got {value!r})")
    elif default is None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise KaplaError(f"solver '{solver}': option '{key}' must be a positive number of seconds "
                             f"(got {value!r})")


__all__ = ["Entry", "GROUP", "Registry", "Solver", "accepted_options", "add_plugin", "check_option_names",
           "make_solver", "registry", "solver_names", "solver_of", "takes_budget"]
