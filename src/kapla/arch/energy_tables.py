"""Size-to-energy tables: access energy of a buffer looked up from its size.

A level may write ``energy_table: <name>`` instead of ``access_pj``; its
access energy is then read off the table at the level's capacity (each buffer
of a split capacity at its own size). Tables give picojoules per access of
``word_bits`` bits (the table's own access width); :class:`~kapla.arch.spec.ArchSpec`
rescales to the spec's base word (``table pJ x word_bits / table.word_bits``),
then to each tensor's width, like any other ``*_pj`` value.

Between table points the energy is interpolated piecewise-linearly in
``log(size)`` vs ``log(energy)`` (a power law per segment; :meth:`EnergyTable.between`
says which points a size falls between, for descriptions that say so). A size
equal to a table point returns that point's energy exactly. A size outside the
table is an error naming it: a memory smaller or larger than any the source
measured has no energy to read off, and extending a slope would invent one.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from kapla.errors import ArchError

KIB = 1 << 10


@dataclass(frozen=True)
class EnergyTable:
    """Access energy (pJ per ``word_bits``-bit access) against buffer size (bytes).

    ``points``: ``(size_bytes, pJ)`` pairs with strictly ascending sizes and
    positive energies. ``mac_pj``, ``hop_pj`` and ``dram_pj`` are the same
    source's energies for one MAC, one NoC hop of one word and one DRAM
    access, for presets to quote (the spec never applies them by itself).
    """

    name: str
    description: str
    word_bits: int
    points: tuple[tuple[int, float], ...]
    mac_pj: float | None = None
    hop_pj: float | None = None
    dram_pj: float | None = None

    def __post_init__(self) -> None:
        if len(self.points) < 2:
            raise ValueError(f"energy table {self.name!r} needs at least two points")
        sizes = [size for size, _ in self.points]
        if any(b <= a for a, b in itertools.pairwise(sizes)) or sizes[0] <= 0:
            raise ValueError(f"energy table {self.name!r}: sizes must be positive and ascending")
        if any(pj <= 0 for _, pj in self.points):
            raise ValueError(f"energy table {self.name!r}: energies must be positive")

    @property
    def smallest(self) -> int:
        return self.points[0][0]

    @property
    def largest(self) -> int:
        return self.points[-1][0]

    def covers(self, size_bytes: float) -> bool:
        """Whether the table gives an energy for ``size_bytes`` (inside its range;
        a size that misses an end by rounding alone is in)."""
        return self.smallest * (1 - 1e-12) <= size_bytes <= self.largest * (1 + 1e-12)

    def between(self, size_bytes: float) -> tuple[int, int] | None:
        """The two table sizes ``size_bytes`` is interpolated between (None: a table point)."""
        self._check(size_bytes)
        if any(size == size_bytes for size, _ in self.points):
            return None
        index = self._segment(size_bytes)
        return self.points[index][0], self.points[index + 1][0]

    def interpolate(self, size_bytes: float) -> float:
        """pJ per ``word_bits``-bit access of a buffer of ``size_bytes`` bytes."""
        self._check(size_bytes)
        points = self.points
        for size, pj in points:
            if size == size_bytes:
                return pj
        index = self._segment(size_bytes)
        (s0, e0), (s1, e1) = points[index], points[index + 1]
        slope = math.log(e1 / e0) / math.log(s1 / s0)
        return e0 * math.exp(slope * math.log(size_bytes / s0))

    def _segment(self, size_bytes: float) -> int:
        index = 0
        while index < len(self.points) - 2 and size_bytes > self.points[index + 1][0]:
            index += 1
        return index

    def _check(self, size_bytes: float) -> None:
        if not size_bytes > 0 or math.isinf(size_bytes):
            raise ArchError(f"energy table {self.name!r}: size must be a positive number of bytes "
                            f"(got {size_bytes})")
        if not self.covers(size_bytes):
            raise ArchError(f"energy table {self.name!r} has no energy for {format_bytes(size_bytes)}: "
                            f"it covers {format_bytes(self.smallest)} to {format_bytes(self.largest)}")


def format_bytes(size: float) -> str:
    """``size`` in the largest binary unit that keeps it whole (``"32 KiB"``, ``"48 B"``)."""
    if size != int(size):
        return f"{size:g} B"
    size = int(size)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


_TABLES: dict[str, EnergyTable] = {}


def register_energy_table(table: EnergyTable, *, replace: bool = False) -> EnergyTable:
    """Add a table; re-registering a name is an error unless ``replace``."""
    if table.name in _TABLES and not replace:
        raise ArchError(f"energy table {table.name!r} is already registered")
    _TABLES[table.name] = table
    return table


def energy_table(name: str) -> EnergyTable:
    """The table called ``name``; ArchError if there is none."""
    try:
        return _TABLES[name]
    except KeyError:
        raise ArchError(f"unknown energy table {name!r} (known: {', '.join(energy_table_names())})") from None


def energy_table_names() -> tuple[str, ...]:
    """Registered table names, sorted."""
    return tuple(sorted(_TABLES))


def interpolate(name: str, size_bytes: float) -> float:
    """``energy_table(name).interpolate(size_bytes)``: pJ per access of the table's width."""
    return energy_table(name).interpolate(size_bytes)


#: Interstellar (Yang et al., "Interstellar: Using Halide's Scheduling Language
#: to Analyze DNN Accelerators", ASPLOS 2020), Table 3, energy per 16-bit
#: access in 28 nm: register files of 16 B to 512 B, then SRAMs of 32 KB to
#: 512 KB (KB read as KiB), one ascending list of all eleven points.
INTERSTELLAR = register_energy_table(EnergyTable(
    name="interstellar",
    description="Interstellar (ASPLOS 2020) Table 3, 28 nm, pJ per 16-bit access",
    word_bits=16,
    points=(
        (16, 0.03),
        (32, 0.06),
        (64, 0.12),
        (128, 0.24),
        (256, 0.48),
        (512, 0.96),
        (32 * KIB, 6.0),
        (64 * KIB, 9.0),
        (128 * KIB, 13.5),
        (256 * KIB, 20.25),
        (512 * KIB, 30.375),
    ),
    mac_pj=0.075,
    hop_pj=0.035,
    dram_pj=200.0,
))


__all__ = [
    "EnergyTable",
    "INTERSTELLAR",
    "energy_table",
    "format_bytes",
    "energy_table_names",
    "interpolate",
    "register_energy_table",
]
