"""Shared fixtures for the hardware-template tests."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kapla.arch import load_arch


@pytest.fixture
def multinode_data() -> dict[str, Any]:
    """A fresh, mutable copy of the multinode preset as plain data."""
    return copy.deepcopy(load_arch("multinode").to_dict())


@pytest.fixture
def write_yaml(tmp_path: Path) -> Callable[[Any, str], Path]:
    """Write data (or raw text) to a file under tmp_path and return its path."""

    def write(content: Any, name: str = "multinode.yaml") -> Path:
        path = tmp_path / name
        path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
        return path

    return write
