"""The grid study: networks x hardware x batches x modes with one solver."""

from __future__ import annotations

from typing import Any

from kapla.explore.studies.grid.study import GridStudy


def register(registry: Any) -> None:
    registry.study("grid", "every network on every hardware, batch and mode, one solver", GridStudy)


__all__ = ["GridStudy", "register"]
