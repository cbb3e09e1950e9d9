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
from kapla.solve.layerwise import schedule_layerwise
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
             objective: str = "energy", progress: Callable[[str], None] | None = None) -> ScheduleResult:
    """Schedule ``network`` (a Network, zoo name or file) on ``arch`` (a spec, preset or file)."""
    if isinstance(network, Network):
        net = network.with_batch(batch) if batch is not None else network
        if training and not net.training:
            net = net.to_training()
    else:
        net = load_network(str(network), batch=batch, training=training)
    hw = arch if isinstance(arch, ArchSpec) else load_arch(str(arch))
    return schedule_layerwise(net, hw, make_solver(solver), objective, progress)
