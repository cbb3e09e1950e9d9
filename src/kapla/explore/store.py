"""Finished sweep points on disk: a sweep stopped at any point and run again
with the same store skips every point it finished and loses nothing.

A store is a directory with one JSON file per point, named by the point's
key: a digest of everything its schedule depends on (the network's layers
and edges, the whole hardware spec but its name, batch, training, solver, its options,
the objective and kapla's version), not of what the sweep calls it, so two
sweeps that share a point share its record. A record is written to a file
of its own and renamed into place, which is atomic: sweeps running at once
on one store never see half a record, and when two finish the same point
the second rename replaces the first's equal record.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from kapla.errors import KaplaError
from kapla.explore.sweep import Point
from kapla.scheduling.store import kapla_version
from kapla.workload.network import Network


def _network_text(network: Network | str) -> str:
    if isinstance(network, str):
        return network
    # sorted where the network keeps sets: a key must not depend on the process's hash seed
    return repr((network.name, network.batch, sorted(network.inputs.items()), network.layers, network.edges,
                 sorted(network.kept), network.training))


def point_key(point: Point) -> str:
    """What a point's schedule depends on, as a digest (see the module)."""
    text = json.dumps({
        "network": _network_text(point.network),
        "arch": {k: v for k, v in point.arch.to_dict().items() if k != "name"},  # a name changes no cost
        "batch": point.batch,
        "training": point.training,
        "solver": point.solver,
        "objective": point.objective,
        "options": {k: repr(v) for k, v in sorted(point.options.items())},
        "kapla": kapla_version(),
    }, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class PointStore:
    """A directory of finished points (see the module)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise KaplaError(f"--store {path}: not a directory (a sweep's store is a directory of points)")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KaplaError(f"--store {path}: cannot create it ({exc.strerror})") from None

    def _file(self, key: str) -> Path:
        return self.path / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The row stored under ``key``, or None (a record that cannot be read counts as none)."""
        try:
            record = json.loads(self._file(key).read_text())
        except (OSError, ValueError):
            return None
        row = record.get("row") if isinstance(record, dict) else None
        return row if isinstance(row, dict) and record.get("key") == key else None

    def put(self, key: str, point: Point, row: dict[str, Any]) -> None:
        record = {"key": key, "network": point.network if isinstance(point.network, str) else point.network.name,
                  "arch": point.arch.name, "labels": {k: _plain(v) for k, v in point.labels.items()},
                  "row": row}
        # not "*.json": a writer killed before its rename leaves this behind, and it is no record
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(fd, "w") as out:
                json.dump(record, out)
            os.replace(tmp, self._file(key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __len__(self) -> int:
        return sum(1 for p in self.path.glob("*.json") if not p.name.startswith("."))


def _plain(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None), list)) else str(value)


__all__ = ["PointStore", "point_key"]
