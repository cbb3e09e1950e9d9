"""The generic hardware template (KAPLA Sec. III-C) as immutable value objects.

Units, in files and in the objects alike:

- ``capacity``: bytes per unit (one PE's register file, one node's buffer);
  files may also write ``"32 KiB"`` / ``"64 B"``. ``None`` = unbounded (DRAM only).
- ``*_pj``: picojoules per word access (``static_pj``: per cycle, whole chip).
  The objects also expose joules as ``*_energy`` properties, which the
  evaluator uses, so pJ never leak into cost arithmetic.
- ``bandwidth``: bytes per cycle per unit; the DRAM level's is the total over
  all channels. ``None`` = not a bottleneck (on-chip levels only).
- ``array``: ``[rows, cols]`` of units of this level inside one unit of the
  next outer level (PEs per node at REGF, nodes per chip at the node level).
- ``clock_mhz``: MHz; ``word_bits``: bits.

Validate through :func:`kapla.arch.loader.parse_arch` / ``load_arch`` (which
turn errors into one-line :class:`~kapla.errors.ArchError`) and derive new specs
with :meth:`ArchSpec.replace` and friends, which re-validate; pydantic's
``model_copy(update=...)`` does not.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Annotated, Any

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from kapla.errors import ArchError
from kapla.arch.mapping import PeMappingTemplate, get_pe_mapping, pe_mapping_names
from kapla.arch.messages import format_validation_error, path_error

PJ = 1e-12  # joules per picojoule
DRAM_NAME = "DRAM"

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {"b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}
_SIZE_HINT = "expected a byte count such as 32768 or '32 KiB'"


def _parse_size(value: Any) -> Any:
    """Accept ``"32 KiB"``-style strings for byte counts; ints pass through."""
    if isinstance(value, bool):
        raise PydanticCustomError("size_type", _SIZE_HINT)
    if not isinstance(value, str):
        return value
    match = _SIZE_RE.match(value)
    if not match:
        raise PydanticCustomError("size_type", _SIZE_HINT)
    size = float(match.group(1)) * _SIZE_UNITS[(match.group(2) or "b").lower()]
    if size != int(size):
        raise PydanticCustomError("size_type", "not a whole number of bytes")
    return int(size)


def _as_pair(value: Any) -> Any:
    """Arrays and coordinates are written ``[a, b]``; say so for anything else."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return tuple(value)
    raise PydanticCustomError("pair_type", "expected a pair [rows, cols]")


PosInt = Annotated[int, Strict(), Field(gt=0)]
NonNegInt = Annotated[int, Strict(), Field(ge=0)]
PosFloat = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
NonNegFloat = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
Bytes = Annotated[int, BeforeValidator(_parse_size), Strict(), Field(gt=0)]
Dim = Annotated[int, Strict(), Field(ge=1)]
Array2D = Annotated[tuple[Dim, Dim], BeforeValidator(_as_pair)]
Coord = Annotated[tuple[NonNegInt, NonNegInt], BeforeValidator(_as_pair)]
Flag = Annotated[bool, Strict()]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MemLevel(_Frozen):
    """One level of the memory hierarchy, replicated over a 2D array of units."""

    name: Annotated[str, Strict(), Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
    capacity: Bytes | None = None
    access_pj: NonNegFloat
    bandwidth: PosFloat | None = None
    array: Array2D = (1, 1)
    #: Data may come from a neighbour unit of this level (systolic flow at
    #: REGF, buffer sharing at GBUF), besides the always-available next-level
    #: transfers (bus / multicast from the outer level).
    same_level_transfer: Flag = False

    @property
    def access_energy(self) -> float:
        """Joules per word access."""
        return self.access_pj * PJ

    @property
    def units_per_parent(self) -> int:
        """Units of this level inside one unit of the next outer level."""
        return self.array[0] * self.array[1]


class ArrayBus(_Frozen):
    """The bus ("ITCN") between the innermost level and the next (GBUF -> PEs)."""

    width_bits: PosInt
    access_pj: NonNegFloat


class ArchOptions(_Frozen):
    """Dataflow optimisations a solver may use on this hardware."""

    temporal_layer_pipe: Flag = False
    spatial_layer_pipe: Flag = False
    buffer_sharing: Flag = False


class ArchSpec(_Frozen):
    """A complete hardware description; see the module docstring for units."""

    name: Annotated[str, Strict()] = "custom"
    word_bits: PosInt = 16
    clock_mhz: PosFloat
    #: Innermost (PE register file) first, off-chip DRAM last.
    levels: tuple[MemLevel, ...]
    array_bus: ArrayBus
    mac_pj: NonNegFloat
    #: Per word per NoC hop.
    hop_pj: NonNegFloat
    #: Per cycle for the whole chip (all nodes).
    static_pj: NonNegFloat
    #: Node coordinates (row, col) where DRAM channels attach; None = the
    #: corners of the node array, as TANGRAM.
    dram_channels: tuple[Coord, ...] | None = None
    pe_mapping: Annotated[str, Strict()]
    options: ArchOptions = ArchOptions()

    # ----------------------------------------------------------- validation

    @field_validator("pe_mapping")
    @classmethod
    def _known_template(cls, name: str) -> str:
        if name not in pe_mapping_names():
            raise PydanticCustomError(
                "unknown_template",
                "unknown PE mapping template (got {got}; known: {known})",
                {"got": repr(name), "known": ", ".join(pe_mapping_names())},
            )
        return name

    @model_validator(mode="after")
    def _check(self) -> ArchSpec:
        levels, last = self.levels, len(self.levels) - 1
        if len(levels) < 2:
            raise path_error("levels", "needs at least 2 memory levels, innermost (REGF) "
                             f"to outermost {DRAM_NAME} (got {len(levels)})")
        if self.word_bits % 8:
            raise path_error("word_bits", f"must be a multiple of 8 (got {self.word_bits})")
        seen: dict[str, int] = {}
        for i, level in enumerate(levels):
            if level.name.upper() in seen:
                raise path_error(f"levels[{i}].name", f"duplicate level name {level.name!r} "
                                 f"(also levels[{seen[level.name.upper()]}])")
            seen[level.name.upper()] = i
            if level.capacity is None and i != last:
                raise path_error(f"levels[{i}].capacity",
                                 f"required for on-chip levels (only {DRAM_NAME} is unbounded)")
            if level.capacity is not None and level.capacity < self.word_bytes:
                raise path_error(f"levels[{i}].capacity", f"smaller than one {self.word_bits}-bit "
                                 f"word (got {level.capacity})")
        dram = levels[last]
        if dram.name != DRAM_NAME:
            raise path_error(f"levels[{last}].name", f"the outermost level must be the off-chip "
                             f"{DRAM_NAME} (got {dram.name!r}); add a {DRAM_NAME} level last")
        if dram.array != (1, 1):
            raise path_error(f"levels[{last}].array", f"{DRAM_NAME} must be [1, 1]; place its "
                             f"channels with dram_channels (got {list(dram.array)})")
        if dram.bandwidth is None:
            raise path_error(f"levels[{last}].bandwidth",
                             "required for DRAM (bytes/cycle over all channels)")
        if self.array_bus.width_bits % self.word_bits:
            raise path_error("array_bus.width_bits", f"must be a multiple of word_bits="
                             f"{self.word_bits} (got {self.array_bus.width_bits})")
        self._check_channels()
        if self.pe_mapping_template.needs_same_level_transfer and not levels[0].same_level_transfer:
            raise path_error("levels[0].same_level_transfer", f"must be true: PE mapping "
                             f"{self.pe_mapping!r} moves data between neighbour PEs")
        if self.options.buffer_sharing:
            node = self.node_level
            if node is None or not node.same_level_transfer:
                where = f"levels[{len(levels) - 2}].same_level_transfer" if node else "a node level"
                raise path_error("options.buffer_sharing", f"needs neighbour transfers between "
                                 f"nodes ({where} is not true); turn it off or enable them")
        return self

    def _check_channels(self) -> None:
        if self.dram_channels is None:
            return
        if not self.dram_channels:
            raise path_error("dram_channels", "must list at least one node (or be null for the corners)")
        rows, cols = self.node_array
        for i, (r, c) in enumerate(self.dram_channels):
            if r >= rows or c >= cols:
                raise path_error(f"dram_channels[{i}]", f"outside the {rows}x{cols} node array "
                                 f"(got [{r}, {c}])")
            if (r, c) in self.dram_channels[:i]:
                raise path_error(f"dram_channels[{i}]", f"duplicate channel node (got [{r}, {c}])")

    # ------------------------------------------------------------ structure

    @property
    def level_names(self) -> tuple[str, ...]:
        return tuple(level.name for level in self.levels)

    def level_index(self, name: str) -> int:
        """Position of level ``name`` (0 = innermost); ArchError if absent."""
        try:
            return self.level_names.index(name)
        except ValueError:
            raise ArchError(f"no memory level {name!r} in hardware {self.name!r} "
                            f"(levels: {', '.join(self.level_names)})") from None

    def level(self, name: str) -> MemLevel:
        """The level called ``name``, e.g. ``spec.level("GBUF")``."""
        return self.levels[self.level_index(name)]

    @property
    def pe_level(self) -> MemLevel:
        """The innermost level (the PE register files)."""
        return self.levels[0]

    @property
    def node_level(self) -> MemLevel | None:
        """The level just inside DRAM, whose array is the node array (GBUF).

        None with only two levels: the PEs then form a single node fed by DRAM.
        """
        return self.levels[-2] if len(self.levels) >= 3 else None

    @property
    def dram(self) -> MemLevel:
        return self.levels[-1]

    def units(self, name: str) -> int:
        """How many units of level ``name`` the chip has (arrays multiply outward)."""
        return math.prod(level.units_per_parent for level in self.levels[self.level_index(name):])

    @property
    def pe_array(self) -> tuple[int, int]:
        return self.levels[0].array

    @property
    def node_array(self) -> tuple[int, int]:
        node = self.node_level
        return node.array if node is not None else (1, 1)

    @property
    def num_nodes(self) -> int:
        return self.node_array[0] * self.node_array[1]

    @property
    def num_pes(self) -> int:
        """PEs on the whole chip."""
        return self.units(self.levels[0].name)

    @property
    def pes_per_node(self) -> int:
        return self.num_pes // self.num_nodes

    @property
    def pe_mapping_template(self) -> PeMappingTemplate:
        return get_pe_mapping(self.pe_mapping)

    @property
    def dram_channel_nodes(self) -> tuple[tuple[int, int], ...]:
        """Resolved channel positions: explicit ones, or the distinct corners."""
        if self.dram_channels is not None:
            return self.dram_channels
        rows, cols = self.node_array
        corners = [(0, 0), (0, cols - 1), (rows - 1, 0), (rows - 1, cols - 1)]
        return tuple(dict.fromkeys(corners))

    # ------------------------------------------------------ derived numbers

    @property
    def word_bytes(self) -> int:
        return self.word_bits // 8

    def capacity_words(self, name: str) -> int | None:
        """Capacity of one unit of level ``name`` in words; None = unbounded."""
        capacity = self.level(name).capacity
        return None if capacity is None else capacity // self.word_bytes

    @property
    def frequency_hz(self) -> float:
        return self.clock_mhz * 1e6

    @property
    def cycle_s(self) -> float:
        return 1.0 / self.frequency_hz

    @property
    def dram_bandwidth(self) -> float:
        """Bytes per cycle over all DRAM channels."""
        assert self.dram.bandwidth is not None  # guaranteed by validation
        return self.dram.bandwidth

    @property
    def dram_bandwidth_words(self) -> float:
        return self.dram_bandwidth / self.word_bytes

    @property
    def bus_width_words(self) -> int:
        """Words per cycle the array bus carries."""
        return self.array_bus.width_bits // self.word_bits

    @property
    def mac_energy(self) -> float:
        """Joules per MAC."""
        return self.mac_pj * PJ

    @property
    def hop_energy(self) -> float:
        """Joules per word per NoC hop."""
        return self.hop_pj * PJ

    @property
    def bus_energy(self) -> float:
        """Joules per word on the array bus (ITCN)."""
        return self.array_bus.access_pj * PJ

    @property
    def static_energy(self) -> float:
        """Joules per cycle, whole chip."""
        return self.static_pj * PJ

    # ------------------------------------------------------- derived specs

    def replace(self, **changes: Any) -> ArchSpec:
        """A re-validated copy with top-level fields changed (ArchError if invalid)."""
        return validate_arch({**self.to_dict(), **changes}, f"hardware spec {self.name}")

    def with_options(self, **options: bool) -> ArchSpec:
        """Copy with some global options changed, e.g. ``buffer_sharing=False``."""
        return self.replace(options={**self.options.model_dump(), **options})

    def with_level(self, name: str, **changes: Any) -> ArchSpec:
        """Copy with fields of level ``name`` changed, e.g. ``capacity=65536``."""
        index = self.level_index(name)
        levels = [level.model_dump() for level in self.levels]
        levels[index].update(changes)
        return self.replace(levels=levels)

    def with_node_region(self, rows: int, cols: int, origin: tuple[int, int] = (0, 0)) -> ArchSpec:
        """This hardware restricted to a ``rows x cols`` block of nodes at ``origin``.

        The block behaves as a smaller chip: node-array size and static energy
        scale with the node count (static power is spread evenly over nodes),
        while DRAM bandwidth stays the chip total. Explicit DRAM channels move
        into the block's coordinates and are clamped to its nearest node, the
        node where their traffic enters the block; default corner channels
        clamp to the block's own corners, so they stay the default.
        """
        full_rows, full_cols = self.node_array
        r0, c0 = origin
        if rows < 1 or cols < 1 or r0 < 0 or c0 < 0 or r0 + rows > full_rows or c0 + cols > full_cols:
            raise ArchError(f"hardware spec {self.name}: node region {rows}x{cols} at {tuple(origin)} "
                            f"does not fit the {full_rows}x{full_cols} node array")
        changes: dict[str, Any] = {"static_pj": self.static_pj * rows * cols / self.num_nodes}
        if self.node_level is not None:
            levels = [level.model_dump() for level in self.levels]
            levels[-2]["array"] = (rows, cols)
            changes["levels"] = levels
        if self.dram_channels is not None:
            clamped = (
                (min(max(r - r0, 0), rows - 1), min(max(c - c0, 0), cols - 1))
                for r, c in self.dram_channels
            )
            changes["dram_channels"] = list(dict.fromkeys(clamped))
        return self.replace(**changes)

    # -------------------------------------------------------------- dumping

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON/YAML-ready data that :func:`parse_arch` reads back equal."""
        return self.model_dump(mode="json")

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=None)


def known_field_names() -> set[str]:
    """Every field name of the hardware models, for 'did you mean' hints."""
    return {name for model in (ArchSpec, MemLevel, ArrayBus, ArchOptions) for name in model.model_fields}


def validate_arch(data: Mapping[str, Any], source: str = "hardware description") -> ArchSpec:
    """Validate ``data``; ArchError with a one-line ``source: path: why`` message."""
    try:
        return ArchSpec.model_validate(data)
    except ValidationError as err:
        raise ArchError(f"{source}: {format_validation_error(err, known_field_names())}") from None
