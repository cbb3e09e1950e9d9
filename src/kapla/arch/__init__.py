"""The generic hardware template (KAPLA Sec. III-C) and its presets.

Knows nothing of workloads or schedules. Typical use::

    from kapla.arch import load_arch
    spec = load_arch("multinode")          # or a .yaml/.yml/.json path
    spec.num_nodes, spec.level("GBUF").capacity, spec.static_energy

Units: capacities in bytes per unit, energies in pJ in files (``*_pj``) and
joules from the ``*_energy`` properties, bandwidths in bytes per cycle per unit
(DRAM: total), clock in MHz. See :mod:`kapla.arch.spec`.
"""

from kapla.arch.describe import describe_arch, format_bytes
from kapla.arch.loader import list_presets, load_arch, load_preset, parse_arch, read_arch_file
from kapla.arch.mapping import (
    PeMappingTemplate,
    get_pe_mapping,
    pe_mapping_names,
    register_pe_mapping,
)
from kapla.arch.spec import ArchOptions, ArchSpec, ArrayBus, MemLevel, validate_arch

__all__ = [
    "ArchOptions",
    "ArchSpec",
    "ArrayBus",
    "MemLevel",
    "PeMappingTemplate",
    "describe_arch",
    "format_bytes",
    "get_pe_mapping",
    "list_presets",
    "load_arch",
    "load_preset",
    "parse_arch",
    "pe_mapping_names",
    "read_arch_file",
    "register_pe_mapping",
    "validate_arch",
]
