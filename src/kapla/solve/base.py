"""What every intra-layer solver shares: its interface, result and objectives."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.errors import KaplaError
from kapla.model.evaluate import LayerCost
from kapla.model.feed import FROM_DRAM, Feed
from kapla.workload.layer import Layer

OBJECTIVES = ("energy", "latency", "edp")


class NoSchemeError(KaplaError):
    """No valid scheme exists for a layer on the given hardware."""


@dataclass(frozen=True)
class IntraResult:
    """The best scheme a solver found for one layer, its cost and the search effort."""

    scheme: LayerScheme
    cost: LayerCost
    evaluated: int  # complete schemes costed by the evaluator
    seconds: float
    complete: bool = True  # False: the solver's time budget cut its search short (the best it found by then)


@dataclass(frozen=True)
class Problem:
    """One layer solve: the layer, its batch, the hardware block it runs on
    (``arch``, already cut to its region of nodes), what to minimise, and the
    ``feed`` saying which data stay on chip when it runs inside a segment."""

    layer: Layer
    batch: int
    arch: ArchSpec
    objective: str = "energy"
    feed: Feed = FROM_DRAM
    ifm_name: str | None = None  # the input tensor's name in the directives

    def __post_init__(self) -> None:
        check_objective(self.objective)

    @property
    def fed(self) -> Feed | None:
        """The feed, or None when everything goes through DRAM (the plain, faster path)."""
        return None if self.feed == FROM_DRAM else self.feed

    @property
    def key(self) -> Problem:
        """The problem without the layer's identity: equal keys need equal schemes."""
        return replace(self, layer=shape_key(self.layer), ifm_name=None)


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


#: A layer solve's result, or why there is none.
Outcome = IntraResult | NoSchemeError


def outcome(run: Callable[[Problem], IntraResult], problem: Problem) -> Outcome:
    """``run(problem)``, or the NoSchemeError it raised."""
    try:
        return run(problem)
    except NoSchemeError as exc:
        return exc


def shape_key(layer: Layer) -> Layer:
    """The layer with its identity removed: equal keys need equal schemes (a solver cache key)."""
    return replace(layer, name="_", forward=None)


def memoised(table: dict, key, make, *args):
    """``table[key]``, made by ``make(*args)`` the first time: a search's
    shared steps are worked out once however many descents take them."""
    if key not in table:
        table[key] = make(*args)
    return table[key]


def check_objective(objective: str) -> str:
    if objective not in OBJECTIVES:
        raise KaplaError(f"unknown objective '{objective}'; choose one of {', '.join(OBJECTIVES)}")
    return objective


def no_scheme(layer: Layer, batch: int, arch: ArchSpec) -> NoSchemeError:
    """The error for a layer nothing fits: name the layer and the innermost
    buffer that even its smallest block overflows (in the frame where that
    block is smallest)."""
    import numpy as np

    from kapla.model.rules import held_words
    from kapla.solve.frames import FrameEvaluator, frames

    candidates = frames(layer, batch, arch)
    if not candidates:
        return NoSchemeError(f"layer '{layer.name}' cannot be spread over the arrays of hardware '{arch.name}'")
    worst: tuple[int, int, str, int] | None = None  # (level, bits needed, buffer, bits held)
    for frame in candidates:
        ev = FrameEvaluator(frame, arch)
        ones = np.ones((1, len(frame.rest)), dtype=np.int64)
        for level in range(ev.levels):
            block = ev.block(level, ones, [ones] * level)
            if ev.fits(level, block)[0]:
                continue
            lvl = ev.hw.levels[level]
            words = held_words(block, ev.nests_probe, ev.hw, level)
            if lvl.split_bits:
                kind = next(k for k, w in words.items() if w[0] * ev.hw.bits[k] > lvl.split_bits[k])
                found = (level, int(words[kind][0] * ev.hw.bits[kind]), f"{lvl.name} ({kind} buffer)",
                         lvl.split_bits[kind])
            else:
                need = sum(int(w[0]) * ev.hw.bits[k] for k, w in words.items())
                found = (level, need, lvl.name, lvl.capacity_bits or 0)
            if worst is None or found[:2] < worst[:2]:
                worst = found
            break
        else:
            worst = None  # this frame's smallest blocks fit: the constraint is elsewhere
            break
    if worst is not None:
        _, need, name, cap = worst
        return NoSchemeError(f"layer '{layer.name}' does not fit: its smallest block needs {need // 8} B of "
                             f"{name} but {name} holds {cap // 8} B (batch {batch})")
    return NoSchemeError(f"layer '{layer.name}' has no valid scheme on hardware '{arch.name}' (batch {batch}): "
                         "every block that fits the buffers leaves a loop with idle iterations")
