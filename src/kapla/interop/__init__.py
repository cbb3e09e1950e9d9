"""Other tools' schedules in kapla: read them, evaluate them with kapla's
evaluator and set the two tools' figures side by side.

Layering: interop uses workload, arch, dataflow, model and errors; the CLI
uses interop; solvers are not involved (the schedules are given).
"""

from kapla.interop.nn_dataflow import ImportResult, import_schedule

__all__ = ["ImportResult", "import_schedule"]
