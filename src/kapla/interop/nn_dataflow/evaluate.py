"""kapla's evaluation of an nn_dataflow schedule, under nn_dataflow's conventions."""

from __future__ import annotations

from kapla.arch.spec import ArchSpec
from kapla.interop.nn_dataflow.figures import ToolFigures
from kapla.interop.nn_dataflow.reader import NnDataflowRun
from kapla.workload.network import Network


def kapla_figures(run: NnDataflowRun, net: Network, arch: ArchSpec) -> ToolFigures:
    """Convert each layer's scheme of ``run`` into kapla's directives and evaluate them on ``arch``.

    ``net`` is nn_dataflow's network as kapla builds it (:func:`~kapla.interop.nn_dataflow.networks.network_of_run`:
    layer names are the keys of ``run.schedules``); ``arch`` is the run's hardware
    (:func:`~kapla.interop.nn_dataflow.hardware.arch_from_run`). Returns kapla's
    figures: per layer in ``run.schedules`` order, with accesses keyed DRAM,
    GBUF, ITCN, REGF (:data:`~kapla.interop.nn_dataflow.reader.LEVELS`), and the
    network's total.
    """
    raise NotImplementedError("kapla's evaluation of nn_dataflow schedules is not written yet")
