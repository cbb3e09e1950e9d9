"""Hardware variants built from a spec by field, never by patching its YAML.

A change names a field by level and field (``REGF.capacity``,
``GBUF.array``) or a top-level field (``static_pj``, ``node_array``); the
variant is the spec with those fields changed and validated again, so a bad
value gets the spec's own one-line error naming the field. A level whose
energy comes from a size table (``energy_table``) keeps taking it from there
at its new capacity.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kapla.arch.spec import ArchSpec
from kapla.errors import ArchError


def vary(arch: ArchSpec, changes: Mapping[str, Any], name: str | None = None) -> ArchSpec:
    """``arch`` with ``changes`` applied (``{"REGF.capacity": "128 B", "static_pj": 318.2}``),
    named ``name`` (default: the base name and the changes)."""
    data = arch.to_dict()
    levels = {level["name"]: level for level in data["levels"]}
    for path, value in changes.items():
        level, dot, field = path.partition(".")
        if dot:
            if level not in levels:
                raise ArchError(f"{path}: no level '{level}' in hardware '{arch.name}' "
                                f"(levels: {', '.join(levels)})")
            levels[level][field] = value
        else:
            if path == "levels" or path not in data and path not in ArchSpec.model_fields:
                raise ArchError(f"{path}: hardware '{arch.name}' has no such field")
            data[path] = value
    data["name"] = name or label(arch.name, changes)
    try:
        return arch.replace(**data)
    except ArchError as exc:  # name a level as the change did, not by its index
        message = str(exc)
        for i, level in enumerate(data["levels"]):
            message = message.replace(f"levels[{i}]", level["name"])
        raise ArchError(message) from None


def label(base: str, changes: Mapping[str, Any]) -> str:
    """A variant's default name: its base and its changes."""
    return base + "".join(f" {k}={v}" for k, v in changes.items())


__all__ = ["label", "vary"]
