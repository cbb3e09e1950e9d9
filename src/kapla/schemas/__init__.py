"""The JSON Schema of everything kapla writes as JSON (published as docs/result-schema.json)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any


@cache
def result_schema() -> dict[str, Any]:
    return json.loads((resources.files("kapla.schemas") / "result-schema.json").read_text())


__all__ = ["result_schema"]
