"""GoogLeNet (Szegedy et al., 2015).

As in TANGRAM's evaluation, each inception module's pool branch is reduced to
its 1x1 pool projection applied to the module input, and LRN is ignored.
"""

from kapla.workload.network import Network, NetworkBuilder

# name: (1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool projection)
_INCEPTIONS = {
    "3a": (64, 96, 128, 16, 32, 32),
    "3b": (128, 128, 192, 32, 96, 64),
    "4a": (192, 96, 208, 16, 48, 64),
    "4b": (160, 112, 224, 24, 64, 64),
    "4c": (128, 128, 256, 24, 64, 64),
    "4d": (112, 144, 288, 32, 64, 64),
    "4e": (256, 160, 320, 32, 128, 128),
    "5a": (256, 160, 320, 32, 128, 128),
    "5b": (384, 192, 384, 48, 128, 128),
}


def _inception(b: NetworkBuilder, tag: str, prev: list[str]) -> list[str]:
    n1, n3r, n3, n5r, n5, npool = _INCEPTIONS[tag]
    p = f"inception_{tag}_"
    b.conv(p + "1x1", prev, n1, 1)
    b.conv(p + "3x3_reduce", prev, n3r, 1)
    b.conv(p + "3x3", p + "3x3_reduce", n3, 3, pad=1)
    b.conv(p + "5x5_reduce", prev, n5r, 1)
    b.conv(p + "5x5", p + "5x5_reduce", n5, 5, pad=2)
    b.conv(p + "pool_proj", prev, npool, 1)
    return [p + "1x1", p + "3x3", p + "5x5", p + "pool_proj"]


def googlenet(batch: int = 64) -> Network:
    b = NetworkBuilder("googlenet", batch)
    b.input("data", 3, 224)
    b.conv("conv1", "data", 64, 7, stride=2, pad=3)
    b.pool("pool1", "conv1", 3, stride=2, ceil_mode=True)
    b.conv("conv2_3x3_reduce", "pool1", 64, 1)
    b.conv("conv2_3x3", "conv2_3x3_reduce", 192, 3, pad=1)
    b.pool("pool2", "conv2_3x3", 3, stride=2, ceil_mode=True)
    prev = ["pool2"]
    for tags, pool in ((("3a", "3b"), "pool3"), (("4a", "4b", "4c", "4d", "4e"), "pool4"), (("5a", "5b"), None)):
        for tag in tags:
            prev = _inception(b, tag, prev)
        if pool:
            prev = [b.pool(pool, prev, 3, stride=2, ceil_mode=True)]
    b.global_pool("pool5", prev, mode="avg")
    b.fc("fc", "pool5", 1000)
    return b.build()
