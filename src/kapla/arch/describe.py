"""A readable, fully resolved listing of a hardware spec."""

from __future__ import annotations

from kapla.arch.spec import ArchSpec


def format_bytes(size: int | None) -> str:
    """``32768`` -> ``32 KiB``; exact binary units only, else plain bytes."""
    if size is None:
        return "unbounded"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def _dims(array: tuple[int, int]) -> str:
    return f"{array[0]}x{array[1]}"


def _num(value: float) -> str:
    return f"{value:.10g}"


def describe_arch(spec: ArchSpec) -> str:
    """Multi-line text: structure, levels (inner to outer), energies, options."""
    on = {True: "on", False: "off"}
    lines = [
        f"{spec.name}: {spec.num_nodes} nodes ({_dims(spec.node_array)}), {spec.num_pes} PEs "
        f"({_dims(spec.pe_array)} per {spec.levels[1].name}), {spec.word_bits}-bit words, "
        f"{_num(spec.clock_mhz)} MHz",
        f"PE mapping: {spec.pe_mapping}",
        "memory levels (innermost first):",
    ]
    rows = [("level", "capacity/unit", "array", "units", "access", "bandwidth/unit", "neighbours")]
    for level in spec.levels:
        words = spec.capacity_words(level.name)
        capacity = format_bytes(level.capacity) + (f" ({words} w)" if words is not None else "")
        bandwidth = "-" if level.bandwidth is None else f"{_num(level.bandwidth)} B/cycle"
        rows.append((level.name, capacity, _dims(level.array), str(spec.units(level.name)),
                     f"{_num(level.access_pj)} pJ", bandwidth,
                     "yes" if level.same_level_transfer else "no"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    channels = " ".join(f"({r},{c})" for r, c in spec.dram_channel_nodes)
    origin = "corners of the node array" if spec.dram_channels is None else "explicit"
    lines += [
        f"array bus (ITCN): {spec.array_bus.width_bits} bit = {spec.bus_width_words} words/cycle, "
        f"{_num(spec.array_bus.access_pj)} pJ/word",
        f"MAC: {_num(spec.mac_pj)} pJ; NoC hop: {_num(spec.hop_pj)} pJ/word; "
        f"static: {_num(spec.static_pj)} pJ/cycle (whole chip)",
        f"DRAM channels: {channels} ({origin}), {_num(spec.dram_bandwidth)} B/cycle in total",
        "options: " + ", ".join(f"{key}={on[value]}" for key, value in spec.options.model_dump().items()),
    ]
    return "\n".join(lines)
