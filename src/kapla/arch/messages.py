"""Turn pydantic validation errors into one-line, path-naming messages.

Users see ``levels[1].capacity: must be positive (got -4)`` rather than
pydantic's multi-line report, so every hardware error fits the CLI's
``error: <message>`` convention.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

#: Type of the errors raised by cross-field checks; ``ctx["path"]`` is the
#: offending field relative to the model that raised it.
PATH_ERROR = "arch_path"
#: Prefix of the tags of tagged unions (e.g. a capacity that is a byte count or
#: a per-tensor mapping); they are pydantic's bookkeeping, not part of the
#: field path the user wrote, so :func:`format_path` leaves them out.
UNION_TAG = "<union>"

# Pydantic's wording is about "Input"; ours is about the field.
_REWORDED = {
    "missing": "missing required field",
    "extra_forbidden": "unknown field",
    "tuple_type": "must be a list",
    "list_type": "must be a list",
    "model_type": "must be a mapping of fields",
    "model_attributes_type": "must be a mapping of fields",
    "dict_type": "must be a mapping",
    "bool_type": "must be true or false",
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "string_type": "must be a string",
    "finite_number": "must be a finite number",
    "string_pattern_mismatch": "must be an identifier (letters, digits, _)",
}
_MAX_SHOWN = 3


def path_error(path: str, why: str) -> PydanticCustomError:
    """An error for a model validator to raise about field ``path``."""
    return PydanticCustomError(PATH_ERROR, "{path}: {why}", {"path": path, "why": why})


def format_path(loc: Iterable[str | int]) -> str:
    """``("levels", 1, "capacity")`` -> ``levels[1].capacity``."""
    out = ""
    for part in loc:
        if isinstance(part, str) and part.startswith(UNION_TAG):
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def format_validation_error(err: ValidationError, known_fields: Iterable[str] = ()) -> str:
    """All errors of ``err`` on one line, joined with '; ' (at most a few)."""
    names = sorted(set(known_fields))
    parts = [_format_one(e, names) for e in err.errors(include_url=False)]
    extra = len(parts) - _MAX_SHOWN
    shown = "; ".join(parts[:_MAX_SHOWN])
    return shown + (f"; and {extra} more" if extra > 0 else "")


def _format_one(e: Any, known_fields: list[str]) -> str:
    kind, loc, ctx = e["type"], tuple(e["loc"]), e.get("ctx") or {}
    if kind == PATH_ERROR:
        where, path = format_path(loc), ctx["path"]
        if not where:
            return f"{path}: {ctx['why']}"
        # A relative path may continue an index or attribute: "[1]", ".wgt".
        return f"{where}{'' if path.startswith(('[', '.')) else '.'}{path}: {ctx['why']}"
    where = format_path(loc) or "(top level)"
    if kind == "extra_forbidden":
        close = difflib.get_close_matches(str(loc[-1]), known_fields, n=1)
        return f"{where}: unknown field" + (f" (did you mean {close[0]!r}?)" if close else "")
    if kind == "missing":
        return f"{where}: missing required field"
    if kind == "greater_than":
        why = "must be positive" if ctx.get("gt") == 0 else f"must be greater than {ctx.get('gt')}"
    elif kind == "greater_than_equal":
        why = "must not be negative" if ctx.get("ge") == 0 else f"must be at least {ctx.get('ge')}"
    else:
        why = _REWORDED.get(kind) or e["msg"].removeprefix("Value error, ")
    if "(got " not in why:
        why += f" (got {_show(e.get('input'))})"
    return f"{where}: {why}"


def _show(value: Any) -> str:
    """A short rendering of an offending input for the message."""
    if isinstance(value, bool) or value is None:
        text = {True: "true", False: "false", None: "null"}[value]
    else:
        text = repr(value) if isinstance(value, str) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."
