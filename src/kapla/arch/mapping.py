"""Registry of PE-array mapping templates.

The template fixes how the innermost level (the PE array) is used (KAPLA
Sec. III-C: "the lowest-level REGF dataflow scheme should be either fully fixed
or constrained by certain patterns"). The hardware spec only stores the name;
keeping a registry lets a new template be added by name without touching the
spec model. It is the one registry of templates: each entry also says where
the function that maps a layer onto the array lives (``mapping``, a
``module:function`` path the dataflow layer imports when it first maps with
the template), so this layer names behaviour without importing it.

A template is one form of a level's *unroll* (:mod:`kapla.arch.unroll`); the
others (``free``, ``partition``, Interstellar's ``U|V`` dims) need no registry.
Templates apply to level 0 only.
"""

from __future__ import annotations

from dataclasses import dataclass

from kapla.errors import ArchError


@dataclass(frozen=True)
class PeMappingTemplate:
    """A named PE-array dataflow pattern.

    ``needs_same_level_transfer``: the pattern moves operands between
    neighbour PEs, so the innermost level must allow same-level transfers.
    ``mapping``: ``"module:function"``, the function
    ``(layer, extents, pe_array) -> list[PeMapping]`` that maps a layer's share
    onto the array (:func:`kapla.dataflow.mapping.pe_mappings`).
    """

    name: str
    description: str
    mapping: str
    needs_same_level_transfer: bool = False


_REGISTRY: dict[str, PeMappingTemplate] = {}


def register_pe_mapping(template: PeMappingTemplate, *, replace: bool = False) -> PeMappingTemplate:
    """Add a template; re-registering a name is an error unless ``replace``."""
    if template.name in _REGISTRY and not replace:
        raise ArchError(f"PE mapping template {template.name!r} is already registered")
    _REGISTRY[template.name] = template
    return template


def get_pe_mapping(name: str) -> PeMappingTemplate:
    """The template called ``name``; ArchError if there is none."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ArchError(
            f"unknown PE mapping template {name!r} (known: {', '.join(pe_mapping_names())})"
        ) from None


def pe_mapping_names() -> tuple[str, ...]:
    """Registered template names, sorted."""
    return tuple(sorted(_REGISTRY))


register_pe_mapping(PeMappingTemplate(
    "row_stationary",
    "Eyeriss row stationary: filter rows stay in PEs, ifmap rows and filters are "
    "multicast from the global buffer, psums accumulate along PE columns",
    "kapla.dataflow.mapping.row_stationary:row_stationary",
))
register_pe_mapping(PeMappingTemplate(
    "systolic",
    "TPU-like systolic array: weights stay in PEs, inputs flow across rows and "
    "psums flow down columns between neighbour PEs",
    "kapla.dataflow.mapping.systolic:systolic",
    needs_same_level_transfer=True,
))
