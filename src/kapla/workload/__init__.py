"""Workloads: layers, networks, the model zoo, training expansion and importers.

The names below are loaded when first used, so that importing one small
module of the package (a layer) does not load the graph library behind
networks: the command line starts in a fraction of a second.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kapla.lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover
    from kapla.workload.layer import LOOP_DIMS, VECTOR_MODES, FmapShape, Layer, Merge, Op, Operand, Phase, Port
    from kapla.workload.load import load_network
    from kapla.workload.network import Edge, Network, NetworkBuilder
    from kapla.workload.zoo import get_network

_WHERE = {
    **dict.fromkeys(("LOOP_DIMS", "VECTOR_MODES", "FmapShape", "Layer", "Merge", "Op", "Operand", "Phase", "Port"),
                   "layer"),
    "load_network": "load",
    **dict.fromkeys(("Edge", "Network", "NetworkBuilder"), "network"),
    "get_network": "zoo",
}

__all__ = ["LOOP_DIMS", "VECTOR_MODES", "Edge", "FmapShape", "Layer", "Merge", "Network", "NetworkBuilder", "Op",
           "Operand", "Phase", "Port", "get_network", "load_network"]


__getattr__ = lazy_exports(__name__, _WHERE)
