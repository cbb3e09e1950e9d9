"""Import an nn_dataflow run: read it, rebuild its network and hardware, evaluate it with kapla."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from kapla.arch.spec import ArchSpec
from kapla.interop.nn_dataflow import evaluate
from kapla.interop.nn_dataflow.figures import UNITS, ToolFigures, nn_dataflow_figures
from kapla.interop.nn_dataflow.hardware import arch_from_run
from kapla.interop.nn_dataflow.networks import network_of_run
from kapla.interop.nn_dataflow.reader import NnDataflowRun, read_nn_dataflow
from kapla.workload.network import Network

IMPORT_FORMAT = "kapla-import"
IMPORT_VERSION = 1  # of the JSON document (docs/result-schema.json); raised when a field changes meaning


@dataclass(frozen=True)
class ImportResult:
    """An nn_dataflow run, what kapla made of it, and both tools' figures."""

    run: NnDataflowRun
    network: Network
    arch: ArchSpec
    kapla: ToolFigures
    nn_dataflow: ToolFigures

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (``docs/result-schema.json``, ``kapla-import``)."""
        return {
            "format": IMPORT_FORMAT,
            "version": IMPORT_VERSION,
            "units": UNITS,
            "net": self.run.net,
            "batch": self.run.batch,
            "arch": self.arch.name,
            "nn_dataflow_version": self.run.version,
            "nn_dataflow_search_seconds": self.run.elapsed,
            "kapla": self.kapla.to_dict(),
            "nn_dataflow": self.nn_dataflow.to_dict(),
        }


def import_schedule(path: str | os.PathLike[str], base: ArchSpec | None = None) -> ImportResult:
    """Read nn_dataflow's JSON output at ``path`` and evaluate its schedule with kapla.

    The hardware is ``base`` (default: :data:`~kapla.interop.nn_dataflow.hardware.BASE_PRESET`)
    with the file's resource and cost; the network is nn_dataflow's, rebuilt by
    name. Raises a one-line :class:`~kapla.errors.KaplaError` for a file that
    is not a readable, consistent nn_dataflow output of a network kapla knows.
    """
    run = read_nn_dataflow(path)
    network = network_of_run(run)
    arch = arch_from_run(run, base)
    # looked up on the module at call time, so a test can stand in for the evaluation
    ours = evaluate.kapla_figures(run, network, arch)
    return ImportResult(run, network, arch, ours, nn_dataflow_figures(run))
