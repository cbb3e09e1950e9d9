"""ResNet-1001 of He et al. (2016), "Identity Mappings in Deep Residual
Networks": the pre-activation bottleneck ResNet for CIFAR-10 (32x32 input,
10 classes; 10.2M parameters in their Tables 3 and 4), as their released
code builds it (``resnet-pre-act.lua`` in KaimingHe/resnet-1k-layers). Not
the ImageNet ResNets of :mod:`kapla.workload.zoo.resnet`.

A 3x3 convolution to 16 channels, then three stages of ``n`` bottleneck
blocks (1x1, 3x3, 1x1) of widths 16, 32 and 64 whose outputs are four times
as wide (64, 128, 256), global average pooling and a 10-way FC layer; depth
9n + 2 = 1001 gives n = 111, 333 blocks. The first block of a stage changes
the width (16 to 64, 64 to 128, 128 to 256), so its shortcut is a 1x1
projection (``convN_0_br``); stride 2 sits on the first 1x1 convolution (and
the projection) of stages 2 and 3. Layers are named as in
:mod:`kapla.workload.zoo.resnet`: the stages are ``conv2`` to ``conv4``,
block ``i`` of stage ``N`` is ``convN_i_a/_b/_c`` and its sum ``convN_i_res``.
Pre-activation only moves batch
normalisation and ReLU before each convolution; they carry no MACs and are
omitted, so the MAC-carrying layers are those of a post-activation network.
"""

from kapla.errors import NetworkError
from kapla.workload.network import Network, NetworkBuilder

_WIDTHS = (16, 32, 64)  # bottleneck widths of the three stages; outputs are 4x


def _bottleneck(b: NetworkBuilder, p: str, res: str, width: int, stride: int, project: bool) -> str:
    b.conv(p + "_a", res, width, 1, stride=stride)
    b.conv(p + "_b", p + "_a", width, 3, pad=1)
    last = b.conv(p + "_c", p + "_b", 4 * width, 1)
    shortcut = b.conv(p + "_br", res, 4 * width, 1, stride=stride) if project else res
    return b.eltwise(p + "_res", [shortcut, last], mode="add")


def preact_resnet_cifar(name: str, depth: int, batch: int = 64) -> Network:
    """The pre-activation bottleneck ResNet of ``depth`` = 9n + 2 layers for CIFAR-10."""
    if (depth - 2) % 9:
        raise NetworkError(f"depth must be 9n + 2 (164, 1001), got {depth}")
    n = (depth - 2) // 9
    b = NetworkBuilder(name, batch)
    b.input("data", 3, 32)
    res = b.conv("conv1", "data", 16, 3, pad=1)
    for stage, width in enumerate(_WIDTHS, start=2):
        for i in range(n):
            stride = 2 if (i == 0 and stage > 2) else 1
            res = _bottleneck(b, f"conv{stage}_{i}", res, width, stride, project=i == 0)
    b.global_pool("pool", res, mode="avg")
    b.fc("fc", "pool", 10)
    return b.build()


def resnet1001(batch: int = 64) -> Network:
    return preact_resnet_cifar("resnet1001", 1001, batch)
