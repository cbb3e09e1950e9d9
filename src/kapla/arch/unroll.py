"""How the array of units of a memory level is used: the level's *unroll*.

A level's ``array`` is a spatial fan-out; its unroll says which loops may be
spread over it. The written forms:

* a PE-mapping template name from :mod:`kapla.arch.mapping`
  (``row_stationary``, ``systolic``): a fixed pattern, level 0 only;
* ``free``: any loop dimension may be unrolled over the array;
* ``partition``: TANGRAM's hybrid node partitioning (over N, G, C, K, Y, X);
* Interstellar's ``U|V`` notation: the loop dims unrolled along the array's
  rows, ``|``, those along its columns; each side one or more of
  ``N G C K Y X S R`` separated by ``,`` (aliases: ``FY`` = S, ``FX`` = R,
  ``B`` = N), e.g. ``C|K``, ``FY|Y``, ``C,FY|K``; a trailing ``+repl`` lets
  rows or columns left over replicate any other dim (``C|K+repl``).

:func:`parse_unroll` validates a string and returns an :class:`Unroll`; its
:attr:`Unroll.text` is the canonical spelling (aliases resolved, no spaces),
which is what the hardware spec stores.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from kapla.arch.mapping import PeMappingTemplate, get_pe_mapping, pe_mapping_names
from kapla.errors import ArchError

#: Loop dimensions, as the workload names them.
LOOP_DIMS = ("N", "G", "C", "K", "Y", "X", "S", "R")
#: Interstellar's names for some of them.
DIM_ALIASES = {"FY": "S", "FX": "R", "B": "N"}
FREE = "free"
PARTITION = "partition"
REPLICATE = "+repl"

UnrollKind = Literal["template", "free", "partition", "dims"]

_DIMS_HINT = "dims: N G C K Y X S R; aliases FY=S, FX=R, B=N"


@dataclass(frozen=True)
class Unroll:
    """A parsed unroll; ``rows``/``cols``/``replicate`` only for kind ``"dims"``."""

    kind: UnrollKind
    template: str | None = None
    rows: tuple[str, ...] = ()
    cols: tuple[str, ...] = ()
    replicate: bool = False

    @property
    def text(self) -> str:
        """The canonical spelling, which :func:`parse_unroll` reads back equal."""
        if self.kind == "template":
            assert self.template is not None
            return self.template
        if self.kind in ("free", "partition"):
            return self.kind
        return ",".join(self.rows) + "|" + ",".join(self.cols) + (REPLICATE if self.replicate else "")

    def __str__(self) -> str:
        return self.text

    @property
    def dims(self) -> tuple[str, ...]:
        """Loop dims named by a ``U|V`` unroll, rows first (empty otherwise)."""
        return self.rows + self.cols

    @property
    def template_spec(self) -> PeMappingTemplate | None:
        """The PE-mapping template, for kind ``"template"``."""
        return get_pe_mapping(self.template) if self.template is not None else None

    @property
    def needs_same_level_transfer(self) -> bool:
        """True when the pattern moves operands between neighbour units."""
        spec = self.template_spec
        return spec is not None and spec.needs_same_level_transfer


FREE_UNROLL = Unroll("free")
PARTITION_UNROLL = Unroll("partition")


def unroll_forms() -> str:
    """The accepted forms, for error messages."""
    return (f"{FREE}, {PARTITION}, a PE mapping template ({', '.join(pe_mapping_names())}) "
            "or loop dims as rows|cols such as C|K")


def parse_unroll(text: str) -> Unroll:
    """Parse one unroll string; ArchError (one line, no field path) if malformed."""
    if not isinstance(text, str):
        raise ArchError(f"must be a string (got {text!r})")
    return _parsed(text)


@lru_cache(maxsize=256)
def _parsed(text: str) -> Unroll:
    # a solve asks its spec for each level's unroll hundreds of times (an error is not kept)
    stripped = text.strip()
    if not stripped:
        raise ArchError(f"must not be empty (expected {unroll_forms()})")
    if stripped in pe_mapping_names():
        return Unroll("template", template=stripped)
    if stripped == FREE:
        return FREE_UNROLL
    if stripped == PARTITION:
        return PARTITION_UNROLL
    if "|" not in stripped:
        raise ArchError(f"unknown unrolling (got {text!r}; expected {unroll_forms()})")
    body, replicate = stripped, False
    if "+" in body:
        body, _, suffix = body.partition("+")
        if suffix.strip().lower() != REPLICATE[1:]:
            raise ArchError(f"unknown suffix '+{suffix.strip()}' (got {text!r}; only {REPLICATE} "
                            "may follow the dims)")
        replicate = True
    sides = body.split("|")
    if len(sides) != 2:
        raise ArchError(f"expected exactly one '|' between the row dims and the column dims "
                        f"(got {text!r})")
    seen: set[str] = set()
    parsed: list[tuple[str, ...]] = []
    for side, where in zip(sides, ("before", "after"), strict=True):
        if not side.strip():
            raise ArchError(f"no loop dims {where} '|' (got {text!r})")
        dims = []
        for token in side.split(","):
            name = token.strip().upper()
            if not name:
                raise ArchError(f"empty dim between commas (got {text!r})")
            dim = DIM_ALIASES.get(name, name)
            if dim not in LOOP_DIMS:
                raise ArchError(f"unknown loop dim {token.strip()!r} (got {text!r}; {_DIMS_HINT})")
            if dim in seen:
                raise ArchError(f"loop dim {dim} appears twice (got {text!r})")
            seen.add(dim)
            dims.append(dim)
        parsed.append(tuple(dims))
    return Unroll("dims", rows=parsed[0], cols=parsed[1], replicate=replicate)


def canonical_unroll(text: str) -> str:
    """``parse_unroll(text).text``: e.g. ``"FY | Y"`` -> ``"S|Y"``."""
    return parse_unroll(text).text


__all__ = [
    "DIM_ALIASES",
    "FREE_UNROLL",
    "LOOP_DIMS",
    "PARTITION_UNROLL",
    "Unroll",
    "canonical_unroll",
    "parse_unroll",
    "unroll_forms",
]
