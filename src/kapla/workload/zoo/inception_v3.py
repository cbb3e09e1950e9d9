"""Inception-v3 (Szegedy et al., 2016, "Rethinking the Inception Architecture
for Computer Vision"), 299x299 input, as torchvision builds it (the outline
of the paper's Table 1 with the modules of its Figures 5, 6 and 7): a stem of five convolutions and two max pools, three
Inception-A modules (Mixed_5b-d), the grid reduction Mixed_6a, four
Inception-C modules of factorised 1x7/7x1 convolutions (Mixed_6b-e), the grid
reduction Mixed_7a, two Inception-E modules whose 3x3 branches split into
parallel 1x3 and 3x1 convolutions (Mixed_7b-c), global average pooling and a
1000-way FC layer.

Layer names follow torchvision's (``mixed_5b_5x5_1`` is ``Mixed_5b.branch5x5_1``).
Every pooling branch is kept (a 3x3 average pool and its 1x1 projection, or
the max pool of a reduction), and a module's output is the concatenation of
its branches: the next layer reads all of them. The auxiliary classifier,
used only in training, is left out; batch normalisation and ReLU carry no
MACs and are omitted.
"""

from kapla.workload.network import Network, NetworkBuilder

_ROW, _COL = (1, 7), (7, 1)  # a 1x7 and a 7x1 convolution, padded to keep the size
_ROW_PAD, _COL_PAD = (0, 3), (3, 0)


def _pool_branch(b: NetworkBuilder, p: str, prev: list[str], k: int) -> str:
    """3x3 average pool (stride 1, pad 1) of the module input, then a 1x1 projection."""
    b.pool(p + "pool", prev, 3, stride=1, pad=1, mode="avg")
    return b.conv(p + "pool_proj", p + "pool", k, 1)


def _inception_a(b: NetworkBuilder, tag: str, prev: list[str], pool_features: int) -> list[str]:
    """Figure 5: 1x1, 5x5 and double-3x3 branches and a pooling branch."""
    p = f"mixed_{tag}_"
    b.conv(p + "1x1", prev, 64, 1)
    b.conv(p + "5x5_1", prev, 48, 1)
    b.conv(p + "5x5_2", p + "5x5_1", 64, 5, pad=2)
    b.conv(p + "3x3dbl_1", prev, 64, 1)
    b.conv(p + "3x3dbl_2", p + "3x3dbl_1", 96, 3, pad=1)
    b.conv(p + "3x3dbl_3", p + "3x3dbl_2", 96, 3, pad=1)
    return [p + "1x1", p + "5x5_2", p + "3x3dbl_3", _pool_branch(b, p, prev, pool_features)]


def _reduction_b(b: NetworkBuilder, prev: list[str]) -> list[str]:
    """Mixed_6a, 35x35 to 17x17: stride-2 3x3 and double-3x3 branches and a max pool."""
    p = "mixed_6a_"
    b.conv(p + "3x3", prev, 384, 3, stride=2)
    b.conv(p + "3x3dbl_1", prev, 64, 1)
    b.conv(p + "3x3dbl_2", p + "3x3dbl_1", 96, 3, pad=1)
    b.conv(p + "3x3dbl_3", p + "3x3dbl_2", 96, 3, stride=2)
    return [p + "3x3", p + "3x3dbl_3", b.pool(p + "pool", prev, 3, stride=2)]


def _inception_c(b: NetworkBuilder, tag: str, prev: list[str], c7: int) -> list[str]:
    """Figure 6 with n = 7: 7x7 convolutions factorised into 1x7 and 7x1 ones."""
    p = f"mixed_{tag}_"
    b.conv(p + "1x1", prev, 192, 1)
    b.conv(p + "7x7_1", prev, c7, 1)
    b.conv(p + "7x7_2", p + "7x7_1", c7, _ROW, pad=_ROW_PAD)
    b.conv(p + "7x7_3", p + "7x7_2", 192, _COL, pad=_COL_PAD)
    b.conv(p + "7x7dbl_1", prev, c7, 1)
    b.conv(p + "7x7dbl_2", p + "7x7dbl_1", c7, _COL, pad=_COL_PAD)
    b.conv(p + "7x7dbl_3", p + "7x7dbl_2", c7, _ROW, pad=_ROW_PAD)
    b.conv(p + "7x7dbl_4", p + "7x7dbl_3", c7, _COL, pad=_COL_PAD)
    b.conv(p + "7x7dbl_5", p + "7x7dbl_4", 192, _ROW, pad=_ROW_PAD)
    return [p + "1x1", p + "7x7_3", p + "7x7dbl_5", _pool_branch(b, p, prev, 192)]


def _reduction_d(b: NetworkBuilder, prev: list[str]) -> list[str]:
    """Mixed_7a, 17x17 to 8x8: stride-2 3x3 and 7x7-then-3x3 branches and a max pool."""
    p = "mixed_7a_"
    b.conv(p + "3x3_1", prev, 192, 1)
    b.conv(p + "3x3_2", p + "3x3_1", 320, 3, stride=2)
    b.conv(p + "7x7x3_1", prev, 192, 1)
    b.conv(p + "7x7x3_2", p + "7x7x3_1", 192, _ROW, pad=_ROW_PAD)
    b.conv(p + "7x7x3_3", p + "7x7x3_2", 192, _COL, pad=_COL_PAD)
    b.conv(p + "7x7x3_4", p + "7x7x3_3", 192, 3, stride=2)
    return [p + "3x3_2", p + "7x7x3_4", b.pool(p + "pool", prev, 3, stride=2)]


def _inception_e(b: NetworkBuilder, tag: str, prev: list[str]) -> list[str]:
    """Figure 7: the 3x3 and double-3x3 branches each end in a 1x3 and a 3x1
    convolution side by side, both part of the module's concatenation."""
    p = f"mixed_{tag}_"
    b.conv(p + "1x1", prev, 320, 1)
    b.conv(p + "3x3_1", prev, 384, 1)
    b.conv(p + "3x3_2a", p + "3x3_1", 384, (1, 3), pad=(0, 1))
    b.conv(p + "3x3_2b", p + "3x3_1", 384, (3, 1), pad=(1, 0))
    b.conv(p + "3x3dbl_1", prev, 448, 1)
    b.conv(p + "3x3dbl_2", p + "3x3dbl_1", 384, 3, pad=1)
    b.conv(p + "3x3dbl_3a", p + "3x3dbl_2", 384, (1, 3), pad=(0, 1))
    b.conv(p + "3x3dbl_3b", p + "3x3dbl_2", 384, (3, 1), pad=(1, 0))
    return [p + "1x1", p + "3x3_2a", p + "3x3_2b", p + "3x3dbl_3a", p + "3x3dbl_3b",
            _pool_branch(b, p, prev, 192)]


def _stem(b: NetworkBuilder) -> list[str]:
    """299x299x3 to 35x35x192."""
    b.input("data", 3, 299)
    b.conv("conv2d_1a_3x3", "data", 32, 3, stride=2)
    b.conv("conv2d_2a_3x3", "conv2d_1a_3x3", 32, 3)
    b.conv("conv2d_2b_3x3", "conv2d_2a_3x3", 64, 3, pad=1)
    b.pool("maxpool1", "conv2d_2b_3x3", 3, stride=2)
    b.conv("conv2d_3b_1x1", "maxpool1", 80, 1)
    b.conv("conv2d_4a_3x3", "conv2d_3b_1x1", 192, 3)
    return [b.pool("maxpool2", "conv2d_4a_3x3", 3, stride=2)]


def inception_v3(batch: int = 64) -> Network:
    b = NetworkBuilder("inception_v3", batch)
    prev = _stem(b)
    for tag, pool_features in (("5b", 32), ("5c", 64), ("5d", 64)):
        prev = _inception_a(b, tag, prev, pool_features)
    prev = _reduction_b(b, prev)
    for tag, c7 in (("6b", 128), ("6c", 160), ("6d", 160), ("6e", 192)):
        prev = _inception_c(b, tag, prev, c7)
    prev = _reduction_d(b, prev)
    for tag in ("7b", "7c"):
        prev = _inception_e(b, tag, prev)
    b.global_pool("pool", prev, mode="avg")
    b.fc("fc", "pool", 1000)
    return b.build()
