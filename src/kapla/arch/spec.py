"""The generic hardware template (KAPLA Sec. III-C) as immutable value objects.

Units, in files and in the objects alike:

- ``capacity``: bytes per unit (one PE's register file, one node's buffer);
  files may also write ``"32 KiB"`` / ``"64 B"``. ``None`` = unbounded (DRAM only).
  A mapping ``{wgt: "32 KiB", ifm: "8 KiB"}`` splits the level into separate
  buffers side by side, one per tensor kind.
- ``*_pj``: picojoules per access of one base word of ``word_bits`` bits
  (``static_pj``: per cycle, whole chip). A tensor of ``tensor_bits`` bits
  costs ``tensor_bits / word_bits`` times that per word. The objects also
  expose joules as ``*_energy`` properties and accessors, which the evaluator
  uses, so pJ never leak into cost arithmetic.
- ``energy_table``: a level without ``access_pj`` takes its energy from a
  size-to-energy table of :mod:`kapla.arch.energy_tables` at its capacity;
  table energies are per access of the table's width, rescaled to the base word.
  A capacity outside the table is an error. ``double_buffered: true`` prices
  the level at twice its capacity (Interstellar's convention: each buffer is
  doubled so that the next block loads while this one is used; the capacity
  stays what the data may occupy).
- ``bandwidth``: bytes per cycle per unit; the DRAM level's is the total over
  all channels. ``None`` = not a bottleneck (on-chip levels only).
- ``array``: ``[rows, cols]`` of units of this level inside one unit of the
  next outer level (PEs per node at REGF, nodes per chip at the node level).
- ``clock_mhz``: MHz; ``word_bits``, ``tensor_bits``, bus ``width_bits``: bits.

Levels are innermost first, DRAM last; tensor kinds are ``"ifm"`` (input
feature map), ``"wgt"`` (weights) and ``"ofm"`` (output feature map and
partial sums). A level keeps the tensors listed in its ``holds`` (all three by
default); the others bypass it.

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
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Strict,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from kapla.arch.energy_tables import energy_table, energy_table_names, format_bytes
from kapla.arch.mapping import PeMappingTemplate, get_pe_mapping, pe_mapping_names
from kapla.arch.messages import UNION_TAG, format_validation_error, path_error
from kapla.arch.unroll import FREE, FREE_UNROLL, PARTITION_UNROLL, Unroll, parse_unroll
from kapla.errors import ArchError

PJ = 1e-12  # joules per picojoule
DRAM_NAME = "DRAM"
#: Tensor kinds, in the canonical order ``holds`` lists are stored in.
TENSOR_KINDS = ("ifm", "wgt", "ofm")

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {"b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}
_SIZE_HINT = "expected a byte count such as 32768 or '32 KiB'"
_KINDS_TEXT = "ifm, wgt or ofm"


def size_in_bytes(text: str, unit: bool = False) -> float | None:
    """``"32 KiB"`` -> 32768.0; a bare number is bytes unless ``unit`` (a unit
    required); None: not a size."""
    match = _SIZE_RE.match(text)
    if not match or (unit and not match.group(2)):
        return None
    return float(match.group(1)) * _SIZE_UNITS[(match.group(2) or "b").lower()]


def _parse_size(value: Any) -> Any:
    """Accept ``"32 KiB"``-style strings for byte counts; ints pass through."""
    if isinstance(value, bool):
        raise PydanticCustomError("size_type", _SIZE_HINT)
    if not isinstance(value, str):
        return value
    size = size_in_bytes(value)
    if size is None:
        raise PydanticCustomError("size_type", _SIZE_HINT)
    if size != int(size):
        raise PydanticCustomError("size_type", "not a whole number of bytes")
    return int(size)


def _as_pair(value: Any) -> Any:
    """Arrays and coordinates are written ``[a, b]``; say so for anything else."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return tuple(value)
    raise PydanticCustomError("pair_type", "expected a pair [rows, cols]")


def _tensor_kind(value: str) -> str:
    if value not in TENSOR_KINDS:
        raise PydanticCustomError("tensor_kind", "unknown tensor kind (got {got}; expected {kinds})",
                                  {"got": repr(value), "kinds": _KINDS_TEXT})
    return value


PosInt = Annotated[int, Strict(), Field(gt=0)]
NonNegInt = Annotated[int, Strict(), Field(ge=0)]
PosFloat = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
NonNegFloat = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
Bytes = Annotated[int, BeforeValidator(_parse_size), Strict(), Field(gt=0)]
Dim = Annotated[int, Strict(), Field(ge=1)]
Array2D = Annotated[tuple[Dim, Dim], BeforeValidator(_as_pair)]
Coord = Annotated[tuple[NonNegInt, NonNegInt], BeforeValidator(_as_pair)]
Flag = Annotated[bool, Strict()]
TensorKind = Annotated[str, Strict(), AfterValidator(_tensor_kind)]


def _kind(kind: Any) -> str:
    """A tensor kind argument of the accessors (str or str enum) as a plain str."""
    if isinstance(kind, str) and str(kind) in TENSOR_KINDS:
        return str(kind)
    value = getattr(kind, "value", kind)
    if isinstance(value, str) and value in TENSOR_KINDS:
        return value
    raise ArchError(f"unknown tensor kind {kind!r} (expected {_KINDS_TEXT})")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class SplitCapacity(_Frozen):
    """A level split into one buffer per tensor kind: bytes per buffer per unit.

    Only the kinds given have a buffer; they are the tensors the level holds.
    """

    ifm: Bytes | None = None
    wgt: Bytes | None = None
    ofm: Bytes | None = None

    @property
    def kinds(self) -> tuple[str, ...]:
        """Kinds with a buffer, in canonical order."""
        return tuple(kind for kind in TENSOR_KINDS if getattr(self, kind) is not None)

    def of(self, kind: str) -> int | None:
        """Bytes of ``kind``'s buffer; None if the level has none."""
        return getattr(self, _kind(kind))

    @property
    def total(self) -> int:
        """Bytes of all buffers together."""
        return sum(getattr(self, kind) for kind in self.kinds)


def _capacity_tag(value: Any) -> str:
    return f"{UNION_TAG}split" if isinstance(value, (dict, SplitCapacity)) else f"{UNION_TAG}bytes"


#: One byte count (shared by every tensor the level holds) or a split.
Capacity = Annotated[
    Annotated[Bytes, Tag(f"{UNION_TAG}bytes")] | Annotated[SplitCapacity, Tag(f"{UNION_TAG}split")],
    Discriminator(_capacity_tag),
]


class BusSpec(_Frozen):
    """A bus delivering words into a level's units from the next level out.

    ``width_bits``: bits per cycle; ``access_pj``: pJ per base word delivered.
    Level 0's bus is the array bus ("ITCN", GBUF -> PEs).
    """

    width_bits: PosInt
    access_pj: NonNegFloat

    @property
    def energy(self) -> float:
        """Joules per base word delivered."""
        return self.access_pj * PJ


#: The bus between the innermost level and the next (GBUF -> PEs): ``array_bus``.
ArrayBus = BusSpec


class MemLevel(_Frozen):
    """One level of the memory hierarchy, replicated over a 2D array of units."""

    name: Annotated[str, Strict(), Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
    capacity: Capacity | None = None
    #: pJ per base-word access; optional when ``energy_table`` is given.
    access_pj: NonNegFloat | None = None
    bandwidth: PosFloat | None = None
    array: Array2D = (1, 1)
    #: Data may come from a neighbour unit of this level (systolic flow at
    #: REGF, buffer sharing at GBUF), besides the always-available next-level
    #: transfers (bus / multicast from the outer level).
    same_level_transfer: Flag = False
    #: Tensor kinds kept here (None: all three, or a split capacity's kinds);
    #: the others bypass the level.
    holds: tuple[TensorKind, ...] | None = None
    #: pJ per base-word read / write; None: as ``access_pj`` (or the table).
    read_pj: NonNegFloat | None = None
    write_pj: NonNegFloat | None = None
    #: Name of a size-to-energy table used when ``access_pj`` is absent.
    energy_table: Annotated[str, Strict()] | None = None
    #: The table prices the level at twice its capacity (a double buffer).
    double_buffered: Flag = False
    #: How the array of units is used (see :mod:`kapla.arch.unroll`); stored
    #: canonical. None: the default of :meth:`ArchSpec.unroll_of`.
    unroll: Annotated[str, Strict()] | None = None
    #: The bus feeding this level's units from the next level out (levels
    #: >= 1; level 0's is ``ArchSpec.array_bus``). None: free and unbounded.
    bus: BusSpec | None = None

    @field_validator("holds")
    @classmethod
    def _holds_set(cls, holds: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if holds is None:
            return None
        if not holds:
            raise PydanticCustomError("empty_holds", f"must list at least one of {_KINDS_TEXT} "
                                      "(got [])")
        for i, kind in enumerate(holds):
            if kind in holds[:i]:
                raise path_error(f"[{i}]", f"duplicate tensor kind {kind!r}")
        return tuple(kind for kind in TENSOR_KINDS if kind in holds)

    @field_validator("energy_table")
    @classmethod
    def _known_table(cls, name: str | None) -> str | None:
        if name is not None and name not in energy_table_names():
            raise PydanticCustomError(
                "unknown_energy_table", "unknown energy table (got {got}; known: {known})",
                {"got": repr(name), "known": ", ".join(energy_table_names())})
        return name

    @field_validator("unroll")
    @classmethod
    def _unroll_syntax(cls, text: str | None) -> str | None:
        return None if text is None else _canonical_unroll(text)

    @model_validator(mode="after")
    def _check_level(self) -> MemLevel:
        if self.access_pj is None and self.energy_table is None:
            raise path_error("access_pj", "missing required field (or give energy_table)")
        if isinstance(self.capacity, SplitCapacity):
            kinds = self.capacity.kinds
            if not kinds:
                raise path_error("capacity", f"a split capacity needs a buffer for at least one of "
                                 f"{_KINDS_TEXT} (got {{}})")
            if self.holds is not None and kinds != self.holds:
                raise path_error("capacity", f"a split capacity needs exactly one buffer per held "
                                 f"tensor (holds: {', '.join(self.holds)}; buffers: {', '.join(kinds)})")
        return self

    @property
    def held(self) -> tuple[str, ...]:
        """Tensor kinds kept here, resolved (canonical order)."""
        if self.holds is not None:
            return self.holds
        if isinstance(self.capacity, SplitCapacity):
            return self.capacity.kinds
        return TENSOR_KINDS

    @property
    def is_split(self) -> bool:
        """True when the capacity is one buffer per tensor kind."""
        return isinstance(self.capacity, SplitCapacity)

    @property
    def access_energy(self) -> float:
        """Joules per base-word access (``access_pj``).

        Levels that take their energy from a table, or read and write at
        different costs, are read through :meth:`ArchSpec.read_energy` and
        :meth:`ArchSpec.write_energy` instead.
        """
        if self.access_pj is None:
            raise ArchError(f"level {self.name} has no access_pj: its energies come from energy "
                            f"table {self.energy_table!r}; use ArchSpec.read_energy / write_energy")
        return self.access_pj * PJ

    @property
    def units_per_parent(self) -> int:
        """Units of this level inside one unit of the next outer level."""
        return self.array[0] * self.array[1]


class TensorBits(_Frozen):
    """Word width of each tensor kind in bits; missing kinds use ``word_bits``."""

    ifm: PosInt | None = None
    wgt: PosInt | None = None
    ofm: PosInt | None = None

    @model_validator(mode="after")
    def _whole_bytes(self) -> TensorBits:
        for kind in TENSOR_KINDS:
            bits = getattr(self, kind)
            if bits is not None and bits % 8:
                raise path_error(kind, f"must be a multiple of 8 (got {bits})")
        return self


class ArchOptions(_Frozen):
    """Dataflow optimisations a solver may use on this hardware."""

    temporal_layer_pipe: Flag = False
    spatial_layer_pipe: Flag = False
    buffer_sharing: Flag = False


class Counting(_Frozen):
    """How the cost model counts the traffic two tools may count differently.

    kapla's own conventions are the defaults; nn_dataflow's
    (``multinode_nndataflow``) are the other value of each:

    * ``dram_reads``: ``multicast`` -- a word that several nodes need is read
      from DRAM once and multicast over the NoC; ``per_node`` -- every node
      fetches its own copy.
    * ``partial_sums``: ``on_chip`` -- partial sums of nodes that split a
      reduction are combined between the nodes before one copy goes out;
      ``through_dram`` -- every node writes (and reads back) its own.
    * ``gbuf_side``: ``both`` -- the node buffer counts what it serves the PEs
      and what fills it from DRAM or writes back; ``pe_side`` -- only what it
      serves the PEs.
    * ``regf_holds``: ``unit`` -- a PE's register file holds everything its
      unit block touches; ``window`` -- the unit's output rows stream through
      the PE one output at a time (nn_dataflow's Eyeriss pass), so the
      register file holds one output's share: its filter rows, the input
      window they read and one partial sum; a PE-array template's fixed
      loops over output rows then belong to the unit.
    """

    dram_reads: Literal["multicast", "per_node"] = "multicast"
    partial_sums: Literal["on_chip", "through_dram"] = "on_chip"
    gbuf_side: Literal["both", "pe_side"] = "both"
    regf_holds: Literal["unit", "window"] = "unit"

    @property
    def streams_rows(self) -> bool:
        """PEs stream their output rows (``regf_holds: window``)."""
        return self.regf_holds == "window"


def _canonical_unroll(text: str) -> str:
    try:
        return parse_unroll(text).text
    except ArchError as err:
        raise PydanticCustomError("unroll", "{why}", {"why": str(err)}) from None


#: Fields added with the generic memory hierarchy; left out of dumps when unset,
#: so descriptions written before them dump exactly as they did.
_OPTIONAL_LEVEL_FIELDS = ("holds", "read_pj", "write_pj", "energy_table", "unroll", "bus", "access_pj")


class ArchSpec(_Frozen):
    """A complete hardware description; see the module docstring for units."""

    name: Annotated[str, Strict()] = "custom"
    #: The base word: the width every ``*_pj`` energy refers to.
    word_bits: PosInt = 16
    #: Per-tensor word widths (bits); None or missing kinds: ``word_bits``.
    tensor_bits: TensorBits | None = None
    clock_mhz: PosFloat
    #: Innermost (PE register file) first, off-chip DRAM last.
    levels: tuple[MemLevel, ...]
    array_bus: BusSpec
    mac_pj: NonNegFloat
    #: Per word per NoC hop.
    hop_pj: NonNegFloat
    #: Per cycle for the whole chip (all nodes).
    static_pj: NonNegFloat
    #: Node coordinates (row, col) where DRAM channels attach; None = the
    #: corners of the node array, as TANGRAM.
    dram_channels: tuple[Coord, ...] | None = None
    #: Level 0's unroll (a template, ``free`` or ``U|V`` dims); may be left
    #: out when ``levels[0].unroll`` is given, and then is that.
    pe_mapping: Annotated[str, Strict()]
    options: ArchOptions = ArchOptions()
    counting: Counting = Counting()

    # ----------------------------------------------------------- validation

    @model_validator(mode="before")
    @classmethod
    def _pe_mapping_from_level0(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "pe_mapping" in data:
            return data
        levels = data.get("levels")
        if not isinstance(levels, (list, tuple)) or not levels:
            return data
        first = levels[0]
        unroll = first.get("unroll") if isinstance(first, dict) else getattr(first, "unroll", None)
        if not isinstance(unroll, str):
            return data
        try:
            parsed = parse_unroll(unroll)
        except ArchError:
            parsed = FREE_UNROLL  # placeholder: levels[0].unroll reports its own error
        # partition is refused on levels[0].unroll, not on the copy.
        return {**data, "pe_mapping": FREE if parsed.kind == "partition" else parsed.text}

    @field_validator("pe_mapping")
    @classmethod
    def _known_template(cls, name: str) -> str:
        try:
            unroll = parse_unroll(name)
        except ArchError as err:
            if "|" in name:
                raise PydanticCustomError("unroll", "{why}", {"why": str(err)}) from None
            raise PydanticCustomError(
                "unknown_template",
                "unknown PE mapping template (got {got}; known: {known})",
                {"got": repr(name), "known": ", ".join(pe_mapping_names())},
            ) from None
        if unroll.kind == "partition":
            raise PydanticCustomError("unroll", "partition is node partitioning, not a PE-array "
                                      "unrolling (got 'partition'; use free, a template or rows|cols dims)")
        return unroll.text

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
            self._check_level(i, level)
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
        if dram.held != TENSOR_KINDS:
            raise path_error(f"levels[{last}].holds", f"{DRAM_NAME} must hold ifm, wgt and ofm "
                             f"(got [{', '.join(dram.held)}])")
        if dram.is_split:
            raise path_error(f"levels[{last}].capacity", f"{DRAM_NAME} cannot be split per tensor")
        if dram.energy_table is not None:
            raise path_error(f"levels[{last}].energy_table", f"{DRAM_NAME} has no capacity to look "
                             f"an energy up by; give access_pj")
        if dram.unroll is not None:
            raise path_error(f"levels[{last}].unroll", f"{DRAM_NAME} has no array of units to "
                             f"unroll over (got {dram.unroll!r})")
        if dram.bus is not None:
            raise path_error(f"levels[{last}].bus", f"{DRAM_NAME} has no outer level to be fed from")
        if self.array_bus.width_bits % self.word_bits:
            raise path_error("array_bus.width_bits", f"must be a multiple of word_bits="
                             f"{self.word_bits} (got {self.array_bus.width_bits})")
        self._check_channels()
        self._check_pe_mapping()
        if self.options.buffer_sharing:
            node = self.node_level
            if node is None or not node.same_level_transfer:
                where = f"levels[{len(levels) - 2}].same_level_transfer" if node else "a node level"
                raise path_error("options.buffer_sharing", f"needs neighbour transfers between "
                                 f"nodes ({where} is not true); turn it off or enable them")
        return self

    def _check_level(self, i: int, level: MemLevel) -> None:
        """Checks of one level that need the rest of the spec (widths, position)."""
        last = len(self.levels) - 1
        where = f"levels[{i}]"
        if level.capacity is None and i != last:
            raise path_error(f"{where}.capacity",
                             f"required for on-chip levels (only {DRAM_NAME} is unbounded)")
        if isinstance(level.capacity, SplitCapacity):
            for kind in level.capacity.kinds:
                size, bits = level.capacity.of(kind), self.tensor_bits_of(kind)
                assert size is not None
                if size * 8 < bits:
                    raise path_error(f"{where}.capacity.{kind}", f"smaller than one {bits}-bit "
                                     f"{kind} word (got {size})")
        elif level.capacity is not None:
            bits = max(self.tensor_bits_of(kind) for kind in level.held)
            if level.capacity * 8 < bits:
                raise path_error(f"{where}.capacity", f"smaller than one {bits}-bit "
                                 f"word (got {level.capacity})")
        if level.energy_table is not None and i != last and level.access_pj is None and (
                level.read_pj is None or level.write_pj is None):
            table = energy_table(level.energy_table)
            for kind in level.held:
                size = self.priced_bytes(i, kind)
                if not table.covers(size):
                    field = f"{where}.capacity" + (f".{kind}" if level.is_split else "")
                    doubled = " (double-buffered: twice the capacity)" if level.double_buffered else ""
                    raise path_error(field, f"energy table {table.name!r} covers {format_bytes(table.smallest)} "
                                     f"to {format_bytes(table.largest)}; no energy for "
                                     f"{format_bytes(size)}{doubled}")
        if level.unroll is not None and i != last:
            unroll = parse_unroll(level.unroll)
            if unroll.kind == "template" and i != 0:
                raise path_error(f"{where}.unroll", f"PE mapping template {unroll.text!r} applies to "
                                 "level 0 only (use free, partition or rows|cols dims)")
            if unroll.kind == "partition" and i == 0:
                raise path_error(f"{where}.unroll", "partition is node partitioning, not a PE-array "
                                 "unrolling (use free, a template or rows|cols dims)")
        if level.bus is not None:
            if i == 0:
                raise path_error(f"{where}.bus", "level 0 is fed by array_bus; give its bus there")
            if i == last - 1:
                raise path_error(f"{where}.bus", "the node level is fed over the NoC (hop_pj), "
                                 "not a bus")
            if level.bus.width_bits % self.word_bits:
                raise path_error(f"{where}.bus.width_bits", f"must be a multiple of word_bits="
                                 f"{self.word_bits} (got {level.bus.width_bits})")

    def _check_pe_mapping(self) -> None:
        first = self.levels[0]
        if first.unroll is not None and parse_unroll(first.unroll) != self.pe_unroll:
            raise path_error("levels[0].unroll", f"disagrees with pe_mapping {self.pe_mapping!r} "
                             f"(got {first.unroll!r}); level 0's unroll is the PE mapping")
        if self.pe_unroll.needs_same_level_transfer and not first.same_level_transfer:
            raise path_error("levels[0].same_level_transfer", f"must be true: PE mapping "
                             f"{self.pe_mapping!r} moves data between neighbour PEs")

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

    def _index(self, i: int | str) -> int:
        """A level index (negative counts from DRAM) or name -> index from 0."""
        if isinstance(i, str):
            return self.level_index(i)
        n = len(self.levels)
        if isinstance(i, bool) or not isinstance(i, int) or not -n <= i < n:
            raise ArchError(f"no memory level {i!r} in hardware {self.name!r} "
                            f"(levels 0 to {n - 1}: {', '.join(self.level_names)})")
        return i % n

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
    def pe_unroll(self) -> Unroll:
        """``pe_mapping`` parsed: level 0's unroll."""
        return parse_unroll(self.pe_mapping)

    @property
    def pe_mapping_template(self) -> PeMappingTemplate:
        """The PE-mapping template; ArchError when ``pe_mapping`` is ``free`` or ``U|V`` dims."""
        if self.pe_unroll.kind != "template":
            raise ArchError(f"hardware {self.name!r}: pe_mapping {self.pe_mapping!r} is not a "
                            f"PE mapping template (known: {', '.join(pe_mapping_names())})")
        return get_pe_mapping(self.pe_mapping)

    @property
    def dram_channel_nodes(self) -> tuple[tuple[int, int], ...]:
        """Resolved channel positions: explicit ones, or the distinct corners."""
        if self.dram_channels is not None:
            return self.dram_channels
        rows, cols = self.node_array
        corners = [(0, 0), (0, cols - 1), (rows - 1, 0), (rows - 1, cols - 1)]
        return tuple(dict.fromkeys(corners))

    # ------------------------------------------- per level and tensor kind

    def tensor_bits_of(self, kind: str) -> int:
        """Bits per word of tensor ``kind`` (``"ifm"``, ``"wgt"`` or ``"ofm"``)."""
        kind = _kind(kind)
        bits = None if self.tensor_bits is None else getattr(self.tensor_bits, kind)
        return self.word_bits if bits is None else bits

    def tensor_bytes_of(self, kind: str) -> float:
        """Bytes per word of tensor ``kind``."""
        return self.tensor_bits_of(kind) / 8

    def holds(self, i: int | str, kind: str) -> bool:
        """Whether level ``i`` keeps tensor ``kind`` (DRAM keeps all)."""
        return _kind(kind) in self.levels[self._index(i)].held

    def holders(self, kind: str) -> tuple[int, ...]:
        """Indices of the levels keeping ``kind``, innermost first, DRAM included."""
        kind = _kind(kind)
        return tuple(i for i, level in enumerate(self.levels) if kind in level.held)

    def capacity_is_split(self, i: int | str) -> bool:
        """Whether level ``i`` is one buffer per tensor kind."""
        return self.levels[self._index(i)].is_split

    def capacity_bytes(self, i: int | str, kind: str | None = None) -> int | None:
        """Bytes per unit of level ``i``: the shared capacity (``kind`` ignored),
        or ``kind``'s buffer of a split level (None if the level does not hold
        it; ``kind`` required). None = unbounded (DRAM).
        """
        index = self._index(i)
        level = self.levels[index]
        capacity = level.capacity
        if isinstance(capacity, SplitCapacity):
            if kind is None:
                raise ArchError(f"level {level.name} of hardware {self.name!r} is split per tensor "
                                f"({', '.join(capacity.kinds)}); give the tensor kind")
            return capacity.of(kind)
        if kind is not None:
            _kind(kind)
        return capacity

    def read_pj_of(self, i: int | str, kind: str) -> float:
        """pJ per read of one base word (``word_bits``) of ``kind`` at level ``i``
        (before scaling to the tensor's width); 0 if the level does not hold it."""
        return self._level_pj(self._index(i), _kind(kind), write=False)

    def write_pj_of(self, i: int | str, kind: str) -> float:
        """pJ per write of one base word of ``kind`` at level ``i``; see :meth:`read_pj_of`."""
        return self._level_pj(self._index(i), _kind(kind), write=True)

    def read_energy(self, i: int | str, kind: str) -> float:
        """Joules per word of tensor ``kind`` read from level ``i``.

        ``pJ x 1e-12 x tensor_bits / word_bits``, with pJ from ``read_pj``,
        ``access_pj`` or the level's energy table. 0 for a tensor the level
        does not hold (it is never accessed there).
        """
        return self._energy(self._index(i), _kind(kind), write=False)

    def write_energy(self, i: int | str, kind: str) -> float:
        """Joules per word of tensor ``kind`` written into level ``i``; see :meth:`read_energy`."""
        return self._energy(self._index(i), _kind(kind), write=True)

    def _energy(self, index: int, kind: str, write: bool) -> float:
        energy = self._level_pj(index, kind, write) * PJ
        bits = self.tensor_bits_of(kind)
        return energy if bits == self.word_bits else energy * bits / self.word_bits

    def _level_pj(self, index: int, kind: str, write: bool) -> float:
        level = self.levels[index]
        if kind not in level.held:
            return 0.0
        explicit = level.write_pj if write else level.read_pj
        if explicit is not None:
            return explicit
        if level.access_pj is not None:
            return level.access_pj
        assert level.energy_table is not None and level.capacity is not None  # validated
        table = energy_table(level.energy_table)
        pj = table.interpolate(self.priced_bytes(index, kind))
        return pj if table.word_bits == self.word_bits else pj * self.word_bits / table.word_bits

    def priced_bytes(self, i: int | str, kind: str) -> int:
        """The size level ``i``'s energy table prices ``kind``'s buffer at: its
        capacity, twice that when double-buffered."""
        level = self.levels[self._index(i)]
        size = level.capacity.of(kind) if isinstance(level.capacity, SplitCapacity) else level.capacity
        assert size is not None  # on-chip levels have a capacity (validated)
        return 2 * size if level.double_buffered else size

    def bus_of(self, i: int | str) -> BusSpec | None:
        """The bus feeding level ``i``'s units: ``array_bus`` for level 0, the
        level's ``bus`` otherwise (None: free and unbounded)."""
        index = self._index(i)
        return self.array_bus if index == 0 else self.levels[index].bus

    def unroll_of(self, i: int | str) -> Unroll:
        """Level ``i``'s unroll: level 0 ``pe_mapping``; else the level's
        ``unroll``, defaulting to ``partition`` at the node level (the
        outermost on-chip level, when it is not level 0) and ``free`` elsewhere."""
        index = self._index(i)
        if index == 0:
            return self.pe_unroll
        level = self.levels[index]
        if level.unroll is not None:
            return parse_unroll(level.unroll)
        return PARTITION_UNROLL if index == len(self.levels) - 2 else FREE_UNROLL

    # ------------------------------------------------------ derived numbers

    @property
    def word_bytes(self) -> int:
        return self.word_bits // 8

    def capacity_words(self, name: str) -> int | None:
        """Capacity of one unit of level ``name`` in base words; None = unbounded.

        ArchError for a level split per tensor: use :meth:`capacity_bytes`.
        """
        level = self.level(name)
        if isinstance(level.capacity, SplitCapacity):
            raise ArchError(f"level {name} of hardware {self.name!r} is split per tensor "
                            f"({', '.join(level.capacity.kinds)}); use capacity_bytes(level, kind)")
        capacity = level.capacity
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
        """Base words per cycle the array bus carries."""
        return self.array_bus.width_bits // self.word_bits

    @property
    def mac_energy(self) -> float:
        """Joules per MAC."""
        return self.mac_pj * PJ

    @property
    def hop_energy(self) -> float:
        """Joules per base word per NoC hop."""
        return self.hop_pj * PJ

    @property
    def bus_energy(self) -> float:
        """Joules per base word on the array bus (ITCN)."""
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
        """Copy with fields of level ``name`` changed, e.g. ``capacity=65536``
        or ``capacity={"wgt": "4 KiB", "ofm": 384}``."""
        index = self.level_index(name)
        levels = self.to_dict()["levels"]
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
        changes = self._block_changes(rows, cols)
        if self.dram_channels is not None:
            clamped = (
                (min(max(r - r0, 0), rows - 1), min(max(c - c0, 0), cols - 1))
                for r, c in self.dram_channels
            )
            changes["dram_channels"] = list(dict.fromkeys(clamped))
        return self.replace(**changes)

    def with_node_block(self, rows: int, cols: int) -> ArchSpec:
        """This hardware restricted to ``rows x cols`` of its nodes arranged as a
        block that need not lie on the array as one: a folded region (a stripe
        zig-zagging across the array) seen as its stripe height x its columns.

        As :meth:`with_node_region`, but the block may be wider than the array
        (its node count must fit), and DRAM channels are the block's default
        corners: a folded region's true distances to them come from its
        placement on the array, given to the cost model beside the block.
        """
        if rows < 1 or cols < 1 or rows * cols > self.num_nodes:
            raise ArchError(f"hardware spec {self.name}: a block of {rows}x{cols} nodes does not fit the "
                            f"{self.num_nodes} nodes of the array")
        changes = self._block_changes(rows, cols)
        if self.dram_channels is not None:
            changes["dram_channels"] = None
        return self.replace(**changes)

    def _block_changes(self, rows: int, cols: int) -> dict[str, Any]:
        """Node array and static energy of a block of ``rows x cols`` nodes."""
        changes: dict[str, Any] = {"static_pj": self.static_pj * rows * cols / self.num_nodes}
        if self.node_level is not None:
            levels = self.to_dict()["levels"]
            levels[-2]["array"] = [rows, cols]
            changes["levels"] = levels
        return changes

    # -------------------------------------------------------------- dumping

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON/YAML-ready data that :func:`parse_arch` reads back equal.

        Optional fields left unset are left out, so a description that uses
        none of them dumps exactly as before they existed.
        """
        data = self.model_dump(mode="json")
        if self.counting == Counting():
            del data["counting"]  # kapla's own conventions: descriptions from before the field dump as they did
        if data["tensor_bits"] is None:
            del data["tensor_bits"]
        else:
            data["tensor_bits"] = {k: v for k, v in data["tensor_bits"].items() if v is not None}
        for level in data["levels"]:
            for key in _OPTIONAL_LEVEL_FIELDS:
                if level[key] is None:
                    del level[key]
            if not level["double_buffered"]:
                del level["double_buffered"]
            if isinstance(level["capacity"], dict):
                level["capacity"] = {k: v for k, v in level["capacity"].items() if v is not None}
        return data

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=None)


_MODELS = (ArchSpec, MemLevel, BusSpec, ArchOptions, SplitCapacity, TensorBits)


def known_field_names() -> set[str]:
    """Every field name of the hardware models, for 'did you mean' hints."""
    return {name for model in _MODELS for name in model.model_fields}


def validate_arch(data: Mapping[str, Any], source: str = "hardware description") -> ArchSpec:
    """Validate ``data``; ArchError with a one-line ``source: path: why`` message."""
    try:
        return ArchSpec.model_validate(data)
    except ValidationError as err:
        raise ArchError(f"{source}: {format_validation_error(err, known_field_names())}") from None
