"""Random search, Timeloop-style (the KAPLA paper's baseline R)."""

from __future__ import annotations

from typing import Any

from kapla.search.layer.random.solver import RandomIntraSolver


def register(registry: Any) -> None:
    registry.layer_solver("random", "Timeloop-style random search: each partition, mapping, blocking and loop order "
                          "evaluated with probability p (seeded)", RandomIntraSolver)
    registry.solver("random", "random search, the KAPLA paper's baseline R: every level of the space sampled with "
                    "probability p (option p, default 0.1; seed)", "random", "random")


__all__ = ["RandomIntraSolver", "register"]
