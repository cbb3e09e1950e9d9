"""A readable, fully resolved listing of a hardware spec."""

from __future__ import annotations

from typing import Any

from kapla.arch.energy_tables import energy_table
from kapla.arch.energy_tables import format_bytes as table_bytes
from kapla.arch.spec import TENSOR_KINDS, ArchSpec, Counting, MemLevel, SplitCapacity


def format_bytes(size: int | None) -> str:
    """``32768`` -> ``32 KiB``; exact binary units only, else plain bytes."""
    return "unbounded" if size is None else table_bytes(size)


def show_value(value: Any) -> str:
    """A spec value as a table or label shows it: ``[8, 8]`` -> ``8x8``, a float by ``g``, a flag in lower case."""
    if isinstance(value, list):
        return "x".join(map(str, value))
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _dims(array: tuple[int, int]) -> str:
    return f"{array[0]}x{array[1]}"


def _num(value: float) -> str:
    return f"{value:.10g}"


def _capacity(spec: ArchSpec, level: MemLevel) -> str:
    """``32 KiB (16384 w)``, or ``wgt 4 KiB + ofm 384 B`` for a split level."""
    if isinstance(level.capacity, SplitCapacity):
        return " + ".join(f"{kind} {format_bytes(level.capacity.of(kind))}" for kind in level.capacity.kinds)
    words = spec.capacity_words(level.name)
    return format_bytes(level.capacity) + (f" ({words} w)" if words is not None else "")


def _energy(spec: ArchSpec, index: int) -> str:
    """pJ per base word: one number, ``r/w`` numbers, per-tensor numbers if they differ."""
    level = spec.levels[index]
    kinds = level.held if index < len(spec.levels) - 1 else TENSOR_KINDS
    pairs = {kind: (spec.read_pj_of(index, kind), spec.write_pj_of(index, kind)) for kind in kinds}

    def show(pair: tuple[float, float]) -> str:
        return _num(pair[0]) if pair[0] == pair[1] else f"r {_num(pair[0])}/w {_num(pair[1])}"

    if len(set(pairs.values())) == 1:
        text = show(next(iter(pairs.values()))) + " pJ"
    else:
        text = ", ".join(f"{kind} {show(pair)}" for kind, pair in pairs.items()) + " pJ"
    if level.access_pj is None and (level.read_pj is None or level.write_pj is None):
        assert level.energy_table is not None  # validated
        table = energy_table(level.energy_table)
        sizes = {spec.priced_bytes(index, kind) for kind in level.held}
        notes = [level.energy_table]
        if level.double_buffered:
            notes.append("priced at 2x: double-buffered")
        for size in sorted(sizes):
            between = table.between(size)
            if between is not None:  # say so: the source measured no memory of this size
                notes.append(f"{table_bytes(size)} interpolated between {table_bytes(between[0])} "
                             f"and {table_bytes(between[1])}")
        text += f" ({'; '.join(notes)})"
    return text


def describe_arch(spec: ArchSpec) -> str:
    """Multi-line text: structure, levels (inner to outer), energies, options."""
    on = {True: "on", False: "off"}
    widths_note = ""
    if spec.tensor_bits is not None:
        widths_note = " (" + ", ".join(f"{kind} {spec.tensor_bits_of(kind)}-bit" for kind in TENSOR_KINDS
                                       if spec.tensor_bits_of(kind) != spec.word_bits) + ")"
        widths_note = "" if widths_note == " ()" else widths_note
    lines = [
        f"{spec.name}: {spec.num_nodes} nodes ({_dims(spec.node_array)}), {spec.num_pes} PEs "
        f"({_dims(spec.pe_array)} per {spec.levels[1].name}), {spec.word_bits}-bit words"
        f"{widths_note}, {_num(spec.clock_mhz)} MHz",
        f"PE mapping: {spec.pe_mapping}",
        f"memory levels (innermost first; energies in pJ per {spec.word_bits}-bit word):",
    ]
    rows = [("level", "capacity/unit", "holds", "array", "units", "unroll", "access",
             "bandwidth/unit", "neighbours")]
    last = len(spec.levels) - 1
    for i, level in enumerate(spec.levels):
        bandwidth = "-" if level.bandwidth is None else f"{_num(level.bandwidth)} B/cycle"
        holds = "all" if set(level.held) == set(TENSOR_KINDS) else ",".join(level.held)
        unroll = "-" if i == last else spec.unroll_of(i).text
        rows.append((level.name, _capacity(spec, level), holds, _dims(level.array),
                     str(spec.units(level.name)), unroll, _energy(spec, i), bandwidth,
                     "yes" if level.same_level_transfer else "no"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    channels = " ".join(f"({r},{c})" for r, c in spec.dram_channel_nodes)
    origin = "corners of the node array" if spec.dram_channels is None else "explicit"
    lines.append(f"array bus (ITCN, into {spec.levels[0].name}): {spec.array_bus.width_bits} bit = "
                 f"{spec.bus_width_words} words/cycle, {_num(spec.array_bus.access_pj)} pJ/word")
    for i, level in enumerate(spec.levels[1:-1], start=1):
        bus = spec.bus_of(i)
        if bus is not None:
            lines.append(f"bus into {level.name}: {bus.width_bits} bit = "
                         f"{bus.width_bits // spec.word_bits} words/cycle, {_num(bus.access_pj)} pJ/word")
    if spec.tensor_bits is not None:
        lines.append("tensor widths: " + ", ".join(f"{kind} {spec.tensor_bits_of(kind)} bit"
                                                   for kind in TENSOR_KINDS)
                     + f" (energy, capacity and bandwidth per word scale by bits / {spec.word_bits})")
    lines += [
        f"MAC: {_num(spec.mac_pj)} pJ; NoC hop: {_num(spec.hop_pj)} pJ/word; "
        f"static: {_num(spec.static_pj)} pJ/cycle (whole chip)",
        f"DRAM channels: {channels} ({origin}), {_num(spec.dram_bandwidth)} B/cycle in total",
        "options: " + ", ".join(f"{key}={on[value]}" for key, value in spec.options.model_dump().items()),
    ]
    if spec.counting != Counting():
        lines.append("counting: " + ", ".join(f"{key}={value}" for key, value in spec.counting.model_dump().items())
                     + " (not kapla's own: docs/nn_dataflow.md)")
    return "\n".join(lines)
