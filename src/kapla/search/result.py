"""The outcome of scheduling a network: per-layer schemes and costs, and totals."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.listing import format_scheme
from kapla.dataflow.segment import SegmentScheme
from kapla.errors import KaplaError
from kapla.model.evaluate import STATIC, LayerCost
from kapla.model.hardware import word_energy
from kapla.model.segment import SegmentCost
from kapla.space.network.inter import weight_words
from kapla.workload.network import Network

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
    region: tuple[tuple[int, int], tuple[int, int]]  # origin, shape (a folded region: its first node, stripe x columns)
    solver_seconds: float = 0.0
    pes: int = 0  # PEs of its region (0: not known)
    chip_nodes: int = 0  # nodes of the whole chip (0: not known)
    folded: tuple[tuple[int, int], ...] = ()  # a folded region's nodes on the array (empty: a rectangle)
    solver_details: Mapping[str, Any] = field(default_factory=dict)  # its layer solver's own report (a MIP's status)
    #: the MACs ``cost`` covers where that is more than ``scheme``'s (0: the scheme's): an atomic
    #: schedule's layer is costed over all its atoms, each on one engine, and shows its largest atom's scheme
    cost_macs: int = 0
    #: the layer of its segment that fetched their common input from DRAM and passed it on (None: none)
    shares_input_of: str | None = None
    #: the layers of its segment whose outputs it reads on chip, forwarded over the NoC
    inputs_on_chip: tuple[str, ...] = ()
    #: its weights stay on chip over the batches (model pinning)
    weights_pinned: bool = False

    @property
    def region_text(self) -> str:
        """rows x columns @ top-left node, or for a folded region stripe x columns folded @ first node."""
        (r0, c0), (rows, cols) = self.region
        return f"{rows}x{cols}{' folded' if self.folded else ''}@{r0},{c0}"

    @property
    def macs(self) -> int:
        return self.cost_macs or self.scheme.layer.macs * self.scheme.batch

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
            "region": {"origin": list(self.region[0]), "shape": list(self.region[1]),
                       **({"nodes": [list(c) for c in self.folded]} if self.folded else {})},
            "directives": format_scheme(self.scheme),
            "inputs_on_chip": list(self.inputs_on_chip),
            "weights_pinned": self.weights_pinned,
            **({"input_shared_from": self.shares_input_of} if self.shares_input_of else {}),
            **({"solver_details": dict(self.solver_details)} if self.solver_details else {}),
        }


@dataclass(frozen=True)
class SegmentResult:
    """Layers that run together (one step of a schedule, one after another):
    how they share the chip, and what the step costs."""

    layers: tuple[str, ...]
    layout: str  # single, spatial (each slot on its own nodes, pipelined) or temporal (one after another)
    slots: tuple[tuple[str, ...], ...]
    energy_j: float
    time_cycles: int
    groups: int = 1  # batch groups flowing through (ALLO)
    pinned: bool = False  # some of its weights stay on chip over the batches

    def to_dict(self) -> dict[str, Any]:
        return {"layers": list(self.layers), "layout": self.layout, "groups": self.groups,
                "slots": [list(s) for s in self.slots], "pinned": self.pinned, "energy_j": self.energy_j,
                "time_cycles": self.time_cycles}


@dataclass(frozen=True)
class Stopped:
    """Why a search stopped before it finished (its best schedule by then is the result)."""

    by: str  # "budget" or "interrupt"
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"by": self.by, "reason": self.reason}


@dataclass(frozen=True)
class StoreUse:
    """How a run used its on-disk layer store: solves taken from it, solves recorded in it."""

    path: str
    reused: int
    solved: int

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "reused": self.reused, "solved": self.solved}


@dataclass(frozen=True)
class ScheduleResult:
    """A whole network's schedule, whatever scheduler made it: its steps
    (segments of layers that run together, one after another), every layer's
    scheme and cost, and the totals. ``extra`` holds what one scheduler adds
    (its search statistics), written into the JSON as they are."""

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
    scheduler: str = ""  # the network scheduler that made it
    segment_details: tuple[SegmentResult, ...] = ()
    pinned: bool = False  # weights stay on chip over the batches (loaded once, before)
    pinned_load_j: float = 0.0  # loading them, not included in the energy
    stopped: Stopped | None = None  # None: the search ran to its end
    store: StoreUse | None = None  # the layer store, when the run had one
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
        return self.stopped is None

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
            **({"stopped": self.stopped.to_dict()} if self.stopped is not None else {}),
            "scheduler": self.scheduler,
            "pinned": self.pinned,
            "pinned_load_j": self.pinned_load_j,
            "segments": [list(s) for s in self.segments],
            "segment_details": [s.to_dict() for s in self.segment_details],
            "layers": [lr.to_dict() for lr in self.layers],
            **({"layer_store": self.store.to_dict()} if self.store is not None else {}),
            **self.extra,
        }


#: One step of a schedule: its layers (in the order the scheduler lists them), their schemes and its cost.
Step = tuple[tuple[str, ...], SegmentScheme, SegmentCost]


def pins(segment: SegmentScheme) -> bool:
    """Some of the segment's weights stay on chip."""
    return any(place.pinned for place in segment.placements.values())


def pinned_load(net: Network, arch: ArchSpec, segments: Sequence[SegmentScheme]) -> float:
    """Loading the weights the segments pin, once before the runs (nn_dataflow's
    convention: reported beside a schedule's energy, not charged in it)."""
    held = [name for segment in segments for name, place in segment.placements.items() if place.pinned]
    return sum(weight_words(net[name]) for name in held) * word_energy(arch, -1) if held else 0.0


def from_steps(net: Network, arch: ArchSpec, steps: Sequence[Step], *, solver: str, objective: str,
               scheduler: str, seconds: float, pinned_load_j: float = 0.0, stopped: Stopped | None = None,
               extra: dict[str, Any] | None = None) -> ScheduleResult:
    """The result of running ``steps`` one after another: every layer's
    scheme, region and cost, the energy by component, the time in whole
    cycles, and valid only when every layer has exactly one scheme and every
    step passes the evaluator's check (an empty schedule is no answer)."""
    layers = []
    energy: dict[str, float] = {}
    details = []
    for names, segment, cost in steps:
        for name in segment.layers:
            place = segment.placements[name]
            layers.append(LayerResult(name, segment.schemes[name], cost.layers[name],
                                      (place.region.origin, place.region.shape),
                                      pes=place.region.nodes * arch.pes_per_node, chip_nodes=arch.num_nodes,
                                      folded=place.region.cells() if place.region.folded else (),
                                      shares_input_of=place.shares_input_of, inputs_on_chip=place.onchip_inputs,
                                      weights_pinned=place.pinned))
        for component, joules in cost.energy.items():
            energy[component] = energy.get(component, 0.0) + joules
        details.append(SegmentResult(tuple(names), segment.layout, segment.slots, cost.total_energy,
                                     cycles(cost.time), segment.groups, pins(segment)))
    order = {layer.name: i for i, layer in enumerate(net)}
    layers.sort(key=lambda lr: order[lr.name])
    energy.setdefault(STATIC, 0.0)
    complete = len(net) > 0 and sorted(lr.name for lr in layers) == sorted(layer.name for layer in net)
    return ScheduleResult(
        network=net.name, arch=arch.name, batch=net.batch, training=net.training, solver=solver,
        objective=objective, segments=tuple(tuple(names) for names, _, _ in steps), layers=tuple(layers),
        energy=energy, time=sum(d.time_cycles for d in details), solver_seconds=seconds,
        valid=complete and all(cost.valid for _, _, cost in steps), scheduler=scheduler,
        segment_details=tuple(details), pinned=any(d.pinned for d in details), pinned_load_j=pinned_load_j,
        stopped=stopped, extra=dict(extra or {}))
