"""The hardware as the cost model reads it: per level and tensor, in joules and bits.

:class:`~kapla.arch.spec.ArchSpec` is what users write; :func:`hardware`
resolves it once into plain numbers (energy per word of each tensor, capacity
in bits, which tensors each level holds, buses), so the cost model's inner
loops never touch the validated spec.

Structure, innermost level first (``levels[-1]`` is DRAM):

* level ``i``'s ``array`` is how many units of it one unit of level ``i + 1``
  contains; the outermost on-chip level's units are the *nodes*, joined by
  the NoC (with hop distances to the DRAM channels); every other fan-out
  is a *bus* (level 0's is the array bus, "ITCN");
* a tensor a level does not hold bypasses it: it is served from the next
  level out that holds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from kapla.arch.spec import ArchSpec
from kapla.dataflow.tensors import Kind
from kapla.memo import IdentityMemo

ITCN = "ITCN"
NOC = "NoC"
MAC = "MAC"
STATIC = "static"


@dataclass(frozen=True)
class Bus:
    """The interconnect that delivers words into the units of a level."""

    name: str
    energy: Mapping[Kind, float]  # joules per word of each tensor
    width_bits: float | None  # None: never a bottleneck


@dataclass(frozen=True)
class Level:
    name: str
    holds: frozenset[Kind]
    capacity_bits: int | None  # one unit, shared by every tensor it holds (None: unbounded or split)
    split_bits: Mapping[Kind, int]  # per-tensor buffers side by side (empty: shared)
    read: Mapping[Kind, float]  # joules per word read
    write: Mapping[Kind, float]  # joules per word written
    array: tuple[int, int]
    same_level_transfer: bool
    bus: Bus | None

    @property
    def fanout(self) -> int:
        return self.array[0] * self.array[1]


@dataclass(frozen=True)
class Hardware:
    """A resolved :class:`ArchSpec` (one block of nodes of it)."""

    name: str
    levels: tuple[Level, ...]  # on-chip levels then DRAM
    bits: Mapping[Kind, int]  # word width of each tensor
    word_bits: int
    mac: float  # joules per operation
    hop: Mapping[Kind, float]  # joules per word of each tensor per NoC hop
    static: float  # joules per cycle
    dram_bits_per_cycle: float
    channels: tuple[tuple[int, int], ...]
    buffer_sharing: bool
    per_node_dram: bool = False  # every node fetches its own copy of what it reads from DRAM
    psums_through_dram: bool = False  # nodes splitting a reduction each write their partial sums out
    gbuf_pe_side: bool = False  # the node buffer counts only what it serves the PEs
    regf_window: bool = False  # the register file holds one streamed output's window
    #: :meth:`holders` by its arguments (asked per tensor and pair of levels by every model call)
    _holders: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def onchip(self) -> int:
        """On-chip levels (DRAM is ``levels[onchip]``)."""
        return len(self.levels) - 1

    @property
    def node(self) -> int | None:
        """The node level (outermost on-chip) when its fan-out is a NoC, i.e. when
        there is a level inside it; with one on-chip level the PEs hang off a bus."""
        return self.onchip - 1 if self.onchip >= 2 else None

    @property
    def systolic(self) -> bool:
        """PEs pass operands to their neighbours (only edge words use the array bus)."""
        return self.levels[0].same_level_transfer

    def holders(self, kind: Kind, bypass: tuple[frozenset[Kind], ...] = ()) -> tuple[int, ...]:
        """On-chip levels keeping ``kind``, innermost first (``bypass``: a scheme's extra bypasses)."""
        found = self._holders.get((kind, bypass))
        if found is None:
            found = self._holders[(kind, bypass)] = tuple(
                i for i, lvl in enumerate(self.levels[:-1]) if kind in lvl.holds and not (i < len(bypass)
                                                                                       and kind in bypass[i]))
        return found


@lru_cache(maxsize=1024)
def mean_channel_distance(channels: tuple[tuple[int, int], ...], origin: tuple[int, int],
                          grid: tuple[int, int]) -> float:
    """Mean Manhattan hops from the nodes of a rows x cols block at ``origin`` to their nearest channel."""
    (r0, c0), (rows, cols) = origin, grid
    total = 0
    for r in range(r0, r0 + rows):
        for c in range(c0, c0 + cols):
            total += min(abs(r - cr) + abs(c - cc) for cr, cc in channels)
    return total / (rows * cols)


@lru_cache(maxsize=1024)
def mean_cells_distance(channels: tuple[tuple[int, int], ...], cells: tuple[tuple[int, int], ...]) -> float:
    """Mean Manhattan hops from the nodes ``cells`` (any shape, e.g. a folded region) to their nearest channel."""
    return sum(min(abs(r - cr) + abs(c - cc) for cr, cc in channels) for r, c in cells) / len(cells)


def _onchip_bytes(arch: ArchSpec, i: int, kind: str | None = None) -> int:
    """``arch.capacity_bytes`` of an on-chip level holding ``kind``: never unbounded (only DRAM is)."""
    capacity = arch.capacity_bytes(i, kind)
    assert capacity is not None, (arch.levels[i].name, kind)
    return capacity


def node_level(arch: ArchSpec) -> int | None:
    """Index of the node level (the outermost on-chip level, whose units the NoC
    joins, :attr:`ArchSpec.node_level`), or None for a chip with a single on-chip level."""
    return None if arch.node_level is None else len(arch.levels) - 2


def word_energy(arch: ArchSpec, level: int) -> float:
    """Joules per word access of ``level`` (negative: from DRAM down) as the
    solvers' estimates count it, from the resolved view the cost model
    charges: one figure for every tensor, reads and writes alike, which a
    classic hierarchy guarantees (its levels hold every tensor at one width);
    elsewhere the input read energy (the output's where the level holds no
    input). Energies taken from a size table come out as well as given ones."""
    lvl = hardware(arch).levels[level]
    return lvl.read[Kind.IFM] if Kind.IFM in lvl.holds else lvl.read[Kind.OFM]


_node_words = IdentityMemo()


def node_buffer_words(arch: ArchSpec, kind: str) -> int:
    """Words of tensor ``kind`` one node's buffer can hold (0: it does not hold it,
    or there is no node level); kept per spec (:class:`~kapla.memo.IdentityMemo`)."""
    known = _node_words.of(arch)
    words = known.get(kind)
    if words is None:
        node = node_level(arch)
        if node is None or not arch.holds(node, kind):
            words = 0
        else:
            words = int(_onchip_bytes(arch, node, kind) * 8 // arch.tensor_bits_of(kind))
        known[kind] = words
    return words


def with_node_reserve(arch: ArchSpec, reserve: Mapping[str, int]) -> ArchSpec | None:
    """``arch`` with some words of each tensor kind taken from every node's
    buffer (pinned weights, forwarded fmaps waiting); None if nothing is left."""
    node = node_level(arch)
    if node is None or not any(reserve.values()):
        return arch
    name = arch.levels[node].name
    if arch.capacity_is_split(node):
        capacity = {}
        for kind in ("ifm", "wgt", "ofm"):
            if arch.holds(node, kind):
                left = _onchip_bytes(arch, node, kind) - reserve.get(kind, 0) * arch.tensor_bits_of(kind) // 8
                if left <= 0:
                    return None
                capacity[kind] = left
        return arch.with_level(name, capacity=capacity)
    taken = sum(words * arch.tensor_bits_of(kind) // 8 for kind, words in reserve.items())
    left = _onchip_bytes(arch, node) - taken
    return arch.with_level(name, capacity=left) if left > 0 else None


def channel_distance(arch: ArchSpec, grid: tuple[int, int], origin: tuple[int, int] = (0, 0)) -> float:
    """Mean hops from the nodes of a rows x cols block of ``arch`` to their nearest DRAM channel."""
    return mean_channel_distance(arch.dram_channel_nodes, origin, grid)


_resolved = IdentityMemo()


def hardware(arch: ArchSpec) -> Hardware:
    """``arch`` resolved for the cost model (cached: specs are immutable).

    The same spec object comes back call after call (the estimates ask for
    it per level and family), so it is first compared by identity
    (:class:`~kapla.memo.IdentityMemo`), then by value."""
    known = _resolved.of(arch)
    hw = known.get("hw")
    if hw is None:
        hw = known["hw"] = _resolve(arch)
    return hw


@lru_cache(maxsize=256)
def _resolve(arch: ArchSpec) -> Hardware:
    n = len(arch.levels)
    levels = []
    for i, spec in enumerate(arch.levels):
        holds = frozenset(k for k in Kind if arch.holds(i, k.value))
        split = arch.capacity_is_split(i)
        cap = None if split else arch.capacity_bytes(i)
        bus = None
        if i < n - 2 or (i == 0 and n == 2):
            b = arch.bus_of(i)
            if b is not None:
                bus = Bus(ITCN if i == 0 else f"{ITCN}_{spec.name}",
                          {k: b.access_pj * 1e-12 * arch.tensor_bits_of(k.value) / arch.word_bits for k in Kind},
                          float(b.width_bits))
        levels.append(Level(
            name=spec.name,
            holds=holds,
            capacity_bits=None if cap is None else cap * 8,
            split_bits={k: _onchip_bytes(arch, i, k.value) * 8 for k in holds} if split else {},
            read={k: arch.read_energy(i, k.value) for k in Kind},
            write={k: arch.write_energy(i, k.value) for k in Kind},
            array=spec.array,
            same_level_transfer=spec.same_level_transfer,
            bus=bus,
        ))
    bits = {k: arch.tensor_bits_of(k.value) for k in Kind}
    return Hardware(
        name=arch.name,
        levels=tuple(levels),
        bits=bits,
        word_bits=arch.word_bits,
        mac=arch.mac_energy,
        hop={k: arch.hop_energy * bits[k] / arch.word_bits for k in Kind},
        static=arch.static_energy,
        dram_bits_per_cycle=arch.dram_bandwidth * 8,
        channels=arch.dram_channel_nodes,
        buffer_sharing=arch.options.buffer_sharing,
        per_node_dram=arch.counting.dram_reads == "per_node",
        psums_through_dram=arch.counting.partial_sums == "through_dram",
        gbuf_pe_side=arch.counting.gbuf_side == "pe_side",
        regf_window=arch.counting.streams_rows,
    )


__all__ = ["Bus", "Hardware", "ITCN", "Level", "MAC", "NOC", "STATIC", "channel_distance", "hardware",
           "mean_cells_distance", "mean_channel_distance", "node_buffer_words", "node_level", "with_node_reserve"]
