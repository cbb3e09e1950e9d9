"""Load hardware descriptions from presets, YAML or JSON files, or plain data.

Every failure (unknown preset, missing file, malformed YAML/JSON, invalid
field) becomes one :class:`~kapla.errors.ArchError` whose message is a single
line starting with where the description came from.
"""

from __future__ import annotations

import json
import os
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from kapla.errors import ArchError

if TYPE_CHECKING:  # pragma: no cover
    from kapla.arch.spec import ArchSpec

FILE_SUFFIXES = (".yaml", ".yml", ".json")
_PRESETS = resources.files("kapla.arch") / "presets"


def list_presets() -> list[str]:
    """Names of the hardware presets shipped with kapla, sorted."""
    return sorted(p.name[: -len(".yaml")] for p in _PRESETS.iterdir() if p.name.endswith(".yaml"))


def load_arch(source: str | os.PathLike[str] | ArchSpec) -> ArchSpec:
    """A preset name (``"multinode"``) or a .yaml/.yml/.json file path -> ArchSpec.

    A bare name is looked up among the presets first, so a stray file in the
    working directory never shadows a preset; pass a path object (or a name
    with a suffix or directory part) to force reading a file.
    """
    from kapla.arch.spec import ArchSpec  # the validation models load with a spec, not with the presets' names

    if isinstance(source, ArchSpec):
        return source
    text = os.fspath(source)
    if isinstance(source, str) and text in list_presets():
        return load_preset(text)
    path = Path(text)
    if path.suffix.lower() in FILE_SUFFIXES or path.exists() or isinstance(source, os.PathLike):
        return read_arch_file(path)
    raise ArchError(f"unknown hardware {text!r}: not a preset ({', '.join(list_presets())}) "
                    f"nor a {'/'.join(FILE_SUFFIXES)} file")


@cache
def load_preset(name: str) -> ArchSpec:
    """The preset called ``name`` (cached: specs are immutable)."""
    if name not in list_presets():
        raise ArchError(f"unknown hardware preset {name!r} (known: {', '.join(list_presets())})")
    text = (_PRESETS / f"{name}.yaml").read_text(encoding="utf-8")
    source = f"preset {name}"
    return parse_arch(_parse_text(text, ".yaml", source), source, default_name=name)


def read_arch_file(path: str | os.PathLike[str]) -> ArchSpec:
    """Read and validate one hardware file (.yaml, .yml or .json)."""
    path = Path(path)
    source = f"hardware file {path}"
    suffix = path.suffix.lower()
    if suffix not in FILE_SUFFIXES:
        raise ArchError(f"{source}: unsupported file type {suffix or '(none)'!r} "
                        f"(use {', '.join(FILE_SUFFIXES)})")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ArchError(f"{source}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ArchError(f"{source}: cannot read: {_one_line(str(err))}") from None
    return parse_arch(_parse_text(text, suffix, source), source, default_name=path.stem)


def parse_arch(data: Any, source: str = "hardware description",
               default_name: str | None = None) -> ArchSpec:
    """Validate already-parsed data (a mapping of fields) into an ArchSpec.

    ``default_name`` names the spec when the data has no ``name`` (files are
    named after their stem).
    """
    if not isinstance(data, dict):
        got = "an empty document" if data is None else type(data).__name__
        raise ArchError(f"{source}: the top level must be a mapping of fields (got {got})")
    if default_name is not None and "name" not in data:
        data = {"name": default_name, **data}
    from kapla.arch.spec import validate_arch

    return validate_arch(data, source)


def _parse_text(text: str, suffix: str, source: str) -> Any:
    if suffix == ".json":
        try:
            return json.loads(text, object_pairs_hook=_unique_json_object)
        except json.JSONDecodeError as err:
            raise ArchError(f"{source}: malformed JSON at line {err.lineno}, column {err.colno}: "
                            f"{err.msg}") from None
        except ValueError as err:  # from the duplicate-key hook
            raise ArchError(f"{source}: malformed JSON: {err}") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise ArchError(f"{source}: malformed YAML{where}: {_one_line(problem)}") from None


def _unique_json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """JSON objects where a repeated key is an error, not a silent overwrite."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


class _UniqueKeyLoader(yaml.SafeLoader):
    """Safe YAML loading where a repeated key is an error, not a silent overwrite."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen and isinstance(key, (str, int, float, bool)):
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark)
            if isinstance(key, (str, int, float, bool)):
                seen.add(key)
        return super().construct_mapping(node, deep)


def _one_line(text: str) -> str:
    return " ".join(text.split())
