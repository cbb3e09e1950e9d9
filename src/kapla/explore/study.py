"""Studies as code: a named set of points and how to read their rows.

A study is a class with a ``name`` and a ``points()`` method, in a package
of its own under ``explore/studies/`` (or a third-party package), registered
by its plug-in's ``register`` (``registry.study(NAME, SUMMARY, FACTORY)``).
:func:`run_study` builds it with the user's options, runs its points
(:mod:`kapla.explore.sweep`) and returns its rows; the benchmarks run
studies instead of looping over the CLI.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kapla.errors import KaplaError
from kapla.explore.sweep import Point, SweepProgress, run_points
from kapla.scheduling.registry import check_option_names, registry


class Study(ABC):
    """A named set of schedules, run side by side."""

    name: ClassVar[str]

    @abstractmethod
    def points(self) -> list[Point]: ...

    def summarise(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The study's table from its rows (default: the rows)."""
        return rows


@dataclass(frozen=True)
class StudyResult:
    study: str
    rows: tuple[dict[str, Any], ...]
    table: tuple[dict[str, Any], ...]


def make_study(name: str, options: Mapping[str, Any] | None = None) -> Study:
    """The registered study ``name`` built with ``options`` (KaplaError naming what is wrong)."""
    studies = registry().studies
    if name not in studies:
        raise KaplaError(f"unknown study '{name}'; choose one of {', '.join(studies) or 'none'}")
    entry = studies[name]
    options = dict(options or {})
    check_option_names(f"study '{name}'", options, entry.options)
    try:
        return entry.make(**options)
    except (TypeError, ValueError) as exc:
        raise KaplaError(f"study '{name}': {exc}") from None


def run_study(name: str, options: Mapping[str, Any] | None = None, jobs: int | None = None,
              progress: SweepProgress | None = None) -> StudyResult:
    study = make_study(name, options)
    rows = run_points(study.points(), jobs, progress)
    return StudyResult(name, tuple(rows), tuple(study.summarise(rows)))


__all__ = ["Study", "StudyResult", "make_study", "run_study"]
