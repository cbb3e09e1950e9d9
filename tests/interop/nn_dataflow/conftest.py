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
