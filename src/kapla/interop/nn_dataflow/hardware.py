"""The hardware an nn_dataflow run describes, as a kapla :class:`ArchSpec`.

nn_dataflow records the resource (node and PE arrays, buffer sizes, bus width,
DRAM bandwidth and channel nodes) and the unit energies, but not the clock,
the word width or the PE-array dataflow (row stationary, as Eyeriss). The
spec is therefore a base preset with the file's figures applied:

- node array = the processing region, PE array = ``dim_array``;
- GBUF/REGF capacity = ``size_gbuf``/``size_regf`` words x the base's word bytes;
- array bus = ``array_bus_width`` words per cycle x the word bits;
- DRAM bandwidth = ``dram_bandwidth`` words per cycle x the word bytes (total);
- DRAM channels = the DRAM region's nodes, relative to the processing region
  and moved onto its nearest node when outside it (where their traffic enters);
- energies: joules per word (per MAC, per word-hop) -> pJ; ``idl_unit`` (per
  cycle, whole chip) -> ``static_pj``;
- options: buffer sharing as ``hw_gbuf_sharing``; layer pipelining as
  ``partition_interlayer`` (temporal only without ``no_time_mux``).

The base must have nn_dataflow's three levels: PE register files, node
buffers, DRAM (innermost first), whatever their names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kapla.arch.loader import load_preset
from kapla.arch.spec import PJ, ArchSpec
from kapla.errors import ArchError, InteropError
from kapla.interop.nn_dataflow.reader import NnDataflowRun, NodeRegion

#: The preset nn_dataflow's runs are read onto: the multi-node accelerator of
#: TANGRAM and KAPLA, whose conventions nn_dataflow's cost model follows.
BASE_PRESET = "multinode_nndataflow"

# Rows of ``cost.mem_hier`` (nn_dataflow's memory-level order).
_DRAM, _GBUF, _ITCN, _REGF = range(4)
# Per-level energy fields replaced by the file's single access energy.
_ENERGY_FIELDS = ("access_pj", "read_pj", "write_pj", "energy_table")


def arch_from_run(run: NnDataflowRun, base: ArchSpec | None = None) -> ArchSpec:
    """``base`` (default: the :data:`BASE_PRESET` preset) with ``run``'s resource and cost applied."""
    base = load_preset(BASE_PRESET) if base is None else base
    if len(base.levels) != 3:
        raise ArchError(f"hardware {base.name!r}: nn_dataflow's hardware has three memory levels (PE registers, "
                        f"node buffer, DRAM); this one has {len(base.levels)} ({', '.join(base.level_names)})")
    res, cost = run.resource, run.cost
    if res.array_bus_width == float("inf"):
        raise InteropError(f"{run.source}: resource.array_bus_width: the run had no array-bus limit (Infinity); "
                           "kapla's array bus needs a width")
    for field in ("proc_region", "dram_region"):
        if getattr(res, field).folded:
            raise InteropError(f"{run.source}: resource.{field}: a folded (zig-zag) node region is not "
                               "supported; kapla's node array is a rectangle")
    word_bytes = base.word_bytes
    data = base.to_dict()
    regf, gbuf, dram = data["levels"]
    _set_level(regf, access_pj=cost.mem_hier[_REGF] / PJ, capacity=res.size_regf * word_bytes,
               array=list(res.dim_array))
    _set_level(gbuf, access_pj=cost.mem_hier[_GBUF] / PJ, capacity=res.size_gbuf * word_bytes,
               array=list(res.proc_region.dim))
    _set_level(dram, access_pj=cost.mem_hier[_DRAM] / PJ, bandwidth=res.dram_bandwidth * word_bytes)
    options = run.options
    changes: dict[str, Any] = {
        "name": f"{base.name} as in {Path(run.source).name}",
        "levels": data["levels"],
        "array_bus": {"width_bits": int(res.array_bus_width) * base.word_bits,
                      "access_pj": cost.mem_hier[_ITCN] / PJ},
        "mac_pj": cost.mac_op / PJ,
        "hop_pj": cost.noc_hop / PJ,
        "static_pj": cost.idl_unit / PJ,
        "dram_channels": _dram_channels(res.proc_region, res.dram_region),
        "options": {"buffer_sharing": options.hw_gbuf_sharing,
                    "spatial_layer_pipe": options.partition_interlayer,
                    "temporal_layer_pipe": options.partition_interlayer and not res.no_time_mux},
    }
    return base.replace(**changes)


def _set_level(level: dict[str, Any], access_pj: float, **changes: Any) -> None:
    """One access energy for the level, as nn_dataflow has (no read/write split, no table)."""
    for key in _ENERGY_FIELDS:
        level.pop(key, None)
    level.update(changes, access_pj=access_pj)


def _dram_channels(proc: NodeRegion, dram: NodeRegion) -> list[list[int]] | None:
    """The DRAM region's nodes in the processing region's coordinates; None
    when they are its corners, kapla's default (so a spec like the preset stays equal to it)."""
    rows, cols = proc.dim
    nodes: dict[tuple[int, int], None] = {}
    for i in range(dram.dim[0]):
        for j in range(dram.dim[1]):
            r = dram.origin[0] + i * dram.dist[0] - proc.origin[0]
            c = dram.origin[1] + j * dram.dist[1] - proc.origin[1]
            nodes[(min(max(r, 0), rows - 1), min(max(c, 0), cols - 1))] = None
    corners = {(0, 0), (0, cols - 1), (rows - 1, 0), (rows - 1, cols - 1)}
    if set(nodes) == corners:
        return None
    return [list(node) for node in nodes]
