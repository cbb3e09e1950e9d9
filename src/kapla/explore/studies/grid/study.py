"""Every network on every hardware, batch and mode, with one solver."""

from __future__ import annotations

from collections.abc import Sequence

from kapla.arch import load_arch
from kapla.explore.study import Study
from kapla.explore.sweep import Point


def _names(value: str | Sequence[str]) -> list[str]:
    return value.split(",") if isinstance(value, str) else list(value)


class GridStudy(Study):
    name = "grid"

    def __init__(self, nets: str | Sequence[str] = "alexnet", archs: str | Sequence[str] = "multinode",
                 batches: str | Sequence[int] = "64", modes: str | Sequence[str] = "inference",
                 solver: str = "kapla") -> None:
        self.nets = _names(nets)
        self.archs = _names(archs)
        self.batches = [int(b) for b in _names(batches)] if isinstance(batches, str) else list(batches)
        self.modes = _names(modes)
        for mode in self.modes:
            if mode not in ("inference", "training"):
                raise ValueError(f"modes: '{mode}' is neither inference nor training")
        self.solver = solver

    def points(self) -> list[Point]:
        out = []
        for arch_name in self.archs:
            arch = load_arch(arch_name)
            for batch in self.batches:
                for mode in self.modes:
                    for net in self.nets:
                        out.append(Point(net, arch, batch, mode == "training", self.solver,
                                         labels={"arch": arch.name, "batch": batch, "mode": mode, "network": net}))
        return out
