"""ML-guided search, AutoTVM-style (the KAPLA paper's baseline M)."""

from __future__ import annotations

from typing import Any

from kapla.search.layer.ml.solver import MlIntraSolver


def register(registry: Any) -> None:
    registry.layer_solver("ml", "AutoTVM-style ML-guided search: simulated annealing on an XGBoost cost model "
                          "retrained on the schemes measured so far", MlIntraSolver)
    registry.solver("ml", "ML-guided search, the KAPLA paper's baseline M: every inter-layer scheme, each layer "
                    "tuned by annealing on a learned cost model (options rounds, batch; seed; needs kapla[ml])",
                    "exhaustive", "ml")


__all__ = ["MlIntraSolver", "register"]
