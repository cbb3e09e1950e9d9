"""Workloads: layers, networks, the model zoo, training expansion and importers."""

from kapla.workload.layer import LOOP_DIMS, FmapShape, Layer, Merge, Op, Phase, Port
from kapla.workload.network import Edge, Network, NetworkBuilder

__all__ = ["LOOP_DIMS", "Edge", "FmapShape", "Layer", "Merge", "Network", "NetworkBuilder", "Op", "Phase", "Port"]
