"""Layer by layer: each layer alone on the whole array, one after another,
every fmap through DRAM. The baseline every multi-layer scheduler must beat."""

from __future__ import annotations

from typing import Any

from kapla.search.network.layerwise.scheduler import LayerwiseScheduler


def register(registry: Any) -> None:
    registry.network_scheduler("layerwise", "each layer alone on the whole array, in order, every fmap through "
                               "DRAM", LayerwiseScheduler)
    registry.solver("layerwise", "layer by layer: each layer on the whole array in order (KAPLA's layer solver), "
                    "no pipelining, no pinning", "layerwise", "kapla")


__all__ = ["LayerwiseScheduler", "register"]
