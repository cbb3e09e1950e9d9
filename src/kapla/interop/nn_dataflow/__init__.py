"""nn_dataflow (the TETRIS/TANGRAM authors' tool): read its JSON output and
evaluate its schedules with kapla."""

from kapla.interop.nn_dataflow.reader import LEVELS, NnDataflowRun, parse_nn_dataflow, read_nn_dataflow

__all__ = ["LEVELS", "NnDataflowRun", "parse_nn_dataflow", "read_nn_dataflow"]
