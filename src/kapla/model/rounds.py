"""Rounds of atoms: the timing, energy and checks of an atomic schedule
(Atomic Dataflow, Zheng et al., Sec. IV-V).

An atomic schedule runs a network as *atoms*, sub-tensors of its layers,
each computed by one engine (a node of the chip, its PE array and buffer).
It runs in *rounds*: in a round each engine runs at most one atom, and the
round ends when its slowest engine is done. Before an atom computes, all it
reads has arrived (transfers block): a producer's output from the buffer of
the engine that made it, over the NoC (X-Y routed on the engine mesh: as
many hops as the Manhattan distance, one cycle per hop), or from DRAM if the
schedule wrote it back; its weights and the network's inputs from DRAM,
but an engine that ran an atom with the same block of weights
(``weight_block``) in the round before still holds them, and reads none.
An atom's output stays in its engine's buffer from its round on, until the
schedule writes it back to DRAM (``evict``, after a round) or its last
reader has run; an output no atom reads (the network's) is written back
after its round.

The model, all in cycles of the chip's clock:

- an engine's round: its atom's transfers in (the NoC hops and words of each
  on-chip producer, over links of ``link_words`` words a cycle; the round's
  DRAM reads, served one after another at the chip's DRAM bandwidth, so
  every engine waits for all of them), then its atom's compute cycles;
- a round: its slowest engine, then the write-backs after it at DRAM
  bandwidth;
- energy: each atom's own (computing on its engine: MACs, registers, array
  bus, buffer, as the evaluator costs it with its data on chip), the NoC
  (word-hops x hop energy), DRAM (words read and written x access energy),
  and the chip's static energy for the schedule's time.

:func:`check` is the model's own validity check, independent of how the
schedule was made: every atom runs once, after every atom it reads, on an
engine of the chip, at most one atom per engine per round, nothing read from
a buffer after it left it, and no buffer over capacity (what it keeps plus
what its running atom needs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

#: An atom's input: the atom it reads (None: the network's input, in DRAM) and how many words.
Input = tuple[str | None, int]


@dataclass(frozen=True)
class Atom:
    """A sub-tensor of one layer, computed by one engine."""

    name: str
    layer: str
    cycles: int  # computing on one engine, its data there
    energy_j: float  # its engine's energy for it (MACs, registers, array bus, buffer)
    macs: int
    out_words: int  # words of output it leaves in its engine's buffer
    weight_words: int = 0  # read from DRAM
    inputs: tuple[Input, ...] = ()
    work_words: int = 0  # buffer words it needs while it runs (its blocks of inputs, weights and output)
    weight_block: str | None = None  # atoms with the same block of weights (None: its own)

    @cached_property
    def reads(self) -> tuple[str, ...]:
        """The atoms it reads (it runs after each of them)."""
        return tuple(p for p, _ in self.inputs if p is not None)


@dataclass(frozen=True)
class Round:
    """Which atom each engine runs, and which kept outputs are written back after it."""

    runs: tuple[tuple[str, int], ...]  # (atom, engine index, row-major over the engine mesh)
    evict: tuple[str, ...] = ()


@dataclass(frozen=True)
class Chip:
    """What the model needs of the hardware: the engine mesh, buffer, links, DRAM and energies."""

    mesh: tuple[int, int]  # engines, rows x columns
    buffer_words: int  # each engine's buffer
    link_words: float  # words a NoC link moves per cycle
    dram_words: float  # words per cycle from/to DRAM, the whole chip
    dram_j: float  # per word read or written
    hop_j: float  # per word per hop
    static_j: float  # per cycle, the whole chip
    pes: int  # PEs per engine
    channels: tuple[tuple[int, int], ...] = ((0, 0),)  # engines next to the DRAM controllers

    @property
    def engines(self) -> int:
        return self.mesh[0] * self.mesh[1]

    def at(self, engine: int) -> tuple[int, int]:
        return divmod(engine, self.mesh[1])

    def hops(self, a: int, b: int) -> int:
        return self.hop_table[a][b]

    @cached_property
    def hop_table(self) -> tuple[tuple[int, ...], ...]:
        """Hops between every two engines (X-Y routed: the Manhattan distance), by engine index."""
        cols = self.mesh[1]
        return tuple(tuple(abs(a // cols - b // cols) + abs(a % cols - b % cols) for b in range(self.engines))
                     for a in range(self.engines))


@dataclass(frozen=True)
class RoundCost:
    cycles: int
    compute: int  # its slowest atom's compute alone
    noc_words: int
    noc_word_hops: int
    dram_read: int
    dram_written: int


@dataclass(frozen=True)
class Timeline:
    """An atomic schedule costed: per round, and in total."""

    rounds: tuple[RoundCost, ...]
    energy: Mapping[str, float]  # joules by component
    macs: int
    on_chip_reads: int  # input words served from engines' buffers
    input_reads: int  # all input words atoms read (on chip and from DRAM)
    pes: int  # PEs of the whole chip
    violations: tuple[str, ...] = field(default=())

    @property
    def cycles(self) -> int:
        return sum(r.cycles for r in self.rounds)

    @property
    def energy_j(self) -> float:
        return sum(self.energy.values())

    @property
    def valid(self) -> bool:
        return not self.violations

    @property
    def utilisation(self) -> float:
        """MACs over the PE-cycles of the rounds' compute alone (no memory delay)."""
        compute = sum(r.compute for r in self.rounds)
        return self.macs / (self.pes * compute) if compute else 0.0

    @property
    def noc_overhead(self) -> float:
        """The share of the time transfers (NoC and DRAM) block compute."""
        total = self.cycles
        return (total - sum(r.compute for r in self.rounds)) / total if total else 0.0

    @property
    def reuse_ratio(self) -> float:
        """The share of the words atoms read that came from an engine's buffer, not DRAM."""
        return self.on_chip_reads / self.input_reads if self.input_reads else 0.0


def check(atoms: Sequence[Atom], rounds: Sequence[Round], chip: Chip) -> tuple[str, ...]:
    """Every way the schedule breaks the rules of the module (empty: valid), one line each."""
    by_name = {a.name: a for a in atoms}
    problems: list[str] = []
    if len(by_name) != len(atoms):
        problems.append("two atoms share a name")
    ran: dict[str, int] = {}
    where: dict[str, int] = {}
    for r, rnd in enumerate(rounds):
        engines = [e for _, e in rnd.runs]
        if len(set(engines)) != len(engines):
            problems.append(f"round {r}: an engine runs two atoms")
        for name, engine in rnd.runs:
            if name not in by_name:
                problems.append(f"round {r}: unknown atom {name}")
                continue
            if not 0 <= engine < chip.engines:
                problems.append(f"round {r}: atom {name} on engine {engine}, the chip has {chip.engines}")
            if name in ran:
                problems.append(f"atom {name} runs twice (rounds {ran[name]} and {r})")
                continue
            for p in by_name[name].reads:
                if p not in by_name:
                    problems.append(f"atom {name} reads unknown atom {p}")
                elif ran.get(p, r) >= r:
                    problems.append(f"round {r}: atom {name} runs before {p}, which it reads")
            ran[name] = r
            where[name] = engine
        for name in rnd.evict:
            if ran.get(name, r + 1) > r:
                problems.append(f"round {r}: {name} written back before it ran")
    missing = [a.name for a in atoms if a.name not in ran]
    if missing:
        more = ", ..." if len(missing) > 3 else ""
        problems.append(f"{len(missing)} atoms never run ({', '.join(missing[:3])}{more})")
    if problems:
        return tuple(problems)
    for r, engine, used in _occupancy(by_name, rounds, ran, where):
        if used > chip.buffer_words:
            problems.append(f"round {r}: engine {engine}'s buffer holds {used} words, over its {chip.buffer_words}")
    return tuple(problems)


def _last_reads(atoms: Mapping[str, Atom], ran: Mapping[str, int]) -> dict[str, int]:
    last: dict[str, int] = {}
    for a in atoms.values():
        r = ran[a.name]
        for p in a.reads:
            if last.get(p, -1) < r:
                last[p] = r
    return last


def _kept_until(atoms: Mapping[str, Atom], rounds: Sequence[Round], ran: Mapping[str, int]) -> dict[str, int]:
    """The last round each output is in its engine's buffer: its last reader's round,
    or the round after which it is written back, whichever comes first (its own round
    if nothing reads it: it is written back after it)."""
    last = _last_reads(atoms, ran)
    until = {name: last.get(name, r) for name, r in ran.items()}
    for r, rnd in enumerate(rounds):
        for name in rnd.evict:
            until[name] = min(until[name], r)
    return until


def _occupancy(atoms: Mapping[str, Atom], rounds: Sequence[Round], ran: Mapping[str, int],
               where: Mapping[str, int]):
    """(round, engine, words in its buffer during the round) for every engine that holds anything."""
    until = _kept_until(atoms, rounds, ran)
    # an output is kept in the rounds after its own up to ``until``: added then, dropped after
    arrive: dict[int, list[str]] = {}
    leave: dict[int, list[str]] = {}
    for name, first in ran.items():
        if until[name] > first:
            arrive.setdefault(first + 1, []).append(name)
            leave.setdefault(until[name] + 1, []).append(name)
    kept: dict[int, int] = {}
    for r, rnd in enumerate(rounds):
        for name in leave.get(r, []):
            kept[where[name]] -= atoms[name].out_words
        for name in arrive.get(r, []):
            kept[where[name]] = kept.get(where[name], 0) + atoms[name].out_words
        held = {e: w for e, w in kept.items() if w}
        for name, engine in rnd.runs:
            held[engine] = held.get(engine, 0) + max(atoms[name].work_words, atoms[name].out_words)
        for engine, used in sorted(held.items()):
            yield r, engine, used


def evaluate(atoms: Sequence[Atom], rounds: Sequence[Round], chip: Chip) -> Timeline:
    """The schedule's rounds, energy and reuse under the model (see the module);
    ``violations`` says what :func:`check` finds (then the figures mean nothing)."""
    problems = check(atoms, rounds, chip)
    by_name = {a.name: a for a in atoms}
    if problems:
        return Timeline((), {}, 0, 0, 0, chip.pes * chip.engines, problems)
    ran = {name: r for r, rnd in enumerate(rounds) for name, _ in rnd.runs}
    where = {name: e for rnd in rounds for name, e in rnd.runs}
    last = _last_reads(by_name, ran)
    written: set[str] = set()
    holds: dict[int, tuple[str | None, int]] = {}  # the block of weights each engine ran with, and when
    costs = []
    table = chip.hop_table
    on_chip = reads = 0
    energy = {"engines": 0.0, "NoC": 0.0, "DRAM": 0.0, "static": 0.0}
    for r, rnd in enumerate(rounds):
        dram_read = noc_words = word_hops = 0
        noc_cycles: dict[int, int] = {}
        for name, engine in rnd.runs:
            atom = by_name[name]
            energy["engines"] += atom.energy_j
            if atom.weight_block is None or holds.get(engine) != (atom.weight_block, r - 1):
                dram_read += atom.weight_words
            holds[engine] = (atom.weight_block, r)
            cycles = 0
            for producer, words in atom.inputs:
                reads += words
                if producer is None or producer in written:
                    dram_read += words
                    continue
                on_chip += words
                hops = table[where[producer]][engine]
                if hops:
                    noc_words += words
                    word_hops += words * hops
                    cycles += hops + math.ceil(words / chip.link_words)
            noc_cycles[engine] = cycles
        dram_cycles = math.ceil(dram_read / chip.dram_words) if dram_read else 0
        compute = max(by_name[name].cycles for name, _ in rnd.runs) if rnd.runs else 0
        busy = max((max(noc_cycles[e], dram_cycles) + by_name[name].cycles for name, e in rnd.runs), default=0)
        # after the round: outputs written back (evicted, or read by nobody: the network's)
        out = [name for name in rnd.evict if name not in written]
        out += [name for name, _ in rnd.runs if name not in last and name not in out]
        dram_written = sum(by_name[name].out_words for name in out)
        written.update(out)
        cycles = busy + (math.ceil(dram_written / chip.dram_words) if dram_written else 0)
        costs.append(RoundCost(cycles, compute, noc_words, word_hops, dram_read, dram_written))
        energy["NoC"] += word_hops * chip.hop_j
        energy["DRAM"] += (dram_read + dram_written) * chip.dram_j
    total = sum(c.cycles for c in costs)
    energy["static"] = total * chip.static_j
    return Timeline(tuple(costs), energy, sum(a.macs for a in atoms), on_chip, reads, chip.pes * chip.engines)


__all__ = ["Atom", "Chip", "Input", "Round", "RoundCost", "Timeline", "check", "evaluate"]
