"""Schemes as JSON-ready data, and back.

The data hold the directives themselves (unit block, stacks, updates,
sharing, bypass per level) plus the listing text for people; reading them
back needs the layer, which the network supplies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kapla.dataflow.directives import LayerScheme, LevelScheme, Loop, Stack
from kapla.dataflow.listing import format_scheme
from kapla.dataflow.tensors import Kind
from kapla.errors import SpecError
from kapla.workload.layer import Layer


def scheme_to_dict(scheme: LayerScheme) -> dict[str, Any]:
    return {
        "layer": scheme.layer.name,
        "batch": scheme.batch,
        "ifm": scheme.ifm_name,
        "unit": dict(scheme.unit),
        "levels": [
            {
                "level": lvl.level,
                "stacks": [[s.dim, s.rows, s.cols] for s in lvl.stacks],
                "updates": [[u.dim, u.count] for u in lvl.updates],
                "shr": {str(kind): n for kind, n in lvl.shr},
                "bypass": sorted(str(kind) for kind in lvl.bypass),
            }
            for lvl in scheme.levels
        ],
        "directives": format_scheme(scheme),
    }


def scheme_from_dict(data: Mapping[str, Any], layers: Mapping[str, Layer]) -> LayerScheme:
    try:
        layer = layers[data["layer"]]
        levels = tuple(
            LevelScheme(
                lvl["level"],
                tuple(Stack(d, int(r), int(c)) for d, r, c in lvl.get("stacks", ())),
                tuple(Loop(d, int(n)) for d, n in lvl.get("updates", ())),
                tuple((Kind(k), int(n)) for k, n in lvl.get("shr", {}).items()),
                frozenset(Kind(k) for k in lvl.get("bypass", ())),
            )
            for lvl in data["levels"]
        )
        unit = tuple(dict(data["unit"]).items())
        return LayerScheme(layer, int(data["batch"]), unit, levels, ifm_name=data.get("ifm"))
    except KeyError as exc:
        raise SpecError(f"scheme data: missing or unknown {exc}") from None
    except (TypeError, ValueError) as exc:
        raise SpecError(f"scheme data for layer {data.get('layer')!r}: {exc}") from None
