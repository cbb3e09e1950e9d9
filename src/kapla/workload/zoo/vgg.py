"""VGG-16 (Simonyan and Zisserman, 2014), configuration D."""

from kapla.workload.network import Network, NetworkBuilder

_STAGES = ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))


def vgg16(batch: int = 64) -> Network:
    b = NetworkBuilder("vgg16", batch)
    prev = b.input("data", 3, 224)
    for stage, (channels, convs) in enumerate(_STAGES, start=1):
        for i in range(1, convs + 1):
            prev = b.conv(f"conv{stage}_{i}", prev, channels, 3, pad=1)
        prev = b.pool(f"pool{stage}", prev, 2, stride=2)
    prev = b.fc("fc6", prev, 4096)
    prev = b.fc("fc7", prev, 4096)
    b.fc("fc8", prev, 1000)
    return b.build()
