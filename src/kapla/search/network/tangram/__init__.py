"""TANGRAM's multi-node dataflow space scheduled by segment DP, with its chain
policies: KAPLA's pruned search (Sec. IV-B), every scheme, a random sample."""

from __future__ import annotations

from typing import Any

from kapla.search.network.tangram.scheduler import TangramScheduler, every_scheme, kapla_dp, random_schemes


def register(registry: Any) -> None:
    registry.network_scheduler("kapla", "KAPLA's inter-layer search (Sec. IV-B) on TANGRAM's space: validity and "
                               "Pareto pruning, a top-k DP over segment chains on calibrated estimates, the chains "
                               "solved", kapla_dp)
    registry.network_scheduler("exhaustive", "every valid inter-layer scheme of every segment of TANGRAM's space "
                               "solved, then the DP on true costs (the optimum of the space)", every_scheme)
    registry.network_scheduler("random", "every segment slicing, each inter-layer scheme of a multi-layer segment "
                               "solved with probability p (seeded), then the DP on true costs", random_schemes)


__all__ = ["TangramScheduler", "register"]
