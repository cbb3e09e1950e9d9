"""Hardware design-space exploration: one network scheduled on every point of a
grid of hardware variants (Interstellar's sweeps of register-file and SRAM
sizes, PE arrays, levels).

Every point is a full schedule on its own hardware, costed and checked by the
evaluator (:mod:`kapla.explore.sweep`); a point whose hardware cannot run the
network is a row with status ``infeasible``, not an error. The result names
the best point under the objective and the Pareto front of energy against
on-chip capacity (every on-chip buffer of the chip, in bytes: the area proxy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kapla.arch.describe import show_value
from kapla.arch.spec import ArchSpec, SplitCapacity
from kapla.errors import KaplaError
from kapla.explore.grid import Field, parse_vary, plain, variants
from kapla.explore.store import PointStore
from kapla.explore.sweep import OK, Point, run_points
from kapla.scheduling.registry import make_solver
from kapla.workload.network import Network


def onchip_bytes(arch: ArchSpec) -> int:
    """Bytes of every on-chip buffer of the chip (each level's capacity times its units)."""
    total = 0
    for level in arch.levels[:-1]:
        capacity = level.capacity
        size = capacity.total if isinstance(capacity, SplitCapacity) else capacity
        total += int(size or 0) * arch.units(level.name)
    return total


def _score(row: dict[str, Any], objective: str) -> float:
    energy, cycles = row["energy_j"], row["time_cycles"]
    return {"energy": energy, "latency": cycles, "edp": energy * cycles}[objective]


def pareto_front(rows: Sequence[dict[str, Any]]) -> list[int]:
    """Indices of the finished rows no other finished row beats on both energy and
    on-chip bytes (ties kept once: the first of equal points), by on-chip bytes."""
    done = [i for i, r in enumerate(rows) if r["status"] == OK]
    front = []
    for i in done:
        e, b = rows[i]["energy_j"], rows[i]["onchip_bytes"]
        beaten = any((rows[j]["energy_j"] <= e and rows[j]["onchip_bytes"] <= b)
                     and (rows[j]["energy_j"] < e or rows[j]["onchip_bytes"] < b or j < i) for j in done if j != i)
        if not beaten:
            front.append(i)
    return sorted(front, key=lambda i: (rows[i]["onchip_bytes"], rows[i]["energy_j"]))


@dataclass(frozen=True)
class Exploration:
    """A sweep's rows (one per point, in grid order), its best point and Pareto front."""

    network: str
    arch: str
    batch: int
    training: bool
    solver: str
    objective: str
    fields: tuple[Field, ...]
    rows: tuple[dict[str, Any], ...]
    best: int | None
    pareto: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        def point(row: dict[str, Any]) -> dict[str, Any]:
            return {"vary": {f.name: plain(row["vary"][f.name]) for f in self.fields},
                    **{k: row.get(k) for k in ("energy_j", "time_cycles", "utilisation", "valid", "status",
                                                "onchip_bytes", "seconds", "message")}}

        return {
            "format": "kapla-exploration", "version": 1,
            "network": self.network, "arch": self.arch, "batch": self.batch, "training": self.training,
            "solver": self.solver, "objective": self.objective,
            "fields": {f.name: [plain(v) for v in f.values] for f in self.fields},
            "labels": {f.name: f.shown() for f in self.fields},
            "points": [point(r) for r in self.rows],
            "best": None if self.best is None else point(self.rows[self.best]),
            "pareto": list(self.pareto),
        }


def explore(network: Network, arch: ArchSpec, vary: Sequence[str | Field], *, solver: str = "kapla",
            options: dict[str, Any] | None = None, objective: str = "energy", jobs: int | None = None,
            executor: str = "local", address: str | None = None, store: PointStore | str | Path | None = None,
            progress: Callable[[int, int], None] | None = None) -> Exploration:
    """``network`` scheduled on every variant of ``arch`` the ``vary`` fields make
    (``"REGF.capacity=16B,32B"`` or parsed :class:`~kapla.explore.grid.Field`)."""
    make_solver(solver, dict(options or {}))  # a bad solver or option: one error before any point runs
    fields = [f if isinstance(f, Field) else parse_vary(f, arch) for f in vary]
    if not fields:
        raise KaplaError("--vary: give at least one field to vary, e.g. --vary REGF.capacity=16B,32B,64B")
    grid = variants(arch, fields)
    points = [Point(network, spec, None, network.training, solver, objective, dict(options or {}),
                    labels={"vary": labels}) for labels, spec in grid]
    rows = run_points(points, jobs, progress, store=store, executor=executor, address=address)
    out = []
    for (labels, spec), row in zip(grid, rows, strict=True):
        out.append({**row, "vary": labels, "onchip_bytes": onchip_bytes(spec)})
    done = [i for i, r in enumerate(out) if r["status"] == OK]
    best = min(done, key=lambda i: (_score(out[i], objective), i)) if done else None
    return Exploration(network.name, arch.name, network.batch, network.training, solver, objective,
                       tuple(fields), tuple(out), best, tuple(pareto_front(out)))


def label(row: dict[str, Any]) -> str:
    """A point as ``REGF.capacity=32 B, GBUF.capacity=64 KiB``."""
    return ", ".join(f"{name}={show_value(value)}" for name, value in row["vary"].items())


def shown(result: Exploration, row: dict[str, Any], name: str) -> str:
    """A point's value of field ``name`` as the sweep's tables show it."""
    field = next(f for f in result.fields if f.name == name)
    return field.shown()[[plain(v) for v in field.values].index(plain(row["vary"][name]))]


def plot(result: Exploration, path: str | Path) -> None:
    """The sweep drawn to a PNG or SVG file: energy against the field (one
    field) or as a heatmap (two), beside the Pareto front of energy against
    on-chip capacity. Needs matplotlib (``pip install kapla[plot]``)."""
    from kapla.report.plots import sweep_plot

    if result.best is None:
        raise KaplaError("--plot: no point of the sweep finished, so there is nothing to draw")
    sweep_plot(result.to_dict(), path)


__all__ = ["Exploration", "explore", "label", "onchip_bytes", "pareto_front", "plot", "shown"]
