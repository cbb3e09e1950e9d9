"""VGG-16 and VGG-19 (Simonyan and Zisserman, 2014), configurations D and E of
their Table 1: 3x3 convolutions (pad 1) in five stages of 64, 128, 256, 512
and 512 channels, each closed by a 2x2 max pool, then three FC layers; 224x224
input. ReLU carries no MACs and is omitted.
"""

from kapla.workload.network import Network, NetworkBuilder

_WIDTHS = (64, 128, 256, 512, 512)
_VGG16_CONVS = (2, 2, 3, 3, 3)  # configuration D: 13 CONV + 3 FC
_VGG19_CONVS = (2, 2, 4, 4, 4)  # configuration E: 16 CONV + 3 FC


def _vgg(name: str, convs_per_stage: tuple[int, ...], batch: int) -> Network:
    b = NetworkBuilder(name, batch)
    prev = b.input("data", 3, 224)
    for stage, (channels, convs) in enumerate(zip(_WIDTHS, convs_per_stage, strict=True), start=1):
        for i in range(1, convs + 1):
            prev = b.conv(f"conv{stage}_{i}", prev, channels, 3, pad=1)
        prev = b.pool(f"pool{stage}", prev, 2, stride=2)
    prev = b.fc("fc6", prev, 4096)
    prev = b.fc("fc7", prev, 4096)
    b.fc("fc8", prev, 1000)
    return b.build()


def vgg16(batch: int = 64) -> Network:
    return _vgg("vgg16", _VGG16_CONVS, batch)


def vgg19(batch: int = 64) -> Network:
    return _vgg("vgg19", _VGG19_CONVS, batch)
