"""One network on every combination of hardware field values (a grid of variants)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from kapla.arch import load_arch
from kapla.explore import variants
from kapla.explore.study import Study
from kapla.explore.sweep import Point


class HardwareStudy(Study):
    name = "hardware"

    def __init__(self, network: str = "alexnet", arch: str = "multinode",
                 vary: Mapping[str, Sequence[Any]] | None = None, batch: int = 64, training: bool = False,
                 solver: str = "kapla") -> None:
        self.network, self.batch, self.training, self.solver = network, batch, training, solver
        self.base = load_arch(arch)
        fields = {k: list(v) for k, v in (vary or {}).items()}
        for key, values in fields.items():
            if not values:
                raise ValueError(f"vary: '{key}' has no values")
        self.changes = [dict(zip(fields, combo, strict=True)) for combo in itertools.product(*fields.values())]
        # every variant is built now: a bad field or value is an error before anything runs
        self.specs = [variants.vary(self.base, changes) for changes in self.changes]

    def points(self) -> list[Point]:
        return [Point(self.network, spec, self.batch, self.training, self.solver, labels=dict(changes))
                for changes, spec in zip(self.changes, self.specs, strict=True)]
