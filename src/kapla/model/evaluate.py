"""The evaluator: energy, time and validity of one layer scheme on hardware.

:func:`evaluate` runs the cost model of :mod:`kapla.model.cost` (the same code
the solvers run on thousands of candidates at once) on one scheme, after the
independent validity check of :mod:`kapla.model.validity`, and reports
accesses per level and tensor, NoC word-hops, energy per component and time.
An invalid scheme gets its reasons and no numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.model.cost import evaluate_nests
from kapla.model.feed import FROM_DRAM, Feed
from kapla.model.hardware import ITCN, MAC, NOC, STATIC, mean_channel_distance
from kapla.model.nests import from_schemes
from kapla.model.objective import objective_of
from kapla.model.validity import Validity, check_scheme, level_mismatch


class CostTotals:
    """What layer and segment costs share: a verdict and energy by component."""

    validity: Validity
    energy: Mapping[str, float]
    time: float

    @property
    def valid(self) -> bool:
        return self.validity.ok

    @property
    def total_energy(self) -> float:
        return sum(self.energy.values())

    def objective(self, name: str = "energy") -> float:
        """The value a solver minimises: energy (J), latency (cycles) or EDP (inf if invalid)."""
        obj = objective_of(name)
        if not self.valid:
            return math.inf
        return float(obj.of(self.total_energy, self.time))


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


def evaluate(scheme: LayerScheme, arch: ArchSpec, feed: Feed = FROM_DRAM, check: bool = True,
             feed_rule: bool = True) -> LayerCost:
    """Cost of ``scheme`` on ``arch``.

    To evaluate a layer on a block of nodes, pass ``arch.with_node_region(...)``:
    the block then behaves as a smaller chip (its static energy too). ``feed``
    says which data move on chip instead of through DRAM (see :class:`Feed`).
    ``check=False`` skips the validity check and ``feed_rule=False`` the rule
    that on-chip data are fetched once (to cost another tool's scheme).
    """
    mismatch = level_mismatch(scheme, arch)
    if mismatch:
        return LayerCost(scheme.layer.name, Validity((mismatch,)))
    nests = from_schemes([scheme])
    validity = check_scheme(scheme, arch, nests) if check else Validity()
    # the structural rules are check_scheme's (or not asked for): not checked twice
    costs = evaluate_nests(nests, arch, None if feed == FROM_DRAM else feed, rules=False)
    if validity.ok and feed_rule:
        validity = Validity(tuple(f"{scheme.layer.name}: {v.describe(0)}" for v in costs.feed_violations if v.mask[0]))
    if not validity.ok:
        return LayerCost(scheme.layer.name, validity)
    hw, tr = costs.hw, costs.traffic
    accesses: dict[str, dict[str, float]] = {lvl.name: {} for lvl in hw.levels}
    for lvl in hw.levels[:-1]:
        if lvl.bus is not None:
            accesses[lvl.bus.name] = {}

    def add(where: str, tensor: str, words: float) -> None:
        if words:
            accesses[where][tensor] = accesses[where].get(tensor, 0.0) + float(words)

    for r, role in enumerate(nests.roles):
        for i, lvl in enumerate(hw.levels):
            add(lvl.name, role.name, tr.reads[i, r, 0] + tr.writes[i, r, 0])
        for j, lvl in enumerate(hw.levels[:-1]):
            if lvl.bus is not None:
                add(lvl.bus.name, role.name, tr.bus[j, r, 0])
    energy = {name: float(e[0]) for name, e in costs.energy.items()}
    return LayerCost(scheme.layer.name, validity, nests.ops, accesses, float(tr.hops[:, 0].sum()), energy,
                     float(costs.time[0]), {"compute": float(costs.compute[0]), "bus": float(costs.bus_time[0]),
                                            "dram": float(costs.dram_time[0])})


__all__ = ["CostTotals", "FROM_DRAM", "Feed", "ITCN", "LayerCost", "MAC", "NOC", "STATIC", "evaluate",
           "mean_channel_distance"]
