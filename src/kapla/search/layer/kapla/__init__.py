"""KAPLA's intra-layer solver (Sec. IV-C): bottom-up cost descent."""

from __future__ import annotations

from typing import Any

from kapla.search.layer.kapla.solver import KaplaIntraSolver


def register(registry: Any) -> None:
    registry.layer_solver("kapla", "KAPLA's bottom-up cost descent (Sec. IV-C): skeletons ranked by an estimate, "
                          "the best searched level by level", KaplaIntraSolver)
    registry.solver("kapla", "KAPLA: pruned inter-layer search + bottom-up intra-layer descent", "kapla", "kapla")


__all__ = ["KaplaIntraSolver", "register"]
