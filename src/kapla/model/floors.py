"""Times no schedule of a network can beat on a hardware spec.

* the **compute floor**: every operation (MACs, and the element-wise work of
  pooling and vector layers, :attr:`Layer.ops`) takes one PE one cycle, so
  a network needs at least its operations over the chip's PEs;
* the **memory floor**: the weights, every network input (a decoder's KV
  cache among them) and the network's outputs cross the DRAM interface at
  least once, at its bandwidth.

A transformer's prefill is bound by the first, its decode by the second;
``benchmarks/transformers.py`` prints how close schedules come.
"""

from __future__ import annotations

from kapla.arch.spec import ArchSpec
from kapla.workload.network import Network


def compute_floor(net: Network, arch: ArchSpec) -> float:
    """Cycles of the network's operations spread over every PE of ``arch``."""
    return net.batch * sum(layer.ops for layer in net) / arch.num_pes


def memory_floor(net: Network, arch: ArchSpec, weights: bool = True) -> float:
    """Cycles to move the weights, the inputs and the outputs over ``arch``'s DRAM bandwidth once
    (``weights=False``: all but the weights, for a schedule that pins them on chip, loaded before)."""
    outputs = sum(layer.out_shape.elems for layer in net if layer.out_shape is not None
                  and not net.consumers(layer.name))
    words = weights * sum(layer.weight_elems for layer in net) + net.batch * (
        sum(shape.elems for shape in net.inputs.values()) + outputs)
    return words * arch.word_bytes / arch.dram_bandwidth


__all__ = ["compute_floor", "memory_floor"]
