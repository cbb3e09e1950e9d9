"""Workloads: layers, networks, the model zoo, training expansion and importers."""

from kapla.workload.layer import LOOP_DIMS, FmapShape, Layer, Merge, Op, Phase, Port
from kapla.workload.load import load_network
from kapla.workload.network import Edge, Network, NetworkBuilder
from kapla.workload.zoo import get_network

__all__ = ["LOOP_DIMS", "Edge", "FmapShape", "Layer", "Merge", "Network", "NetworkBuilder", "Op", "Phase", "Port",
           "get_network", "load_network"]
