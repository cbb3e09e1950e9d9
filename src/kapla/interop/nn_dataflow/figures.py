"""The figures the two tools are compared on, and nn_dataflow's as its file states them.

Units: joules, cycles, words per memory level (nn_dataflow's levels DRAM,
GBUF, ITCN = the array bus, REGF) and word-hops on the NoC.

A layer's figures are its own: ``time`` is how long the layer runs on its
nodes, and ``energy_j`` includes static energy over that time. In a
layer-pipelined segment the layers run at the same time, so the total time
(the sum of the segments' times) is not the sum of the layers' times, and the
total energy counts static energy over the total time only. Totals are
therefore the tools' own totals, not sums of the layers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kapla.interop.nn_dataflow.reader import LEVELS, NnDataflowRun

#: The unit of every figure of the JSON document, written into it.
UNITS = {"energy_j": "J", "time_cycles": "cycles (integer, rounded up)",
         "accesses": "words per memory level (DRAM, GBUF, ITCN = array bus, REGF)", "noc_hops": "word-hops"}


@dataclass(frozen=True)
class Figures:
    """Energy, time, accesses per level (:data:`LEVELS`) and NoC traffic of a layer or a network."""

    energy_j: float
    time_cycles: float
    accesses: Mapping[str, float]
    noc_hops: float
    #: kapla's objections to an imported scheme (rules of kapla's own check it breaks; costed all the same)
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if tuple(self.accesses) != LEVELS:
            raise ValueError(f"accesses are per level {', '.join(LEVELS)} in that order "
                             f"(got {', '.join(self.accesses)})")
        object.__setattr__(self, "accesses", MappingProxyType(dict(self.accesses)))

    def to_dict(self) -> dict[str, Any]:
        out = {"energy_j": self.energy_j, "time_cycles": _cycles(self.time_cycles),
               "accesses": dict(self.accesses), "noc_hops": self.noc_hops}
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass(frozen=True)
class ToolFigures:
    """One tool's figures: the network's total and each layer's, in schedule order."""

    total: Figures
    layers: Mapping[str, Figures] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", MappingProxyType(dict(self.layers)))

    def to_dict(self) -> dict[str, Any]:
        return {**self.total.to_dict(), "layers": {name: f.to_dict() for name, f in self.layers.items()}}


def _cycles(time: float) -> int:
    """Whole cycles, a partly used one counted, as kapla.search.result.cycles (interop does not import solve)."""
    return math.ceil(time - 1e-9)


def per_level(values: tuple[float, ...] | list[float]) -> dict[str, float]:
    """Four numbers in nn_dataflow's level order as a mapping level name -> number."""
    return dict(zip(LEVELS, values, strict=True))


def nn_dataflow_figures(run: NnDataflowRun) -> ToolFigures:
    """nn_dataflow's figures as the file records them (per layer: ``cost``,
    ``time``, accesses as nn_dataflow totals them, ``total_nhops``; totals:
    ``total_cost``, ``total_time``, ``total_accesses``, ``total_noc_hops``)."""
    layers = {name: Figures(s.cost, s.time, per_level(s.level_accesses), s.noc_hops)
              for name, s in run.schedules.items()}
    total = Figures(run.total_cost, run.total_time, per_level(run.total_accesses), run.total_noc_hops)
    return ToolFigures(total, layers)
