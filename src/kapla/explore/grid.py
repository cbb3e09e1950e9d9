"""Hardware grids as a user writes them: ``PATH=VALUES`` into fields and values.

``PATH`` names a field of the hardware spec by level and field
(``REGF.capacity``, ``GBUF.access_pj``, ``GBUF.double_buffered``) or a
top-level field (``clock_mhz``, ``static_pj``); ``pe_array`` and
``node_array`` stand for the ``array`` of the PE level and of the node level.

``VALUES`` is a list (``16B,32B,64B``; ``;`` separates values that contain
commas, such as unrollings ``C|K;C,S|K``) or a range ``LO..HI`` stepping by
one, ``LO..HI*F`` multiplying by ``F`` or ``LO..HI+D`` adding ``D``
(``32KiB..512KiB*2``). A value is a byte size (``64B``, ``32 KiB``), an
array (``8x8``), a number, ``true``/``false``, or else text handed to the
spec as it is. Every variant is built and validated before anything runs,
so a bad path or value is one error naming it.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Any

from kapla.arch.describe import show_value
from kapla.arch.energy_tables import format_bytes
from kapla.arch.spec import ArchSpec, size_in_bytes
from kapla.errors import ArchError, KaplaError
from kapla.explore.variants import vary

#: Most values one field may take (a range that runs away is a mistake, not a sweep).
MAX_VALUES = 1000

_ARRAY = re.compile(r"^(\d+)\s*x\s*(\d+)$")
_RANGE = re.compile(r"^(?P<lo>.+?)\s*\.\.\s*(?P<hi>.+?)\s*(?:(?P<op>[*+])\s*(?P<step>[^*+\s]+))?$")


class Size(int):
    """A byte count that prints as the user wrote it (``32 KiB``)."""

    def __str__(self) -> str:
        return format_bytes(int(self))

    __repr__ = __str__


@dataclass(frozen=True)
class Field:
    """One varied field: as the user named it, as the spec names it, and its values."""

    name: str
    path: str
    values: tuple[Any, ...]
    labels: tuple[str, ...] | None = None  # how tables and plots show the values (default: ``show_value``)

    def shown(self) -> list[str]:
        return list(self.labels) if self.labels is not None else [show_value(v) for v in self.values]


def parse_vary(text: str, arch: ArchSpec) -> Field:
    """``PATH=VALUES`` (see the module) for hardware ``arch``; KaplaError naming what is wrong."""
    name, eq, values = text.partition("=")
    name, values = name.strip(), values.strip()
    if not eq or not name:
        raise KaplaError(f"--vary {text!r}: expected PATH=VALUES, e.g. REGF.capacity=16B,32B,64B")
    path = resolve_path(name, arch)
    if not values:
        raise KaplaError(f"--vary {name}: no values")
    match = _RANGE.match(values)
    if match and ("," not in values and ";" not in values):
        parsed = _range(name, match)
    else:
        parts = [p.strip() for p in values.split(";" if ";" in values else ",")]
        if any(not p for p in parts):
            raise KaplaError(f"--vary {name}: an empty value in {values!r}")
        parsed = [parse_value(p) for p in parts]
    if len(set(map(_hashable, parsed))) != len(parsed):
        raise KaplaError(f"--vary {name}: a value is given twice in {values!r}")
    return Field(name, path, tuple(parsed))


def resolve_path(name: str, arch: ArchSpec) -> str:
    """The spec's path for a field as the user names it (``pe_array`` -> ``REGF.array``)."""
    if name == "pe_array":
        return f"{arch.levels[0].name}.array"
    if name == "node_array":
        node = arch.node_level
        if node is None:
            raise KaplaError(f"--vary node_array: hardware '{arch.name}' has no node level "
                             f"(levels: {', '.join(arch.level_names)})")
        return f"{node.name}.array"
    return name


def parse_value(text: str) -> Any:
    """One value of a list (see the module)."""
    number = size_in_bytes(text, unit=True)
    if number is not None:  # a sweep reads a bare number as a number, not as bytes
        return Size(int(number)) if number == int(number) else text
    array = _ARRAY.match(text)
    if array:
        return [int(array.group(1)), int(array.group(2))]
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def _range(name: str, match: re.Match) -> list[Any]:
    lo, hi = parse_value(match["lo"]), parse_value(match["hi"])
    op, step_text = match["op"] or "+", match["step"] or "1"
    step = parse_value(step_text)
    for bound, text in ((lo, match["lo"]), (hi, match["hi"])):
        if isinstance(bound, bool) or not isinstance(bound, (int, float)):
            raise KaplaError(f"--vary {name}: a range runs between numbers or byte sizes (got {text!r})")
    if isinstance(lo, Size) != isinstance(hi, Size):
        raise KaplaError(f"--vary {name}: {match['lo']!r} and {match['hi']!r} are not both byte sizes")
    if isinstance(step, bool) or not isinstance(step, (int, float)) or (op == "+" and isinstance(step, Size)
                                                                         and not isinstance(lo, Size)):
        raise KaplaError(f"--vary {name}: the step {step_text!r} is not a number")
    if (op == "*" and not step > 1) or (op == "+" and not step > 0):
        raise KaplaError(f"--vary {name}: the step {op}{step_text} does not move the range forward")
    if lo > hi:
        raise KaplaError(f"--vary {name}: the range {match['lo']}..{match['hi']} is empty")
    out: list[Any] = []
    value = lo
    while value <= hi * (1 + 1e-12):
        out.append(_like(lo, value))
        if len(out) > MAX_VALUES:
            raise KaplaError(f"--vary {name}: the range has more than {MAX_VALUES} values")
        value = value * step if op == "*" else value + step
    return out


def _like(first: Any, value: float) -> Any:
    """``value`` of the kind the range started with (byte sizes stay sizes, whole numbers ints)."""
    if isinstance(first, Size):
        if value != int(value):
            raise KaplaError(f"--vary: the range reaches {value:g} B, not a whole number of bytes")
        return Size(int(value))
    if isinstance(first, int) and value == int(value):
        return int(value)
    return float(value)


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def plain(value: Any) -> Any:
    """A value as JSON holds it (byte sizes as their number of bytes)."""
    return int(value) if isinstance(value, Size) else value


def variants(arch: ArchSpec, fields: list[Field]) -> list[tuple[dict[str, Any], ArchSpec]]:
    """Every combination of the fields' values (the last field varying fastest),
    each with the hardware it makes; one error naming the first bad value."""
    names = [f.name for f in fields]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise KaplaError(f"--vary: a field is varied twice ({', '.join(twice)})")
    out = []
    for combo in itertools.product(*(f.values for f in fields)):
        labels = dict(zip(names, combo, strict=True))
        changes = {f.path: plain(v) for f, v in zip(fields, combo, strict=True)}
        name = arch.name + "".join(f" {n}={show_value(v)}" for n, v in labels.items())
        try:
            spec = vary(arch, changes, name=name)
        except ArchError as exc:
            where = ", ".join(f"{n}={show_value(v)}" for n, v in labels.items())
            raise KaplaError(f"--vary {where}: {exc}") from None
        out.append((labels, spec))
    return out


__all__ = ["MAX_VALUES", "Field", "Size", "parse_value", "parse_vary", "plain", "resolve_path", "variants"]
