"""Atomic Dataflow (Zheng et al.): the network scheduled as atoms, sub-tensors
of its layers sized to one engine, run in rounds on the engines of a
multi-engine chip, placed along the mesh's snake order, with the buffers'
write-backs chosen by furthest next use."""

from __future__ import annotations

from typing import Any

from kapla.search.network.atomic.scheduler import AtomicScheduler


def register(registry: Any) -> None:
    registry.network_scheduler("atomic", "Atomic Dataflow: layers cut into atoms sized by simulated annealing, "
                               "rounds by a pruned DP over the atoms' DAG, snake mapping, furthest-next-use "
                               "write-backs; inference of CNNs", AtomicScheduler)
    registry.solver("atomic", "Atomic Dataflow's graph-level scheduler of atoms (KAPLA's layer solver for each "
                    "atom on one engine)", "atomic", "kapla")


__all__ = ["AtomicScheduler", "register"]
