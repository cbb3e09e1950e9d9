"""The Python API: ``kapla.schedule(network, arch, ...)``.

>>> import kapla
>>> result = kapla.schedule("mlp_s", "multinode", batch=16)
>>> result.valid, result.energy_j > 0
(True, True)
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from kapla.arch import load_arch
from kapla.arch.spec import ArchSpec
from kapla.errors import KaplaError
from kapla.solve.base import IntraSolver
from kapla.solve.exhaustive import ExhaustiveIntraSolver
from kapla.solve.kapla_intra import KaplaIntraSolver
from kapla.solve.network import Progress, schedule_network
from kapla.solve.result import ScheduleResult
from kapla.workload.load import load_network
from kapla.workload.network import Network

SOLVERS: dict[str, Callable[[], IntraSolver]] = {
    "kapla": KaplaIntraSolver,
    "exhaustive": ExhaustiveIntraSolver,
}


def make_solver(name: str) -> IntraSolver:
    try:
        return SOLVERS[name]()
    except KeyError:
        raise KaplaError(f"unknown solver '{name}'; choose one of {', '.join(SOLVERS)}") from None


def schedule(network: Network | str | Path, arch: ArchSpec | str | Path = "multinode", *,
             batch: int | None = None, training: bool = False, solver: str = "kapla",
             objective: str = "energy", top_k: int = 4, pipelining: bool = True, buffer_sharing: bool = True,
             time_budget: float | None = None, jobs: int | None = None,
             progress: Progress | None = None) -> ScheduleResult:
    """Schedule ``network`` (a Network, zoo name or file) on ``arch`` (a spec, preset or file).

    ``solver`` "kapla" runs KAPLA's pruned inter-layer search (keeping the
    ``top_k`` best segment chains) with its intra-layer solver; "exhaustive"
    solves every inter-layer scheme with the exhaustive intra-layer solver
    (bounded by ``time_budget`` seconds, if given). ``pipelining=False`` and
    ``buffer_sharing=False`` turn those optimisations off even where the
    hardware allows them (every layer then forms its own segment). ``jobs``
    worker processes solve layers in parallel (default: one per CPU, at most
    4; 1 runs everything in this process); the result does not depend on it.
    """
    if isinstance(network, Network):
        net = network.with_batch(batch) if batch is not None else network
        if training and not net.training:
            net = net.to_training()
    else:
        net = load_network(str(network), batch=batch, training=training)
    hw = arch if isinstance(arch, ArchSpec) else load_arch(str(arch))
    if not pipelining:
        hw = hw.with_options(spatial_layer_pipe=False, temporal_layer_pipe=False)
    if not buffer_sharing:
        hw = hw.with_options(buffer_sharing=False)
    return schedule_network(net, hw, make_solver(solver), objective, top_k=top_k,
                            exhaustive=solver == "exhaustive", time_budget=time_budget, progress=progress,
                            jobs=jobs)
