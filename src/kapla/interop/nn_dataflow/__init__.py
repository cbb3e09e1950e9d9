"""nn_dataflow (the TETRIS/TANGRAM authors' tool): read its JSON output and
evaluate its schedules with kapla.

>>> from kapla.interop.nn_dataflow import import_schedule
>>> result = import_schedule("run.json")          # doctest: +SKIP
>>> result.kapla.total.energy_j, result.nn_dataflow.total.energy_j  # doctest: +SKIP

Modules, one job each: :mod:`.reader` (the file as immutable objects),
:mod:`.networks` (nn_dataflow's networks in kapla), :mod:`.hardware` (its
resource and cost as an ArchSpec), :mod:`.figures` (what is compared),
:mod:`.evaluate` (kapla's evaluation of the schedules), :mod:`.importer`
(all of it together).
"""

from kapla.interop.nn_dataflow.figures import Figures, ToolFigures, nn_dataflow_figures
from kapla.interop.nn_dataflow.hardware import BASE_PRESET, arch_from_run
from kapla.interop.nn_dataflow.importer import ImportResult, import_schedule
from kapla.interop.nn_dataflow.networks import NETWORKS, network_of_run, nn_dataflow_network
from kapla.interop.nn_dataflow.reader import LEVELS, NnDataflowRun, parse_nn_dataflow, read_nn_dataflow

__all__ = [
    "BASE_PRESET",
    "LEVELS",
    "NETWORKS",
    "Figures",
    "ImportResult",
    "NnDataflowRun",
    "ToolFigures",
    "arch_from_run",
    "import_schedule",
    "network_of_run",
    "nn_dataflow_figures",
    "nn_dataflow_network",
    "parse_nn_dataflow",
    "read_nn_dataflow",
]
