"""The estimates of grouped segments corrected by the grouped segments solved so far.

A segment whose batch runs in ``g`` groups gives each layer a ``1/g`` piece
of the batch: its blocks shrink, and its buffers and buses move more data
per MAC. The inter-layer estimate (:func:`kapla.space.network.inter.estimate`)
counts compulsory traffic only and does not see that; each layer's
calibration is made alone, on the whole batch. So the estimates of grouped
segments are too low, by a factor that depends on the network and the number
of groups (on ``multinode``, the medians this learns by energy: 1.07-1.11 for
Inception-v3's and GoogLeNet's training DAGs at 4 and 16 groups, 1.17-1.20
for ResNet-50's inference). KAPLA's DP then keeps picking grouped
segments whose estimates beat solved chains, solving them round after round
only to drop them.

:class:`GroupsCalibration` learns, per number of groups, the median ratio of
the solved cost to the estimate, energy and time apart, over the grouped
segments the search solved, and scales by it the estimates of those not yet
solved (always from their first estimate: the scalings never compound). A
search that solves no grouped segment (a batch of one; a chip of one node)
is left exactly as it was.
"""

from __future__ import annotations

from collections.abc import Iterable
from statistics import median

from kapla.space.network.inter import InterScheme

#: A segment's (energy in J, time in cycles), estimated or solved.
Cost = tuple[float, float]


class GroupsCalibration:
    """Per number of batch groups, how far solved grouped segments came from their estimates."""

    def __init__(self) -> None:
        #: per number of groups: the solved-to-estimated ratios of energy and of time
        self._ratios: dict[int, tuple[list[float], list[float]]] = {}
        #: the first estimate of each grouped scheme scaled (its scalings are made from it)
        self._first: dict[InterScheme, Cost] = {}

    def estimate_of(self, inter: InterScheme, cost: Cost) -> Cost:
        """The estimate ``inter`` had before any scaling (``cost``: the one it has now)."""
        return self._first.get(inter, cost)

    def learn(self, inter: InterScheme, estimate: Cost, solved: Iterable[Cost]) -> None:
        """Record how ``inter``'s best solved energy and time (``solved``: one per
        variant; none if invalid) compare with its first ``estimate``."""
        costs = list(solved)
        if inter.groups <= 1 or not costs or estimate[0] <= 0 or estimate[1] <= 0:
            return
        energy, time = self._ratios.setdefault(inter.groups, ([], []))
        energy.append(min(c[0] for c in costs) / estimate[0])
        time.append(min(c[1] for c in costs) / estimate[1])

    def factors(self) -> dict[int, Cost]:
        """Per number of groups seen solved: the median ratios (energy, time)."""
        return {groups: (median(energy), median(time)) for groups, (energy, time) in self._ratios.items()}

    def scaled(self, inter: InterScheme, cost: Cost, factors: dict[int, Cost]) -> Cost:
        """``inter``'s first estimate times its number of groups' ``factors`` (``cost`` if none)."""
        factor = factors.get(inter.groups)
        if factor is None:
            return cost
        first = self._first.setdefault(inter, cost)
        return (first[0] * factor[0], first[1] * factor[1])


__all__ = ["GroupsCalibration"]
