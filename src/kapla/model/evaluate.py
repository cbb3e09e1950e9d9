"""The evaluator: energy, time and validity of a layer scheme on hardware.

Cost conventions (DESIGN.md, as the nn_dataflow simulator):

* energy = MAC energy x ops + sum over levels of accesses x access energy
  + array-bus (ITCN) words x bus energy + NoC word-hops x hop energy
  + static energy per cycle x time;
* the innermost level (REGF) is accessed by the datapath: per loop iteration
  one read of every input operand, and a read and a write of the output;
* an outer buffer is accessed when it serves its children (reads, multicast
  once; reduced partial-sum writes) and when it is filled from, or written
  back to, its own parent; buffer sharing adds a read and a write per rotated
  word;
* the array bus carries every word delivered to or collected from a PE; where
  PEs pass data to their neighbours (systolic arrays), it carries only what
  enters or leaves the array, and each neighbour hop is a register write;
* NoC hops: DRAM traffic travels between each node and its nearest DRAM
  channel, partial sums are combined and shared blocks rotated between
  neighbour nodes (one hop);
* time is the largest of the compute steps, the array-bus time (each data
  type has its own bus, multicasting one transfer to many PEs) and the DRAM
  bandwidth time.

An invalid scheme gets its reasons and no numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.tensors import Kind, footprint
from kapla.dataflow.traffic import BoundaryTraffic, scheme_traffic
from kapla.model.validity import Validity, check_scheme

ITCN = "ITCN"
NOC = "NoC"
MAC = "MAC"
STATIC = "static"


@dataclass(frozen=True)
class Feed:
    """Where a layer's data come from and go to, when it runs inside a segment.

    ``ifm_hops``: the input fmap is forwarded on chip from a producer this
    many hops away (None: it comes from DRAM); ``to_dram``: the output is
    written to DRAM (else it stays on chip for its consumers); ``pinned``:
    the weights were loaded once and stay on chip; ``dram_hops``: mean hops
    between the layer's nodes and their DRAM channels (None: computed as if
    the layer's block of nodes sat at the chip's origin).
    """

    ifm_hops: float | None = None
    to_dram: bool = True
    pinned: bool = False
    dram_hops: float | None = None


FROM_DRAM = Feed()


class CostTotals:
    """What layer and segment costs share: a verdict and energy by component."""

    validity: Validity
    energy: Mapping[str, float]

    @property
    def valid(self) -> bool:
        return self.validity.ok

    @property
    def total_energy(self) -> float:
        return sum(self.energy.values())


@dataclass(frozen=True)
class LayerCost(CostTotals):
    """What one layer scheme costs: accesses, hops, energy by component and time."""

    layer: str
    validity: Validity
    ops: int = 0
    accesses: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # level -> tensor -> words
    noc_hops: float = 0.0
    energy: Mapping[str, float] = field(default_factory=dict)  # component -> joules
    time: float = 0.0  # cycles
    time_parts: Mapping[str, float] = field(default_factory=dict)

    def level_accesses(self, level: str) -> float:
        return sum(self.accesses.get(level, {}).values())

    def objective(self, name: str = "energy") -> float:
        """The value a solver minimises: energy (J), latency (cycles) or EDP."""
        if not self.valid:
            return math.inf
        if name == "energy":
            return self.total_energy
        if name == "latency":
            return self.time
        if name == "edp":
            return self.total_energy * self.time
        raise ValueError(f"unknown objective {name!r}; use energy, latency or edp")


def _channel_distance(arch: ArchSpec, grid: tuple[int, int]) -> float:
    """Mean hops from the nodes of a rows x cols block (at the origin) to their nearest channel."""
    return mean_channel_distance(arch.dram_channel_nodes, (0, 0), grid)


@lru_cache(maxsize=1024)
def mean_channel_distance(channels: tuple[tuple[int, int], ...], origin: tuple[int, int],
                          grid: tuple[int, int]) -> float:
    """Mean Manhattan hops from the nodes of a rows x cols block at ``origin`` to their nearest channel."""
    (r0, c0), (rows, cols) = origin, grid
    channels = tuple((cr - r0, cc - c0) for cr, cc in channels)
    total = 0
    for r in range(rows):
        for c in range(cols):
            total += min(abs(r - cr) + abs(c - cc) for cr, cc in channels)
    return total / (rows * cols)


def _node_grid(scheme: LayerScheme) -> tuple[int, int]:
    return scheme.levels[-1].grid if scheme.levels else (1, 1)


def evaluate(scheme: LayerScheme, arch: ArchSpec, feed: Feed = FROM_DRAM, check: bool = True) -> LayerCost:
    """Cost of ``scheme`` on ``arch``.

    To evaluate a layer on a block of nodes, pass ``arch.with_node_region(...)``:
    the block then behaves as a smaller chip (its static energy too). ``feed``
    says which data move on chip instead of through DRAM (see :class:`Feed`).
    """
    validity = check_scheme(scheme, arch) if check else Validity()
    if validity.ok and feed is not FROM_DRAM:
        validity = _check_feed(scheme, feed)
    if not validity.ok:
        return LayerCost(scheme.layer.name, validity)
    names = [level.name for level in arch.levels]
    traffic = scheme_traffic(scheme)
    accesses: dict[str, dict[str, float]] = {name: {} for name in names}
    accesses[ITCN] = {}

    def add(level: str, tensor: str, words: float) -> None:
        if words:
            accesses[level][tensor] = accesses[level].get(tensor, 0.0) + words

    layer = scheme.layer
    ops = layer.loop_ops * scheme.batch
    for role in scheme.roles:
        add(names[0], role.name, ops * role.copies * (2 if role.written else 1))

    bus_words: dict[str, float] = {}
    systolic = arch.levels[0].same_level_transfer
    hops = 0.0
    top = len(scheme.levels) - 1
    for bt in traffic:
        child, parent = names[bt.child], names[bt.child + 1]
        bypassed = scheme.levels[bt.child].bypass
        for t in bt.tensors:
            parent_side = t.parent_reads + t.parent_writes
            if bt.child == top and parent == names[-1]:
                # Data kept on chip in a segment: read from (or left in) node
                # buffers instead of DRAM; pinned weights are not read at all.
                onchip = ((t.kind == Kind.IFM and not t.written and feed.ifm_hops is not None)
                          or (t.written and not feed.to_dram))
                if t.kind == Kind.WGT and not t.written and feed.pinned:
                    continue
                if onchip:
                    add(child, t.tensor, parent_side)
                    if not t.written:
                        hops += parent_side * feed.ifm_hops
                    continue
            add(parent, t.tensor, parent_side)
            if bt.child == 0:
                delivered = t.fills + t.writebacks
                if systolic:
                    # Words enter and leave at the array's edges; the rest hop
                    # between neighbour PEs, one register write each.
                    add(ITCN, t.tensor, parent_side)
                    add(names[0], t.tensor, max(delivered - parent_side, 0.0))
                else:
                    add(ITCN, t.tensor, delivered)
                bus_words[t.tensor] = bus_words.get(t.tensor, 0.0) + parent_side
            elif t.kind not in bypassed:
                add(child, t.tensor, t.fills + t.writebacks + 2 * t.rotated + 2 * t.reduced)
        if bt.child == top and len(arch.levels) >= 3:
            distance = feed.dram_hops if feed.dram_hops is not None else _channel_distance(arch, _node_grid(scheme))
            hops += _noc_hops(bt, distance, feed)

    energy = {MAC: ops * arch.mac_energy}
    for level in arch.levels:
        energy[level.name] = sum(accesses[level.name].values()) * level.access_energy
    energy[ITCN] = sum(accesses[ITCN].values()) * arch.bus_energy
    energy[NOC] = hops * arch.hop_energy

    nodes = scheme.levels[-1].parallelism if len(arch.levels) >= 3 else 1
    compute = scheme.trips
    bus = max(bus_words.values(), default=0.0) / nodes / arch.bus_width_words
    dram = sum(accesses[names[-1]].values()) / arch.dram_bandwidth_words
    time = max(compute, bus, dram)
    energy[STATIC] = time * arch.static_energy
    return LayerCost(layer.name, validity, ops, accesses, hops, energy, time,
                     {"compute": compute, "bus": bus, "dram": dram})


def _noc_hops(bt: BoundaryTraffic, distance: float, feed: Feed) -> float:
    """Word-hops of the node level's traffic with DRAM and between neighbour nodes."""
    hops = 0.0
    for t in bt.tensors:
        hops += t.rotated + t.reduced
        if t.kind == Kind.WGT and not t.written and feed.pinned:
            continue
        if (t.kind == Kind.IFM and not t.written and feed.ifm_hops is not None) or (t.written and not feed.to_dram):
            continue  # on-chip forwarding is charged where the data are read
        if t.written:
            # partial sums travel after their reduction between neighbour nodes
            hops += (t.parent_reads + t.parent_writes) * distance
        else:
            # every node receives its own blocks (multicast trees are not modelled,
            # so shared data costs its distance once per receiving node)
            hops += t.fills * distance
    return hops


def _check_feed(scheme: LayerScheme, feed: Feed) -> Validity:
    """Data that never reach DRAM must be fetched once: a forwarded input cannot
    be re-read, an output kept on chip cannot spill partial sums, and pinned
    weights cannot be reloaded."""
    reasons = []
    top = scheme_traffic(scheme)[-1]
    full = scheme.tile(len(scheme.levels))
    for t in top.tensors:
        once = footprint(t.kind, full, scheme.layer) * t.copies
        if t.kind == Kind.IFM and not t.written and feed.ifm_hops is not None and t.parent_reads > once * 1.000001:
            reasons.append(f"{scheme.layer.name}: the forwarded input is read {t.parent_reads / once:.3g} times; "
                           "on-chip data can be read only once")
        if t.written and not feed.to_dram and t.parent_reads > 0:
            reasons.append(f"{scheme.layer.name}: partial sums of an output kept on chip would spill to DRAM")
        if t.kind == Kind.WGT and not t.written and feed.pinned and t.parent_reads > once * 1.000001:
            reasons.append(f"{scheme.layer.name}: pinned weights would be reloaded")
    return Validity(tuple(reasons))