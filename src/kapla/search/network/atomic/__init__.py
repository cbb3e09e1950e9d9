"""Atomic Dataflow (Zheng et al.): the network scheduled as atoms, sub-tensors
of its layers sized to one engine, run in rounds on the engines of a
multi-engine chip, placed along the mesh's snake order, with the buffers'
write-backs chosen by furthest next use."""

from __future__ import annotations

from typing import Any

from kapla.search.network.atomic.scheduler import (
    AtomicScheduler,
    CnnPartitionScheduler,
    IlPipeScheduler,
    LayerSequentialScheduler,
)


def register(registry: Any) -> None:
    registry.network_scheduler("atomic", "Atomic Dataflow: layers cut into atoms sized by simulated annealing, "
                               "rounds by a pruned DP over the atoms' DAG, snake mapping, furthest-next-use "
                               "write-backs; inference of CNNs", AtomicScheduler)
    registry.network_scheduler("layer-sequential", "Atomic Dataflow's layer-sequential baseline on its round "
                               "model: each layer cut evenly over the engines, one layer at a time",
                               LayerSequentialScheduler)
    registry.network_scheduler("cnn-partition", "Atomic Dataflow's CNN-Partition baseline on its round model: the "
                               "engines in blocks, each bound to a run of layers, samples pipelined through DRAM",
                               CnnPartitionScheduler)
    registry.network_scheduler("il-pipe", "Atomic Dataflow's IL-Pipe baseline on its round model: TANGRAM-style "
                               "inter-layer pipelining, segments of consecutive layers on blocks of engines sized by "
                               "their work, row pieces forwarded on chip", IlPipeScheduler)
    registry.solver("atomic", "Atomic Dataflow's graph-level scheduler of atoms (KAPLA's layer solver for each "
                    "atom on one engine)", "atomic", "kapla")
    registry.solver("layer-sequential", "Atomic Dataflow's layer-sequential baseline, on the same round model as "
                    "--solver atomic", "layer-sequential", "kapla")
    registry.solver("cnn-partition", "Atomic Dataflow's CNN-Partition baseline, on the same round model as "
                    "--solver atomic (option clusters; by default the best of 1, 2 and 4)", "cnn-partition", "kapla")
    registry.solver("il-pipe", "Atomic Dataflow's IL-Pipe baseline (TANGRAM-style pipelining with fine-grained "
                    "forwarding), on the same round model as --solver atomic (options depth: layers per segment, by "
                    "default the best of 2, 3 and 4; pieces: row pieces per sample)", "il-pipe", "kapla")


__all__ = ["AtomicScheduler", "CnnPartitionScheduler", "IlPipeScheduler", "LayerSequentialScheduler", "register"]
