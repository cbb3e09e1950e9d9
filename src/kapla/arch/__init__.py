"""The generic hardware template (KAPLA Sec. III-C) and its presets.

Knows nothing of workloads or schedules. Typical use::

    from kapla.arch import load_arch
    spec = load_arch("multinode")          # or a .yaml/.yml/.json path
    spec.num_nodes, spec.level("GBUF").capacity, spec.static_energy

Units: capacities in bytes per unit, energies in pJ in files (``*_pj``) and
joules from the ``*_energy`` properties, bandwidths in bytes per cycle per unit
(DRAM: total), clock in MHz. See :mod:`kapla.arch.spec`.

Per level and tensor kind (``"ifm"``, ``"wgt"``, ``"ofm"``), the cost model reads
the resolved accessors: ``spec.holds(i, kind)``, ``spec.holders(kind)``,
``spec.capacity_bytes(i, kind)``, ``spec.read_energy(i, kind)``,
``spec.write_energy(i, kind)``, ``spec.bus_of(i)``, ``spec.unroll_of(i)``,
``spec.tensor_bits_of(kind)``. The template is described in docs/hardware.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kapla.lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover
    from kapla.arch.describe import describe_arch, format_bytes
    from kapla.arch.energy_tables import EnergyTable, energy_table, energy_table_names, register_energy_table
    from kapla.arch.loader import list_presets, load_arch, load_preset, parse_arch, read_arch_file
    from kapla.arch.mapping import PeMappingTemplate, get_pe_mapping, pe_mapping_names, register_pe_mapping
    from kapla.arch.spec import (
        TENSOR_KINDS,
        ArchOptions,
        ArchSpec,
        ArrayBus,
        BusSpec,
        MemLevel,
        SplitCapacity,
        TensorBits,
        validate_arch,
    )
    from kapla.arch.unroll import Unroll, parse_unroll

# loaded when first used: listing the presets needs no validation models
_WHERE = {
    **dict.fromkeys(("describe_arch", "format_bytes"), "describe"),
    **dict.fromkeys(("EnergyTable", "energy_table", "energy_table_names", "register_energy_table"), "energy_tables"),
    **dict.fromkeys(("list_presets", "load_arch", "load_preset", "parse_arch", "read_arch_file"), "loader"),
    **dict.fromkeys(("PeMappingTemplate", "get_pe_mapping", "pe_mapping_names", "register_pe_mapping"), "mapping"),
    **dict.fromkeys(("TENSOR_KINDS", "ArchOptions", "ArchSpec", "ArrayBus", "BusSpec", "MemLevel", "SplitCapacity",
                     "TensorBits", "validate_arch"), "spec"),
    **dict.fromkeys(("Unroll", "parse_unroll"), "unroll"),
}

__all__ = [
    "TENSOR_KINDS",
    "ArchOptions",
    "ArchSpec",
    "ArrayBus",
    "BusSpec",
    "EnergyTable",
    "MemLevel",
    "PeMappingTemplate",
    "SplitCapacity",
    "TensorBits",
    "Unroll",
    "describe_arch",
    "energy_table",
    "energy_table_names",
    "format_bytes",
    "get_pe_mapping",
    "list_presets",
    "load_arch",
    "load_preset",
    "parse_arch",
    "parse_unroll",
    "pe_mapping_names",
    "read_arch_file",
    "register_energy_table",
    "register_pe_mapping",
    "validate_arch",
]


__getattr__ = lazy_exports(__name__, _WHERE)
