"""The hardware study: one network on variants of one hardware, by field."""

from __future__ import annotations

from typing import Any

from kapla.explore.studies.hardware.study import HardwareStudy


def register(registry: Any) -> None:
    registry.study("hardware", "one network on variants of a base hardware (fields by level: REGF.capacity=...), "
                   "every combination", HardwareStudy)


__all__ = ["HardwareStudy", "register"]
