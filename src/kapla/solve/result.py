"""The outcome of scheduling a network: per-layer schemes and costs, and totals."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.listing import format_scheme
from kapla.errors import KaplaError
from kapla.model.evaluate import LayerCost

RESULT_VERSION = 1  # of the JSON result (docs/result-schema.json); raised when a field changes meaning or goes

#: The unit of every figure of a JSON result, written into it.
UNITS = {"energy_j": "J", "breakdown": "J per component", "time_cycles": "cycles (integer, rounded up)",
         "solver_seconds": "s (wall clock)", "accesses": "words per memory level", "noc_hops": "word-hops",
         "macs": "multiply-accumulates", "pe_utilisation": "MACs / (PEs of the region x cycles)",
         "node_utilisation": "nodes of the layer's region / nodes of the chip",
         "pinned_load_j": "J (loading pinned weights once, not included in energy_j)"}


def cycles(time: float) -> int:
    """A time in whole cycles (a partly used cycle is a cycle)."""
    return math.ceil(time - 1e-9)


class UnknownLayerError(KaplaError, KeyError):
    """A layer name the schedule does not hold (a KeyError too, as a mapping's lookup would raise)."""

    def __str__(self) -> str:  # KeyError quotes its message
        return str(self.args[0])


@dataclass(frozen=True)
class LayerResult:
    """One layer's scheme, where it ran, and what it cost."""

    name: str
    scheme: LayerScheme
    cost: LayerCost
    region: tuple[tuple[int, int], tuple[int, int]]  # origin, shape
    solver_seconds: float = 0.0
    pes: int = 0  # PEs of its region (0: not known)
    chip_nodes: int = 0  # nodes of the whole chip (0: not known)

    @property
    def macs(self) -> int:
        return self.scheme.layer.macs * self.scheme.batch

    @property
    def pe_utilisation(self) -> float:
        """The share of its region's PE-cycles doing a MAC."""
        return self.macs / (self.pes * self.cost.time) if self.pes and self.cost.time > 0 else 0.0

    @property
    def node_utilisation(self) -> float:
        """The share of the chip's nodes its region holds."""
        shape = self.region[1]
        return shape[0] * shape[1] / self.chip_nodes if self.chip_nodes else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "energy_j": self.cost.total_energy,
            "time_cycles": cycles(self.cost.time),
            "macs": self.macs,
            "pe_utilisation": self.pe_utilisation,
            "node_utilisation": self.node_utilisation,
            "breakdown": dict(self.cost.energy),
            "accesses": {level: sum(t.values()) for level, t in self.cost.accesses.items()},
            "noc_hops": self.cost.noc_hops,
            "valid": self.cost.valid,
            "region": {"origin": list(self.region[0]), "shape": list(self.region[1])},
            "directives": format_scheme(self.scheme),
        }


@dataclass(frozen=True)
class ScheduleResult:
    """A whole network's schedule: segments of layers, their results, and the totals."""

    network: str
    arch: str
    batch: int
    training: bool
    solver: str
    objective: str
    segments: tuple[tuple[str, ...], ...]
    layers: tuple[LayerResult, ...]
    energy: dict[str, float]  # joules per component
    time: float  # cycles
    solver_seconds: float
    valid: bool
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def energy_j(self) -> float:
        return sum(self.energy.values())

    def layer(self, name: str) -> LayerResult:
        for lr in self.layers:
            if lr.name == name:
                return lr
        raise UnknownLayerError(f"no layer '{name}' in the schedule of '{self.network}' (layers: "
                                f"{', '.join(lr.name for lr in self.layers)})")

    @property
    def complete(self) -> bool:
        """False when the search stopped early (budget, Ctrl-C): the best of what it solved."""
        return bool(self.extra.get("complete", True))

    def to_dict(self) -> dict[str, Any]:
        """The JSON result (``docs/result-schema.json``): figures in the units of ``UNITS``."""
        return {
            "format": "kapla-schedule",
            "version": RESULT_VERSION,
            "units": UNITS,
            "network": self.network,
            "arch": self.arch,
            "batch": self.batch,
            "training": self.training,
            "solver": self.solver,
            "objective": self.objective,
            "energy_j": self.energy_j,
            "time_cycles": cycles(self.time),
            "breakdown": dict(self.energy),
            "solver_seconds": self.solver_seconds,
            "valid": self.valid,
            "complete": self.complete,
            "pinned_load_j": 0.0,
            "segments": [list(s) for s in self.segments],
            "layers": [lr.to_dict() for lr in self.layers],
            **self.extra,
        }
