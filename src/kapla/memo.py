"""Two caches the network search leans on, written once.

* :class:`IdentityMemo`: values worked out for the last object asked about
  (a hardware spec, a network), kept until another is. A search asks the same
  questions of one spec or network hundreds of thousands of times; the object
  is compared by identity, as hashing a pydantic spec or a network walks every
  field.
* :func:`kept_hash` and :func:`without_kept_hash`: a frozen dataclass's hash
  worked out once and kept on it (a dataclass's own hash walks every field on
  each call, and layers and inter-layer schemes key every cache of a search),
  never pickled: strings hash differently in another process. A class takes
  them as ``__hash__ = kept_hash`` and ``__getstate__ = without_kept_hash`` in
  its own body (``dataclass`` replaces a ``__hash__`` it only inherits).
  :func:`copied` makes such an object with a few fields changed without its
  kept hash.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any


class IdentityMemo:
    """A table of values for the last object asked about (compared by identity)."""

    def __init__(self) -> None:
        self._of: object = None
        self._values: dict[Any, Any] = {}

    def of(self, obj: object) -> dict[Any, Any]:
        """The table of values kept for ``obj`` (empty for a new one)."""
        if self._of is not obj:
            self._of, self._values = obj, {}
        return self._values


def kept_hash(obj: Any) -> int:
    """The hash of a frozen dataclass's fields (those it compares), worked out on the first call and kept."""
    known = obj.__dict__.get("_hash")
    if known is None:
        known = hash(tuple(getattr(obj, f.name) for f in fields(obj) if f.compare))
        object.__setattr__(obj, "_hash", known)
    return known


def without_kept_hash(obj: Any) -> dict[str, Any]:
    """The object's pickled state: its fields, not the hash kept by :func:`kept_hash`."""
    return {k: v for k, v in obj.__dict__.items() if k != "_hash"}


def copied(obj: Any, **changes: Any) -> Any:
    """A copy of frozen dataclass ``obj`` with ``changes`` to its fields, made without
    checking them again (they were checked when ``obj`` was: a search renames
    thousands of layers, schemes and placements) and without the hash kept on ``obj``."""
    made = object.__new__(type(obj))
    made.__dict__.update(obj.__dict__, **changes)
    made.__dict__.pop("_hash", None)
    return made


__all__ = ["IdentityMemo", "copied", "kept_hash", "without_kept_hash"]
