"""What a solver minimises: energy, latency or their product (EDP).

One :class:`Objective` serves every solver and the network search. Schemes
are compared by ``(objective, energy)``: under latency many schemes take
exactly the compute steps, and of those the one with the least energy wins;
the comparison is exact (no blend of the two numbers).

Across the segments of a network, energy and time add up but EDP does not:
:meth:`Objective.additive` gives the pair a dynamic program can rank sums of
(EDP by its first-order change around a reference schedule, or by energy, then
time, without one), and :meth:`Objective.key` the pair whole schedules are
compared by.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kapla.errors import KaplaError

OBJECTIVES = ("energy", "latency", "edp")

#: Relative difference below which two costs count as equal (float noise).
TIE = 1e-12


@dataclass(frozen=True)
class Objective:
    """A named objective (``energy`` in J, ``latency`` in cycles, ``edp`` in J x cycles)."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in OBJECTIVES:
            raise KaplaError(f"unknown objective '{self.name}'; choose one of {', '.join(OBJECTIVES)}")

    def of(self, energy, time):
        """The objective's value of an energy and a time (floats or arrays)."""
        if self.name == "energy":
            return energy
        if self.name == "latency":
            return time
        return energy * time

    def key(self, energy: float, time: float) -> tuple[float, float]:
        """What schedules are compared by: the objective, then energy."""
        return (float(self.of(energy, time)), float(energy))

    def additive(self, energy: float, time: float, around: tuple[float, float] | None = None) -> tuple[float, float]:
        """A pair that adds up over segments and ranks like :meth:`key` where it can.

        EDP is a product, so no sum ranks like it; ``around`` (an energy and a
        time, e.g. a known schedule's) ranks by its tangent there,
        ``energy * time0 + energy0 * time``: exact for small changes around
        that schedule. Without it, by energy, then time.
        """
        return self.additive_of(around)((energy, time))

    def additive_of(self, around: tuple[float, float] | None = None
                    ) -> Callable[[tuple[float, float]], tuple[float, float]]:
        """:meth:`additive` as one function of an (energy, time) pair: a network
        search's dynamic program ranks millions of chains by it."""
        if self.name == "energy":
            return LexicographicRank((0, 0))
        if self.name == "latency":
            return LexicographicRank((1, 0))
        if around is None:
            return LexicographicRank((0, 1))
        e0, t0 = around
        return lambda cost: (float(cost[0] * t0 + e0 * cost[1]), float(cost[0]))

    def argbest(self, values: np.ndarray, energy: np.ndarray) -> int:
        """Index of the least value, ties going to the lower energy, then the first."""
        i = int(np.argmin(values))
        if self.name == "energy" or not math.isfinite(values[i]):
            return i
        tied = np.flatnonzero(values == values[i])
        return int(tied[np.argmin(energy[tied])])

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class LexicographicRank:
    """An additive rank that is the lexicographic order of terms of the (energy,
    time) pair itself (``terms``: their indices, first first): a dynamic program
    can sort its sums by those terms as they are, with no key worked out per
    sum (ResNet-1001's DP ranks hundreds of thousands)."""

    terms: tuple[int, int]

    def __call__(self, cost: tuple[float, float]) -> tuple[float, float]:
        first, second = self.terms
        return (float(cost[first]), float(cost[second]))


ENERGY = Objective("energy")
LATENCY = Objective("latency")
EDP = Objective("edp")
NONE = (math.inf, math.inf)  # the key of no scheme


def objective_of(objective: Objective | str) -> Objective:
    """An :class:`Objective` from itself or its name (KaplaError if unknown)."""
    return objective if isinstance(objective, Objective) else Objective(objective)


def better(new: tuple[float, float], old: tuple[float, float]) -> bool:
    """``new`` beats ``old``: a lower objective, or the same with less energy,
    beyond float noise."""
    return new[0] < old[0] * (1 - TIE) or (new[0] <= old[0] and new[1] < old[1] * (1 - TIE))


__all__ = ["EDP", "ENERGY", "LATENCY", "NONE", "OBJECTIVES", "LexicographicRank", "Objective", "better",
           "objective_of"]
