"""Read nn_dataflow's JSON output (``nn_dataflow_search.py``) into immutable objects.

The file is a mapping with the run's setting (``net``, ``batch``, ``resource``,
``cost``, ``options``), its totals and, in ``schedules``, one entry per layer:
``[scheme, ofmap_layout, sched_seq]``, nn_dataflow's ``SchedulingResult``.
:class:`LayerSchedule` flattens an entry: the scheme's fields plus
``ofmap_layout`` and ``sched_seq``, so a field's path in a message is
``schedules.fc1.access``.

Conventions of the file, kept as they are (the names are nn_dataflow's):

- sizes in words (``size_gbuf``, ``size_regf``, ``array_bus_width``), DRAM
  bandwidth in words per cycle, energies in joules (per word, per MAC, per
  word-hop; ``idl_unit`` per cycle for the whole chip), times in cycles;
- memory levels in the order DRAM, GBUF, ITCN (array bus), REGF;
- data categories in the order weights (FIL), ifmaps, ofmaps;
- loops in the order ifmaps, ofmaps, batch; blocking levels outside GBUF
  (DRAM), GBUF, REGF (``tvals`` rows, ``ti``/``to``/``tb`` entries); loop
  orders per level GBUF, REGF, each giving every loop's position (0 innermost);
- node partitions (``part``) in the order OUTP, OFMP, BATP, INPP;
- ``sched_seq`` = (segment, spatial stage, temporal position in the stage).

Only what the import uses or reports is modelled; other keys are ignored, so
output of a newer nn_dataflow still reads. Every failure is one
:class:`~kapla.errors.InteropError` line: ``FILE: where: what is wrong``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic_core import PydanticCustomError

from kapla.arch.messages import format_validation_error, path_error
from kapla.errors import InteropError

#: nn_dataflow's memory-level order (``mem_hier_enum``): rows of ``access``.
LEVELS = ("DRAM", "GBUF", "ITCN", "REGF")
#: nn_dataflow's data-category order (``data_category_enum``): columns of ``access``.
CATEGORIES = ("weights", "ifmaps", "ofmaps")
#: Keys any nn_dataflow output has; a JSON object with none of them is someone else's.
SIGNATURE = ("net", "resource", "cost", "schedules")

_LEVELS_TEXT = ", ".join(LEVELS)
_CATEGORIES_TEXT = ", ".join(CATEGORIES)
_LOOPS_TEXT = "ifmaps, ofmaps, batch"
_BLOCKING_TEXT = "DRAM, GBUF, REGF"
_ORDERED_TEXT = "GBUF, REGF"
_PARTS_TEXT = "OUTP, OFMP, BATP, INPP"
_REL_TOL = 1e-6  # totals are sums of the layers' figures, up to float rounding


def _sized(n: int, unit: str, names: str) -> BeforeValidator:
    """A list of exactly ``n`` entries, named in the message when it is not."""

    def check(value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            raise PydanticCustomError("sized_list", "expected a list of {n} {unit}: {names} (got {got})",
                                      {"n": n, "unit": unit, "names": names, "got": _kind(value)})
        if len(value) != n:
            raise PydanticCustomError("sized_list", "expected {n} {unit}: {names} (got {got})",
                                      {"n": n, "unit": unit, "names": names, "got": len(value)})
        return value

    return BeforeValidator(check)


def _permutation(n: int) -> AfterValidator:
    def check(value: tuple[int, ...]) -> tuple[int, ...]:
        if sorted(value) != list(range(n)):
            raise PydanticCustomError("permutation", "must be a permutation of 0 to {last} (got {got})",
                                      {"last": n - 1, "got": list(value)})
        return value

    return AfterValidator(check)


def _fields_of(names: tuple[str, ...], what: str) -> Callable[[Any], Any]:
    """nn_dataflow writes its namedtuples as lists: name the entries."""

    def convert(value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            if len(value) != len(names):
                raise PydanticCustomError(
                    "namedtuple", "expected {what}: a list of {n} entries ({names}) (got {got})",
                    {"what": what, "n": len(names), "names": ", ".join(names), "got": len(value)})
            return dict(zip(names, value, strict=True))
        if isinstance(value, dict):
            return value
        raise PydanticCustomError("namedtuple", "expected {what}: a list of {n} entries ({names}) (got {got})",
                                  {"what": what, "n": len(names), "names": ", ".join(names), "got": _kind(value)})

    return convert


def _one_of(*allowed: Any) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value not in allowed:
            raise PydanticCustomError("one_of", "must be one of {allowed} (got {got})",
                                      {"allowed": ", ".join(map(repr, allowed)), "got": repr(value)})
        return value

    return check


Flag = Annotated[bool, Strict()]
Int = Annotated[int, Strict()]
PosInt = Annotated[int, Strict(), Field(gt=0)]
NonNegInt = Annotated[int, Strict(), Field(ge=0)]
# Counts and figures: JSON numbers, finite, never negative (ints are accepted; booleans are not).
Num = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
PosNum = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
# Options that nn_dataflow sets to Infinity for "no limit".
Limit = Annotated[float, Strict(), Field(ge=0)]

Pair = Annotated[tuple[PosInt, PosInt], _sized(2, "numbers", "height, width")]
Offset = Annotated[tuple[Int, Int], _sized(2, "numbers", "height, width")]
PerCategory = Annotated[tuple[Num, Num, Num], _sized(3, "values", _CATEGORIES_TEXT)]
PerCategoryInt = Annotated[tuple[NonNegInt, NonNegInt, NonNegInt], _sized(3, "values", _CATEGORIES_TEXT)]
PerCategoryPos = Annotated[tuple[PosInt, PosInt, PosInt], _sized(3, "values", _CATEGORIES_TEXT)]
PerLevel = Annotated[tuple[Num, Num, Num, Num], _sized(4, "values", _LEVELS_TEXT)]
AccessRows = Annotated[tuple[PerCategory, PerCategory, PerCategory, PerCategory], _sized(4, "rows", _LEVELS_TEXT)]
PerLoop = Annotated[tuple[PosInt, PosInt, PosInt], _sized(3, "values", _LOOPS_TEXT)]
LoopOrder = Annotated[tuple[NonNegInt, NonNegInt, NonNegInt], _sized(3, "values", _LOOPS_TEXT), _permutation(3)]
PerBlocking = Annotated[tuple[PosInt, PosInt, PosInt], _sized(3, "values", _BLOCKING_TEXT)]
Tvals = Annotated[tuple[PerLoop, PerLoop, PerLoop], _sized(3, "rows", _BLOCKING_TEXT)]
Orders = Annotated[tuple[LoopOrder, LoopOrder], _sized(2, "rows", _ORDERED_TEXT)]
PerOrdered = Annotated[tuple[PerCategory, PerCategory], _sized(2, "rows", _ORDERED_TEXT)]
PerOrderedInt = Annotated[tuple[PerCategoryInt, PerCategoryInt], _sized(2, "rows", _ORDERED_TEXT)]
Position = Annotated[tuple[Int, Int, Int, Int], _sized(4, "numbers", "batch, channel, height, width")]


class _Frozen(BaseModel):
    # extra="ignore": nn_dataflow writes more than the import needs (cache_stats, ...).
    model_config = ConfigDict(frozen=True, extra="ignore")


class NodeRegion(_Frozen):
    """A block of nodes: ``dim`` nodes from ``origin``, ``dist`` apart; ``type``
    0 processing, 1 DRAM; ``wtot``/``wbeg`` fold it in zig-zag (nn_dataflow's ``NodeRegion``)."""

    dim: Pair
    origin: Offset
    dist: Pair = (1, 1)
    type: Annotated[NonNegInt, AfterValidator(_one_of(0, 1))]
    wtot: PosInt
    wbeg: Int

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: Any) -> Any:
        return _fields_of(("dim", "origin", "dist", "type", "wtot", "wbeg"), "a node region")(value)

    @property
    def folded(self) -> bool:
        """True when the region wraps around in zig-zag rows (not a plain rectangle)."""
        return self.wtot != self.dim[1] or self.wbeg != self.wtot

    @property
    def nodes(self) -> int:
        return self.dim[0] * self.dim[1]


class PartitionScheme(_Frozen):
    """How a layer is split over its nodes: ``pdims[p]`` nodes (height, width)
    for each parallelism OUTP, OFMP, BATP, INPP; ``order`` from top to bottom level."""

    order: Annotated[tuple[NonNegInt, NonNegInt, NonNegInt, NonNegInt], _sized(4, "values", _PARTS_TEXT),
                     _permutation(4)]
    pdims: Annotated[tuple[Pair, Pair, Pair, Pair], _sized(4, "pairs", _PARTS_TEXT)]

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: Any) -> Any:
        return _fields_of(("order", "pdims"), "a partition scheme")(value)

    @property
    def nodes(self) -> int:
        """Nodes the partition spans."""
        return math.prod(h * w for h, w in self.pdims)


class FmapRange(_Frozen):
    """A block of a feature map: ``[begin, end)`` positions (batch, channel, height, width)."""

    fp_beg: Position
    fp_end: Position

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: Any) -> Any:
        return _fields_of(("fp_beg", "fp_end"), "an fmap range")(value)

    @model_validator(mode="after")
    def _ordered(self) -> FmapRange:
        if any(e < b for b, e in zip(self.fp_beg, self.fp_end, strict=True)):
            raise path_error("fp_end", f"ends before it begins ({list(self.fp_beg)} to {list(self.fp_end)})")
        return self


class DataLayout(_Frozen):
    """Where a layer's ofmaps are: block ``frngs[i]`` on ``regions[i]``, split by ``parts[i]``."""

    frngs: tuple[FmapRange, ...] = Field(min_length=1)
    regions: tuple[NodeRegion, ...]
    parts: tuple[PartitionScheme, ...]

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: Any) -> Any:
        return _fields_of(("frngs", "regions", "parts"), "a data layout")(value)

    @model_validator(mode="after")
    def _aligned(self) -> DataLayout:
        if not len(self.frngs) == len(self.regions) == len(self.parts):
            raise path_error("regions", f"frngs, regions and parts differ in length ({len(self.frngs)}, "
                                        f"{len(self.regions)}, {len(self.parts)})")
        return self


class LayerSchedule(_Frozen):
    """One layer's entry of ``schedules``: the scheme's fields, ``ofmap_layout`` and ``sched_seq``.

    ``time`` is the layer's own time, the largest of ``proc_time`` (PE array),
    ``bus_time`` (array bus) and ``dram_time`` (DRAM bandwidth) on its region;
    in a pipelined segment the layers overlap, so the segment's time
    (``segment_time``) is not their sum. ``cost`` includes static energy over
    that own time.
    """

    cost: Num
    time: Num
    ops: Num
    num_nodes: PosInt
    #: Whether the layer reads its input from / writes its output to DRAM.
    is_dram: Annotated[tuple[Flag, Flag], _sized(2, "flags", "source, destination")]
    cost_op: Num
    cost_access: Num
    cost_noc: Num
    cost_static: Num
    proc_time: Num
    bus_time: Num
    dram_time: Num
    access: AccessRows
    #: GBUF accesses to other nodes' buffers (buffer sharing), per category.
    remote_gbuf_access: PerCategory = (0.0, 0.0, 0.0)
    total_nhops: PerCategory
    mem_nhops: PerCategory
    node_nhops: PerCategory
    unit_nhops: PerCategory
    fetch: PerOrderedInt
    ti: PerBlocking
    to: PerBlocking
    tb: PerBlocking
    tvals: Tvals
    orders: Orders
    size: PerOrdered
    unit_size: PerOrdered
    unit_cnt: PerOrdered
    accfwd_reduction: PerCategoryPos
    bufshr_grp_size: PerCategoryPos
    bufshr_subgrp_size: PerCategoryPos
    bufshr_bs_t: PerCategoryPos
    bufshr_bs_ord: Annotated[tuple[NonNegInt, NonNegInt, NonNegInt], _sized(3, "values", _LOOPS_TEXT),
                             _permutation(3)]
    bufshr_rot_fetch: PerCategory
    bufshr_rot_round_cnt: PerCategory
    bufshr_rot_unit_cnt: PerCategory
    bufshr_wide_fetch: PerCategory
    bufshr_wide_fetch_width: PerCategory
    part: PartitionScheme
    ofmap_layout: DataLayout
    sched_seq: Annotated[tuple[NonNegInt, NonNegInt, NonNegInt], _sized(3, "indices", "segment, spatial, temporal")]

    @model_validator(mode="before")
    @classmethod
    def _flatten(cls, value: Any) -> Any:
        if not isinstance(value, (list, tuple)) or len(value) != 3:
            got = f"{len(value)} entries" if isinstance(value, (list, tuple)) else _kind(value)
            raise PydanticCustomError("schedule_entry", "expected [scheme, ofmap_layout, sched_seq], nn_dataflow's "
                                      "scheduling result (got {got})", {"got": got})
        scheme, layout, seq = value
        if not isinstance(scheme, dict):
            raise path_error("[0]", f"the scheme must be a mapping of fields (got {type(scheme).__name__})")
        return {**scheme, "ofmap_layout": layout, "sched_seq": seq}

    @model_validator(mode="after")
    def _consistent(self) -> LayerSchedule:
        for name, loop in (("ti", 0), ("to", 1), ("tb", 2)):
            column = tuple(row[loop] for row in self.tvals)
            if getattr(self, name) != column:
                raise path_error(name, f"{list(getattr(self, name))} differs from the tvals column "
                                       f"{list(column)}")
        if self.part.nodes != self.num_nodes:
            raise path_error("part", f"spans {self.part.nodes} nodes but num_nodes is {self.num_nodes}")
        return self

    @property
    def segment(self) -> int:
        return self.sched_seq[0]

    @property
    def level_accesses(self) -> tuple[float, float, float, float]:
        """Words per level (DRAM, GBUF, ITCN, REGF), as nn_dataflow totals them:
        each ``access`` row summed over the categories, remote buffer reads added to GBUF."""
        rows = [sum(row) for row in self.access]
        rows[1] += sum(self.remote_gbuf_access)
        return rows[0], rows[1], rows[2], rows[3]

    @property
    def noc_hops(self) -> float:
        """Word-hops on the NoC (memory traffic plus node-to-node forwarding)."""
        return sum(self.total_nhops)


class Resource(_Frozen):
    """The hardware (sizes in words, DRAM bandwidth in words per cycle)."""

    proc_region: NodeRegion
    dram_region: NodeRegion
    src_data_region: NodeRegion | None = None
    dst_data_region: NodeRegion | None = None
    dim_array: Pair
    size_gbuf: PosInt
    size_regf: PosInt
    #: Words per cycle; Infinity when nn_dataflow ran without a bus limit.
    array_bus_width: Annotated[float, Strict(), Field(gt=0)]
    dram_bandwidth: PosNum
    no_time_mux: Flag = False

    @model_validator(mode="after")
    def _region_types(self) -> Resource:
        if self.proc_region.type != 0:
            raise path_error("proc_region.type", f"must be 0, processing nodes (got {self.proc_region.type})")
        if self.dram_region.type != 1:
            raise path_error("dram_region.type", f"must be 1, DRAM nodes (got {self.dram_region.type})")
        if self.array_bus_width != math.inf and self.array_bus_width != int(self.array_bus_width):
            raise path_error("array_bus_width", f"must be a whole number of words (got {self.array_bus_width})")
        return self


class Cost(_Frozen):
    """Unit energies in joules: per MAC, per word access of each level, per word-hop, per idle cycle."""

    mac_op: Num
    mem_hier: PerLevel
    noc_hop: Num
    #: Static energy per cycle of the whole chip.
    idl_unit: Num


class Options(_Frozen):
    """The search options (nn_dataflow's ``Option``; absent keys take its defaults)."""

    sw_gbuf_bypass: Annotated[tuple[Flag, Flag, Flag], _sized(3, "flags", _CATEGORIES_TEXT)] = (False,) * 3
    sw_solve_loopblocking: Flag = False
    hw_access_forwarding: Flag = False
    hw_gbuf_sharing: Flag = False
    hw_gbuf_save_writeback: Flag = False
    partition_hybrid: Flag = False
    partition_batch: Flag = False
    partition_ifmaps: Flag = False
    partition_interlayer: Flag = False
    layer_pipeline_time_ovhd: Limit = math.inf
    layer_pipeline_max_degree: Limit = math.inf
    layer_pipeline_opt: Flag = True
    #: Energy, delay or energy-delay product.
    opt_goal: Annotated[str, Strict(), AfterValidator(_one_of("e", "d", "ed"))] = "e"
    ntops: PosInt = 1
    nprocesses: PosInt = 1


def _read_only(value: dict[str, LayerSchedule]) -> Mapping[str, LayerSchedule]:
    if not value:
        raise PydanticCustomError("no_schedules", "no layer is scheduled (got an empty mapping)")
    return MappingProxyType(value)


class NnDataflowRun(_Frozen):
    """One nn_dataflow search: its setting, totals and per-layer schedules (in file order).

    ``source`` names the file in messages. Totals are nn_dataflow's: its total
    time is the sum of the segments' times (or, when one segment holds the
    whole network, that segment's critical path), and its total cost counts
    static energy over that time, not over each layer's own.
    """

    source: str = "nn_dataflow output"
    version: Annotated[str, Strict()] = "unknown"
    net: Annotated[str, Strict(), Field(min_length=1)]
    batch: PosInt
    resource: Resource
    cost: Cost
    options: Options = Options()
    #: Seconds nn_dataflow searched; None when the file does not say.
    elapsed: Num | None = None
    total_cost: Num
    total_time: Num
    total_ops: Num
    total_accesses: PerLevel
    total_noc_hops: Num
    total_op_cost: Num | None = None
    total_access_cost: Num | None = None
    total_noc_cost: Num | None = None
    total_static_cost: Num | None = None
    segment_time: tuple[Num, ...] = ()
    schedules: Annotated[dict[str, LayerSchedule], AfterValidator(_read_only)]

    @model_validator(mode="before")
    @classmethod
    def _source(cls, value: Any, info: ValidationInfo) -> Any:
        # The file's name comes from the reader, never from the file.
        if isinstance(value, dict) and info.context and "source" in info.context:
            return {**value, "source": info.context["source"]}
        return value

    @model_validator(mode="after")
    def _consistent(self) -> NnDataflowRun:
        region = self.resource.proc_region.nodes
        last = -1
        for name, layer in self.schedules.items():
            where = f"schedules.{name}"
            if layer.num_nodes > region:
                raise path_error(f"{where}.num_nodes", f"{layer.num_nodes} nodes but the processing region "
                                                       f"has {region}")
            if layer.segment not in (last, last + 1):
                raise path_error(f"{where}.sched_seq", f"segment {layer.segment} follows segment {last} "
                                                       "(segments are numbered in order from 0)")
            last = layer.segment
        self._check_total("total_ops", self.total_ops, sum(s.ops for s in self.schedules.values()))
        self._check_total("total_noc_hops", self.total_noc_hops,
                          sum(s.noc_hops for s in self.schedules.values()))
        for i, level in enumerate(LEVELS):
            self._check_total(f"total_accesses[{i}]", self.total_accesses[i],
                              sum(s.level_accesses[i] for s in self.schedules.values()), f" {level} accesses")
        return self

    @staticmethod
    def _check_total(path: str, total: float, layers: float, what: str = "") -> None:
        if not math.isclose(total, layers, rel_tol=_REL_TOL, abs_tol=1e-9):
            raise path_error(path, f"{total:.10g} but the layers'{what or ' figures'} add up to {layers:.10g}")

    @property
    def layer_names(self) -> tuple[str, ...]:
        """Scheduled layers in the file's (nn_dataflow's scheduling) order."""
        return tuple(self.schedules)

    @property
    def num_segments(self) -> int:
        return max(s.segment for s in self.schedules.values()) + 1


def read_nn_dataflow(path: str | os.PathLike[str]) -> NnDataflowRun:
    """Read and validate one nn_dataflow JSON output; InteropError (one line) if it is not one."""
    path = Path(path)
    source = str(path)
    if path.is_dir():
        raise InteropError(f"{source}: is a directory, not nn_dataflow's JSON output")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InteropError(f"{source}: no such file") from None
    except OSError as err:
        raise InteropError(f"{source}: cannot read ({err.strerror})") from None
    return parse_nn_dataflow(_json_of(raw, source), source)


def parse_nn_dataflow(data: Any, source: str = "nn_dataflow output") -> NnDataflowRun:
    """Validate already-parsed JSON data; ``source`` names it in messages."""
    if not isinstance(data, dict):
        raise InteropError(f"{source}: not nn_dataflow's output: the top level is {_kind(data)}, "
                           "not an object")
    if not any(key in data for key in SIGNATURE):
        raise InteropError(f"{source}: {_foreign(data)}")
    try:
        return NnDataflowRun.model_validate(data, context={"source": source})
    except ValidationError as err:
        raise InteropError(f"{source}: {format_validation_error(err)}") from None


def _json_of(raw: bytes, source: str) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InteropError(f"{source}: not a text file (byte {raw[err.start]:#04x} at offset {err.start} is "
                           "not UTF-8)") from None
    if not text.strip():
        raise InteropError(f"{source}: empty file, not nn_dataflow's JSON output")
    try:
        # nn_dataflow writes Infinity for unlimited options, which json reads.
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InteropError(f"{source}: not JSON (line {err.lineno}, column {err.colno}: {err.msg})") from None
    except RecursionError:
        raise InteropError(f"{source}: not JSON nn_dataflow writes (nested too deeply)") from None


def _kind(value: Any) -> str:
    """What a JSON value is, for messages."""
    names = {list: "a list", tuple: "a list", dict: "an object", str: "a string", bool: "a boolean", int: "a number",
             float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _foreign(data: dict[str, Any]) -> str:
    """Why a JSON object is someone else's: say whose when we can tell."""
    fmt = data.get("format")
    if isinstance(fmt, str) and fmt.startswith("kapla"):
        return f"a {fmt} document written by kapla, not nn_dataflow's output"
    if "levels" in data and "name" in data:
        return "a kapla hardware description, not nn_dataflow's output"
    keys = ", ".join(list(data)[:4]) + (", ..." if len(data) > 4 else "")
    return (f"not nn_dataflow's output: it has none of {', '.join(SIGNATURE)} "
            f"(its keys: {keys or 'none'})")
