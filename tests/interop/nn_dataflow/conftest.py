"""nn_dataflow's two reference outputs (shared/reference/, copied into data/) and helpers.

``nn_dataflow_alexnet_per_layer.json``: AlexNet layer by layer, no buffer
sharing; ``nn_dataflow_mlp_s_tangram.json``: MLP-S with TANGRAM's buffer
sharing and layer pipelining (one segment of three layers).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kapla.interop.nn_dataflow import evaluate
from kapla.interop.nn_dataflow.figures import Figures, ToolFigures, nn_dataflow_figures

DATA = Path(__file__).parent / "data"
ALEXNET = DATA / "nn_dataflow_alexnet_per_layer.json"
MLP_S = DATA / "nn_dataflow_mlp_s_tangram.json"
REFERENCES = (ALEXNET, MLP_S)


@cache
def _loaded(path: Path) -> Any:
    return json.loads(path.read_text())


def reference_data(path: Path = MLP_S) -> dict[str, Any]:
    """A fresh, mutable copy of a reference file's JSON data."""
    return copy.deepcopy(_loaded(path))


@pytest.fixture
def write_json(tmp_path: Path) -> Callable[..., Path]:
    """Write data as JSON (or raw text / bytes) to ``tmp_path / name``."""

    def write(content: Any, name: str = "run.json") -> Path:
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content if isinstance(content, str) else json.dumps(content))
        return path

    return write


#: What the stand-in evaluation returns: nn_dataflow's figures times these, a
#: different factor per figure, so every ratio the CLI prints is known and a
#: column mixed up with another shows.
FACTORS = {"energy": 1.5, "time": 0.5, "DRAM": 2.0, "GBUF": 3.0, "ITCN": 4.0, "REGF": 5.0, "NoC": 6.0}


def scaled(figures: Figures) -> Figures:
    return Figures(figures.energy_j * FACTORS["energy"], figures.time_cycles * FACTORS["time"],
                   {level: words * FACTORS[level] for level, words in figures.accesses.items()},
                   figures.noc_hops * FACTORS["NoC"])


@pytest.fixture
def fake_evaluation(monkeypatch):
    """kapla's evaluation replaced by nn_dataflow's figures x FACTORS (its
    real body is written separately); records the arguments it got."""
    calls: list[tuple] = []

    def stand_in(run, net, arch):
        calls.append((run, net, arch))
        theirs = nn_dataflow_figures(run)
        return ToolFigures(scaled(theirs.total), {name: scaled(f) for name, f in theirs.layers.items()})

    monkeypatch.setattr(evaluate, "kapla_figures", stand_in)
    return calls
