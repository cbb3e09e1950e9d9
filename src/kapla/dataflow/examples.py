"""Small hand-written schemes: documentation, tests and benchmarks share them.

* :func:`kapla_example`: KAPLA's listing example, a 5x5 CONV and a 3x3
  depthwise CONV on multi-node regions (hybrid K/N and G/N/X node
  parallelization, buffer sharing of the CONV input, matched top-level loops).
* :func:`row_stationary_example` / :func:`systolic_example`: a small CONV on
  one Eyeriss node and on the edge node, whose costs are derived by hand in
  ``tests/model/test_evaluate_by_hand.py``.
"""

from __future__ import annotations

from kapla.dataflow.directives import LayerScheme, LevelScheme, Loop, Stack
from kapla.dataflow.tensors import Kind
from kapla.workload.layer import Layer, Op
from kapla.workload.network import Network, NetworkBuilder

# C=4 -> K=8 channels, 8x8 output, 3x3 filter with padding 1 (a 10x10 padded input).
SMALL_CONV = Layer("conv", Op.CONV, c=4, k=8, h=8, w=8, s=3, r=3, pad=(1, 1, 1, 1))


def row_stationary_example() -> LayerScheme:
    """Row stationary on one Eyeriss node (12x14 PEs), batch 2.

    Each PE holds one filter row (unit R=3); output rows Y go across 8 PE
    columns and filter rows S down 3 PE rows (24 PEs). In the PE, loops run
    K x8, C x4 and, innermost, X x8 (the output row, sliding the input window).
    The node itself loops over the batch N x2.
    """
    return LayerScheme(SMALL_CONV, 2, (("R", 3),), (
        LevelScheme("REGF", (Stack("Y", 1, 8), Stack("S", 3, 1)), (Loop("K", 8), Loop("C", 4), Loop("X", 8))),
        LevelScheme("GBUF", (), (Loop("N", 2),)),
    ))


def systolic_example() -> LayerScheme:
    """Weight-stationary systolic on the edge node (16x16 PEs), batch 2.

    Input channels C=4 go down 4 PE rows and output channels K=8 across 8
    columns; each PE keeps its 3x3 filter (unit S=3, R=3). Loops N x2, Y x8,
    X x8 (X innermost) stream the inputs past the stationary weights.
    """
    return LayerScheme(SMALL_CONV, 2, (("S", 3), ("R", 3)), (
        LevelScheme("REGF", (Stack("C", 4, 1), Stack("K", 1, 8)), (Loop("N", 2), Loop("Y", 8), Loop("X", 8))),
        LevelScheme("GBUF", (), ()),
    ))


def kapla_example() -> tuple[Network, LayerScheme, LayerScheme]:
    """Two adjacent layers like KAPLA's listing: a 5x5 CONV and a 3x3 depthwise CONV.

    CONV (16 -> 96 channels, 15x15 outputs) on 4x16 nodes: hybrid output (K,
    4 nodes of 6 channels) and batch (N, 16 nodes of 4 samples) parallelization,
    the input shared by the 4 K-nodes with buffer sharing; top-level loop
    K+=24. Depthwise CONV on 12x16 nodes: channels (6 nodes of 4), batch (16)
    and output width (2) unrolled; its top-level loop G+=24 matches the CONV's
    K+=24, so the fmap between them is consumed in the order it is produced.
    """
    b = NetworkBuilder("example", 64)
    b.input("data", 16, 19)
    b.conv("conv", "data", 96, 5)
    b.depthwise("dwconv", "conv", 3, pad=1)
    net = b.build()
    conv = LayerScheme(net["conv"], 64, (("R", 5), ("K", 2)), (
        LevelScheme("REGF", (Stack("Y", 1, 8), Stack("S", 5, 1)),
                    (Loop("N", 4), Loop("K", 3), Loop("C", 16), Loop("Y", 2), Loop("X", 15))),
        LevelScheme("GBUF", (Stack("K", 4, 1), Stack("N", 1, 16)), (Loop("K", 4),), shr=((Kind.IFM, 4),)),
    ), ifm_name="data")
    dw = LayerScheme(net["dwconv"], 64, (("R", 3),), (
        LevelScheme("REGF", (Stack("Y", 1, 8), Stack("S", 3, 1)),
                    (Loop("N", 4), Loop("G", 4), Loop("Y", 2), Loop("X", 8))),
        LevelScheme("GBUF", (Stack("G", 6, 1), Stack("N", 1, 16), Stack("X", 2, 1)), (Loop("G", 4),)),
    ), ifm_name="conv")
    return net, conv, dw
