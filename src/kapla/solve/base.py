"""What every intra-layer solver shares: its interface, result and objectives."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.errors import KaplaError
from kapla.model.evaluate import Feed, LayerCost
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


class IntraSolver(Protocol):
    """Finds a scheme for one layer on a block of nodes (``arch``), minimising ``objective``.

    ``feed`` (default: everything through DRAM) says which data stay on chip
    when the layer runs inside a segment; the scheme returned must satisfy its
    constraints (a forwarded input or pinned weights fetched once, an output
    kept on chip never spilled) and is costed with it.
    """

    name: str

    def solve(self, layer: Layer, batch: int, arch: ArchSpec, objective: str = "energy",
              ifm_name: str | None = None, feed: Feed | None = None) -> IntraResult: ...


def shape_key(layer: Layer) -> Layer:
    """The layer with its identity removed: equal keys need equal schemes (a solver cache key)."""
    return replace(layer, name="_", forward=None)


def check_objective(objective: str) -> str:
    if objective not in OBJECTIVES:
        raise KaplaError(f"unknown objective '{objective}'; choose one of {', '.join(OBJECTIVES)}")
    return objective


def no_scheme(layer: Layer, batch: int, arch: ArchSpec) -> NoSchemeError:
    """The error for a layer nothing fits: name the layer and the buffer that is too small."""
    from kapla.dataflow.mapping import pe_mappings
    from kapla.dataflow.tensors import footprint, layer_dims, tensor_roles

    full = layer_dims(layer, batch)
    regf = arch.levels[0]
    smallest = None
    for m in pe_mappings(arch.pe_mapping, layer, {d: 1 if d in "NGCK" else full[d] for d in full}, arch.pe_array):
        unit = {d: 1 for d in full} | m.unit_dims
        words = sum(footprint(r.kind, unit, layer) * r.copies for r in tensor_roles(layer))
        smallest = words if smallest is None else min(smallest, words)
    if smallest is not None and smallest * arch.word_bytes > (regf.capacity or 0):
        return NoSchemeError(
            f"layer '{layer.name}' does not fit: its smallest PE block needs {smallest * arch.word_bytes} B "
            f"of {regf.name} but {regf.name} holds {regf.capacity} B")
    node = arch.levels[1]
    return NoSchemeError(
        f"layer '{layer.name}' does not fit: no partition over {arch.node_array[0]}x{arch.node_array[1]} nodes "
        f"leaves a block that fits the {node.capacity} B {node.name} (batch {batch})")
