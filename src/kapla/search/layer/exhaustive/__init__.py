"""The exhaustive intra-layer search: the reference optimum."""

from __future__ import annotations

from typing import Any

from kapla.search.layer.exhaustive.solver import ExhaustiveIntraSolver


def register(registry: Any) -> None:
    registry.layer_solver("exhaustive", "the reference optimum: every partition, mapping, blocking and loop-order "
                          "class, with branch and bound", ExhaustiveIntraSolver)
    registry.solver("exhaustive", "the exhaustive baseline: every inter-layer scheme, exhaustive intra-layer "
                    "search (slow; bound it with --budget)", "exhaustive", "exhaustive")


__all__ = ["ExhaustiveIntraSolver", "register"]
