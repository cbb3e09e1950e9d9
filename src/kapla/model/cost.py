"""Energy, time and validity of many loop nests at once: the cost model.

Cost conventions (those of the nn_dataflow simulator; docs/cost-model.md):

* energy = MAC energy x operations + per level, reads and writes of each
  tensor x that level's energy per word of it + bus words x bus energy +
  NoC word-hops x hop energy + static energy per cycle x time;
* time is the largest of the compute steps (loop trips times the layer's
  operations per iteration: 1 but for vector work, ``Layer.ops_per_point``), each bus's time (each tensor has
  its own bus lane, multicasting one transfer to many units) and the DRAM
  bandwidth time.

Words are counted by :mod:`kapla.model.traffic`; the rules that make a nest
valid are in :mod:`kapla.model.rules` and :mod:`kapla.model.feed`. An
invalid nest still gets numbers (what its traffic would cost) but its
objective is infinite. :func:`kapla.model.evaluate.evaluate` is this, for
one scheme.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from kapla.arch.spec import ArchSpec
from kapla.dataflow.tensors import footprints
from kapla.model.feed import Feed, feed_violations
from kapla.model.hardware import MAC, NOC, STATIC, Hardware, hardware
from kapla.model.nests import Nests
from kapla.model.objective import Objective, objective_of
from kapla.model.rules import Violation, arrays, capacity_violations, coverage_violations, sharing
from kapla.model.traffic import Traffic, traffic


@dataclass(frozen=True, eq=False)
class Costs:
    """What ``M`` nests cost: energy by component (J), time (cycles) and validity."""

    nests: Nests
    hw: Hardware
    traffic: Traffic
    energy: Mapping[str, np.ndarray]
    total: np.ndarray
    time: np.ndarray
    compute: np.ndarray
    bus_time: np.ndarray
    dram_time: np.ndarray
    violations: tuple[Violation, ...]  # the structural rules (coverage, capacity, arrays, sharing)
    feed_violations: tuple[Violation, ...] = ()  # data a segment keeps on chip fetched more than once

    def __len__(self) -> int:
        return len(self.nests)

    @property
    def valid(self) -> np.ndarray:
        ok = np.ones(len(self), dtype=bool)
        for v in self.violations + self.feed_violations:
            ok &= ~v.mask
        return ok

    def value(self, objective: Objective | str) -> np.ndarray:
        """``(M,)`` the objective, infinite for invalid nests."""
        return np.where(self.valid, objective_of(objective).of(self.total, self.time), np.inf)

    def best(self, objective: Objective | str) -> int:
        """The nest with the least objective, ties going to the lower energy, then the first."""
        return objective_of(objective).argbest(self.value(objective), self.total)

    def level_words(self, level: int) -> np.ndarray:
        """``(M,)`` words read and written at ``level`` (``hw.onchip``: DRAM)."""
        return self.traffic.reads[level].sum(axis=0) + self.traffic.writes[level].sum(axis=0)


def evaluate_nests(nests: Nests, arch: ArchSpec | Hardware, feed: Feed | None = None, rules: bool = True) -> Costs:
    """Costs of every nest of ``nests`` on ``arch`` (a block of nodes of it:
    ``arch.with_node_region(...)``), under ``feed`` (None: all through DRAM).

    ``rules=False`` skips the structural rules (coverage, capacity, arrays,
    sharing) for a caller that checks them its own, cheaper way; the feed's
    rule is always applied."""
    hw = arch if isinstance(arch, Hardware) else hardware(arch)
    if feed is not None and not feed.on_chip and feed.dram_hops is None:
        feed = None
    tr = traffic(nests, hw, feed)
    roles = nests.roles
    kinds = [r.kind for r in roles]
    n = hw.onchip
    M = len(nests)
    energy: dict[str, np.ndarray] = {MAC: np.full(M, nests.ops * hw.mac)}
    for i, lvl in enumerate(hw.levels):
        e = np.zeros(M)
        for r, kind in enumerate(kinds):
            e = e + tr.reads[i, r] * lvl.read[kind] + tr.writes[i, r] * lvl.write[kind]
        energy[lvl.name] = e
    bus_time = np.zeros(M)
    for j, lvl in enumerate(hw.levels[:-1]):
        if lvl.bus is None:
            continue
        energy[lvl.bus.name] = sum((tr.bus[j, r] * lvl.bus.energy[kind] for r, kind in enumerate(kinds)),
                                   np.zeros(M))
        if lvl.bus.width_bits:
            busiest = np.max(np.stack([tr.bus_side[j, r] * hw.bits[kind] for r, kind in enumerate(kinds)]), axis=0)
            parents = nests.units(j + 1)[nests.rows]
            bus_time = np.maximum(bus_time, busiest / parents / lvl.bus.width_bits)
    if hw.node is not None:
        energy[NOC] = sum((tr.hops[r] * hw.hop[kind] for r, kind in enumerate(kinds)), np.zeros(M))
    # A vector layer does several operations per loop iteration, one per PE per cycle.
    compute = nests.trips[nests.rows].astype(float) * nests.layer.ops_per_point
    dram_bits = sum(((tr.reads[n, r] + tr.writes[n, r]) * hw.bits[kind] for r, kind in enumerate(kinds)),
                    np.zeros(M))
    dram_time = dram_bits / hw.dram_bits_per_cycle
    time = np.maximum(np.maximum(compute, bus_time), dram_time)
    energy[STATIC] = time * hw.static
    total = sum(energy.values(), np.zeros(M))
    whole = footprints(nests.full, nests.layer, tuple(dict.fromkeys(kinds)))
    once = np.array([whole[r.kind] * r.copies for r in roles], dtype=float)
    violations = (coverage_violations(nests) + capacity_violations(nests, hw) + arrays(nests, hw)
                  + sharing(nests, hw)) if rules else []
    fed = feed_violations(roles, tr.top_reads, once, feed)
    return Costs(nests, hw, tr, energy, total, time, compute, bus_time, dram_time,
                 tuple(v for v in violations if v.mask.any()), tuple(v for v in fed if v.mask.any()))


__all__ = ["Costs", "evaluate_nests"]
