"""The Python API: ``kapla.schedule(network, arch, ...)``.

>>> import kapla
>>> result = kapla.schedule("mlp_s", "multinode", batch=16)
>>> result.valid, result.energy_j > 0
(True, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kapla.arch import load_arch
from kapla.arch.spec import ArchSpec
from kapla.model.objective import objective_of
from kapla.scheduling.run import run
from kapla.scheduling.store import LayerStore
from kapla.scheduling.workers import check_jobs
from kapla.search.base import Progress
from kapla.search.result import ScheduleResult
from kapla.space.options import SearchOptions
from kapla.workload.load import load_network
from kapla.workload.network import Network


def resolve_network(network: Network | str | Path, batch: int | None = None, training: bool = False,
                    seq: int | None = None) -> Network:
    """``network`` (a Network, zoo name or file) at ``batch`` (None: its own), as its training DAG if asked;
    ``seq`` binds an ONNX model's symbolic sequence length."""
    if not isinstance(network, Network):
        return load_network(str(network), batch=batch, training=training, seq=seq)
    net = network.with_batch(batch) if batch is not None else network
    return net.to_training() if training and not net.training else net


def schedule(network: Network | str | Path, arch: ArchSpec | str | Path = "multinode", *,
             batch: int | None = None, training: bool = False, solver: str = "kapla",
             solver_options: Mapping[str, Any] | None = None, objective: str = "energy", top_k: int = 4,
             pipelining: bool = True, buffer_sharing: bool = True, time_budget: float | None = None,
             jobs: int | None = None, progress: Progress | None = None,
             store: LayerStore | str | Path | None = None, seq: int | None = None) -> ScheduleResult:
    """Schedule ``network`` (a Network, zoo name or file) on ``arch`` (a spec, preset or file).

    ``solver`` names a registered solver (``kapla solvers`` lists them): "kapla"
    runs KAPLA's pruned inter-layer search (keeping the ``top_k`` best segment
    chains) with its intra-layer solver; "exhaustive" solves every inter-layer
    scheme with the exhaustive intra-layer solver (bounded by ``time_budget``
    seconds, if given). ``solver_options`` go to the solver's parts (e.g.
    ``{"refine": 40}`` for KAPLA's intra-layer solver). ``pipelining=False``
    and ``buffer_sharing=False`` turn those optimisations off even where the
    hardware allows them (every layer then forms its own segment). ``jobs``
    worker processes solve layers in parallel (default: one per CPU, at most
    4; 1 runs everything in this process); the result does not depend on it.
    ``store`` (a file, or an open :class:`~kapla.scheduling.store.LayerStore`) keeps
    every finished layer solve on disk: a run stopped at any point and started
    again with the same store resumes without solving a layer twice.
    ``seq`` binds an ONNX model's symbolic sequence length.
    """
    objective_of(objective)
    net = resolve_network(network, batch, training, seq)
    hw = arch if isinstance(arch, ArchSpec) else load_arch(str(arch))
    check_jobs(jobs)
    search = SearchOptions(pipelining, buffer_sharing, top_k)
    if store is None or isinstance(store, LayerStore):
        return run(net, hw, solver, options=solver_options, objective=objective, search=search,
                   time_budget=time_budget, jobs=jobs, progress=progress, store=store)
    with LayerStore(store) as opened:
        return run(net, hw, solver, options=solver_options, objective=objective, search=search,
                   time_budget=time_budget, jobs=jobs, progress=progress, store=opened)


def recost(document: Mapping[str, Any] | str | Path, network: Network | str | Path | None = None,
           arch: ArchSpec | str | Path | None = None) -> ScheduleResult:
    """A saved schedule (a ``kapla schedule --json`` document, or its file) costed
    and checked by this kapla's cost model on ``arch`` (default: its own hardware,
    by name); ``network`` is the network it schedules (default: the one it names,
    at its batch and mode). A schedule another version of kapla made is so
    compared with a new one under one model, or one schedule under other energy
    tables of the same node array (:mod:`kapla.scheduling.recost`)."""
    from kapla.scheduling.recost import read_document
    from kapla.scheduling.recost import recost as recost_document

    doc = read_document(document)
    net = resolve_network(network if network is not None else str(doc.get("network")), doc.get("batch"),
                          bool(doc.get("training", False)))
    hw = arch if isinstance(arch, ArchSpec) else load_arch(str(arch if arch is not None else doc.get("arch")))
    return recost_document(doc, net, hw)
