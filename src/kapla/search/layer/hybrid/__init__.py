"""A Timeloop-Hybrid-like mapper: CoSA's stronger baseline."""

from __future__ import annotations

from typing import Any

from kapla.search.layer.hybrid.solver import HybridSolver


def register(registry: Any) -> None:
    registry.layer_solver("hybrid", "Timeloop-Hybrid-like: random factorisations, each over its pruned loop orders, "
                          "until 500 valid mappings in a row do not improve, 4 such searches (seeded)", HybridSolver)
    registry.solver("hybrid", "the Timeloop-Hybrid-like mapper for every layer (options patience, samples, threads, "
                    "seed, time_budget) under KAPLA's segment search", "kapla", "hybrid")


__all__ = ["HybridSolver", "register"]
