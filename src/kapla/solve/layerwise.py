"""Schedule a network one layer at a time, each on the whole node array.

Every layer is its own segment (no pipelining): it reads its input from
DRAM and writes its output back. Layers with the same shape are solved once
(the cache is keyed by everything but the name).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.model.evaluate import STATIC, evaluate
from kapla.solve.base import IntraSolver, NoSchemeError, check_objective, no_scheme
from kapla.solve.result import LayerResult, ScheduleResult
from kapla.workload.layer import Layer
from kapla.workload.network import Network

Progress = Callable[[str], None]


def shape_key(layer: Layer) -> Layer:
    """The layer with its identity removed: equal keys need equal schemes."""
    return replace(layer, name="_", forward=None)


def schedule_layerwise(network: Network, arch: ArchSpec, solver: IntraSolver, objective: str = "energy",
                       progress: Progress | None = None) -> ScheduleResult:
    check_objective(objective)
    start = time.perf_counter()
    solved: dict[Layer, LayerScheme] = {}
    results = []
    for layer in network:
        key = shape_key(layer)
        ifm = "+".join(network.producers(layer.name))
        t0 = time.perf_counter()
        if key not in solved:
            try:
                solved[key] = solver.solve(key, network.batch, arch, objective).scheme
            except NoSchemeError:
                raise no_scheme(layer, network.batch, arch) from None
        generic = solved[key]
        scheme = LayerScheme(layer, generic.batch, generic.unit, generic.levels, ifm_name=ifm)
        cost = evaluate(scheme, arch)
        results.append(LayerResult(layer.name, scheme, cost, ((0, 0), arch.node_array),
                                   time.perf_counter() - t0))
        if progress is not None:
            progress(layer.name)
    energy: dict[str, float] = {}
    for r in results:
        for component, joules in r.cost.energy.items():
            energy[component] = energy.get(component, 0.0) + joules
    total_time = sum(r.cost.time for r in results)
    energy[STATIC] = total_time * arch.static_energy
    return ScheduleResult(
        network=network.name, arch=arch.name, batch=network.batch, training=network.training,
        solver=solver.name, objective=objective,
        segments=tuple((r.name,) for r in results), layers=tuple(results),
        energy=energy, time=total_time, solver_seconds=time.perf_counter() - start,
        valid=all(r.cost.valid for r in results),
    )
