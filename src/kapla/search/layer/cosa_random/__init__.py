"""CoSA's Random baseline: the best of five valid random schedules."""

from __future__ import annotations

from typing import Any

from kapla.search.layer.cosa_random.solver import CosaRandomSolver


def register(registry: Any) -> None:
    registry.layer_solver("cosa_random", "CoSA's Random baseline: random placements of the prime factors until 5 "
                          "are valid (at most 20,000 drawn), the best wins (seeded)", CosaRandomSolver)
    registry.solver("cosa_random", "CoSA's Random baseline for every layer (options valid, samples, seed) under "
                    "KAPLA's segment search", "kapla", "cosa_random")


__all__ = ["CosaRandomSolver", "register"]
