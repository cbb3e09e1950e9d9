"""ResNet-50 and ResNet-152 (He et al., 2016), bottleneck blocks.

The first block of each stage has a 1x1 projection shortcut (``convN_br``);
stride 2 sits on the first 1x1 convolution of stages 3-5, as in the original
Caffe models. Batch normalisation and ReLU carry no MACs and are omitted.
"""

from kapla.workload.network import Network, NetworkBuilder


def _resnet(name: str, blocks: tuple[int, int, int, int], batch: int) -> Network:
    b = NetworkBuilder(name, batch)
    b.input("data", 3, 224)
    b.conv("conv1", "data", 64, 7, stride=2, pad=3)
    res = b.pool("pool1", "conv1", 3, stride=2, pad=1)
    for stage, (count, width) in enumerate(zip(blocks, (64, 128, 256, 512), strict=True), start=2):
        for i in range(count):
            stride = 2 if (i == 0 and stage > 2) else 1
            p = f"conv{stage}_{i}"
            b.conv(p + "_a", res, width, 1, stride=stride)
            b.conv(p + "_b", p + "_a", width, 3, pad=1)
            b.conv(p + "_c", p + "_b", 4 * width, 1)
            shortcut = res
            if i == 0:
                shortcut = b.conv(f"conv{stage}_br", res, 4 * width, 1, stride=stride)
            res = b.eltwise(p + "_res", [shortcut, p + "_c"], mode="add")
    b.global_pool("pool5", res, mode="avg")
    b.fc("fc", "pool5", 1000)
    return b.build()


def resnet50(batch: int = 64) -> Network:
    return _resnet("resnet50", (3, 4, 6, 3), batch)


def resnet152(batch: int = 64) -> Network:
    return _resnet("resnet152", (3, 8, 36, 3), batch)
