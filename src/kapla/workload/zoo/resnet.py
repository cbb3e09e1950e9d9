"""ResNets of He et al. (2016), Table 1: ResNet-18 and -34 of basic blocks
(two 3x3 convolutions), ResNet-50, -101 and -152 of bottleneck blocks (1x1,
3x3, 1x1 with four times the width out).

The first block of a stage whose output width or size changes has a 1x1
projection shortcut (``convN_br``: every stage of the bottleneck networks,
stages 3-5 of the basic ones); stride 2 sits on the first convolution of
stages 3-5 (the first 1x1 of a bottleneck block, as in the original Caffe
models). Batch normalisation and ReLU carry no MACs and are omitted.
"""

from kapla.workload.network import Network, NetworkBuilder


def _resnet(name: str, blocks: tuple[int, int, int, int], batch: int, bottleneck: bool = True) -> Network:
    b = NetworkBuilder(name, batch)
    b.input("data", 3, 224)
    b.conv("conv1", "data", 64, 7, stride=2, pad=3)
    res = b.pool("pool1", "conv1", 3, stride=2, pad=1)
    for stage, (count, width) in enumerate(zip(blocks, (64, 128, 256, 512), strict=True), start=2):
        for i in range(count):
            stride = 2 if (i == 0 and stage > 2) else 1
            p = f"conv{stage}_{i}"
            if bottleneck:
                out = 4 * width
                b.conv(p + "_a", res, width, 1, stride=stride)
                b.conv(p + "_b", p + "_a", width, 3, pad=1)
                last = b.conv(p + "_c", p + "_b", out, 1)
            else:
                out = width
                b.conv(p + "_a", res, width, 3, stride=stride, pad=1)
                last = b.conv(p + "_b", p + "_a", width, 3, pad=1)
            shortcut = res
            if i == 0 and (bottleneck or stage > 2):
                shortcut = b.conv(f"conv{stage}_br", res, out, 1, stride=stride)
            res = b.eltwise(p + "_res", [shortcut, last], mode="add")
    b.global_pool("pool5", res, mode="avg")
    b.fc("fc", "pool5", 1000)
    return b.build()


def resnet18(batch: int = 64) -> Network:
    return _resnet("resnet18", (2, 2, 2, 2), batch, bottleneck=False)


def resnet34(batch: int = 64) -> Network:
    return _resnet("resnet34", (3, 4, 6, 3), batch, bottleneck=False)


def resnet50(batch: int = 64) -> Network:
    return _resnet("resnet50", (3, 4, 6, 3), batch)


def resnet101(batch: int = 64) -> Network:
    return _resnet("resnet101", (3, 4, 23, 3), batch)


def resnet152(batch: int = 64) -> Network:
    return _resnet("resnet152", (3, 8, 36, 3), batch)
