"""Finished layer solves on disk, so a long network search can be stopped and resumed.

A store is one append-only file. Each finished layer solve is appended as
one record the moment it is known (and flushed to disk), under the *scope*
it belongs to: the intra-layer solver with its settings, the hardware and
the objective. A run that is killed loses at most the solves still in
flight; the next run with the same store takes every recorded solve instead
of solving it again, and a torn record at the end (the kill came mid-write)
is dropped. Scopes keep unrelated runs apart, so one store may serve several
solvers, networks and hardware: layers of one shape share their solves
across networks, inference and training.

Records are pickles of kapla's own value objects: open only stores you
made. A store belongs to one version of kapla (an upgrade may change what
a solver returns): its header records the version, and another version's
store is refused rather than trusted. One run at a time may hold a store.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import pickle
from pathlib import Path
from typing import IO, Any

from kapla.arch.spec import ArchSpec
from kapla.errors import KaplaError
from kapla.search.base import IntraSolver

FORMAT = "kapla-layer-store"
FORMAT_VERSION = 1


def kapla_version() -> str:
    """This kapla's version (what a stored result depends on beyond its inputs)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kapla")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree that is not installed
        return "unknown"


#: Settings that only bound a solver's time: a solve its budget cut short is never stored, so
#: every stored solve is the same whatever the budget was.
TIME_ONLY = frozenset({"time_budget"})


def scope_of(solver: IntraSolver, arch: ArchSpec, objective: str) -> str:
    """What a layer solve depends on beyond its layer key: the solver and its
    settings (its public attributes but its time budget), the hardware and the objective."""
    settings = sorted((k, v) for k, v in vars(solver).items()
                      if not k.startswith("_") and k not in TIME_ONLY
                      and isinstance(v, (int, float, str, bool, type(None))))
    text = repr((solver.name, settings, arch.model_dump_json(), objective))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class LayerStore:
    """An open store: ``get``/``put`` layer solves by scope and key."""

    def __init__(self, path: str | Path) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise KaplaError(f"a layer store is a file path (got {type(path).__name__})")
        self.path = Path(path)
        self.loaded = 0  # solves found on disk when opened
        self.added = 0  # solves recorded since
        self._entries: dict[tuple[str, Any], Any] = {}
        try:
            self._file: IO[bytes] = open(self.path, "a+b")  # noqa: SIM115 - held open for the run
        except OSError as exc:
            raise KaplaError(f"cannot open layer store {self.path}: {exc.strerror}") from None
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._file.close()
            raise KaplaError(f"layer store {self.path} is in use by another kapla run") from None
        try:
            self._load()
        except BaseException:
            self.close()
            raise

    def _load(self) -> None:
        self._file.seek(0)
        data = self._file.read()
        header = {"format": FORMAT, "version": FORMAT_VERSION, "kapla": kapla_version()}
        if not data:
            self._append(header)
            return
        stream = io.BytesIO(data)
        try:
            first = pickle.load(stream)
        except Exception:
            first = None
        if not isinstance(first, dict) or first.get("format") != FORMAT:
            raise KaplaError(f"{self.path} is not a kapla layer store")
        if first != header:
            raise KaplaError(f"layer store {self.path} was written by kapla {first.get('kapla')} (format "
                             f"{first.get('version')}), this is kapla {header['kapla']}: delete it to start afresh")
        good = stream.tell()
        while good < len(data):
            try:
                scope, key, value = pickle.load(stream)
            except Exception:  # a record torn by a kill mid-write: drop it and what follows
                break
            self._entries[(scope, key)] = value
            good = stream.tell()
        if good < len(data):
            self._file.truncate(good)
        self.loaded = len(self._entries)

    def _append(self, record: object) -> None:
        self._file.seek(0, os.SEEK_END)
        self._file.write(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
        self._file.flush()
        os.fsync(self._file.fileno())

    def __contains__(self, item: tuple[str, Any]) -> bool:
        return item in self._entries

    def get(self, scope: str, key: Any) -> Any:
        return self._entries[(scope, key)]

    def put(self, scope: str, key: Any, value: Any) -> None:
        if (scope, key) in self._entries:
            return
        self._entries[(scope, key)] = value
        self._append((scope, key, value))
        self.added += 1

    def __len__(self) -> int:
        return len(self._entries)

    def close(self) -> None:
        if not self._file.closed:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()

    def __enter__(self) -> LayerStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["LayerStore", "scope_of"]
