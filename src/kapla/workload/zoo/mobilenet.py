"""MobileNet v1 (Howard et al., 2017), width multiplier 1.0, 224x224 input."""

from kapla.workload.network import Network, NetworkBuilder

# (output channels of the pointwise conv, stride of the depthwise conv)
_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
           (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))


def mobilenet(batch: int = 64) -> Network:
    b = NetworkBuilder("mobilenet", batch)
    b.input("data", 3, 224)
    prev = b.conv("conv1", "data", 32, 3, stride=2, pad=1)
    for i, (channels, stride) in enumerate(_BLOCKS, start=1):
        prev = b.depthwise(f"conv{i}_dw", prev, 3, stride=stride, pad=1)
        prev = b.conv(f"conv{i}_pw", prev, channels, 1)
    b.global_pool("pool", prev, mode="avg")
    b.fc("fc", "pool", 1000)
    return b.build()
