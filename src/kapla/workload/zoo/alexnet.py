"""AlexNet (Krizhevsky et al., 2012), the original two-tower network.

conv1..conv5 are split into ``_a``/``_b`` towers that only meet at conv3 and
the FC layers; LRN is ignored (it carries no MACs).
"""

from kapla.workload.network import Network, NetworkBuilder


def alexnet(batch: int = 64) -> Network:
    b = NetworkBuilder("alexnet", batch)
    b.input("data", 3, 227)
    for t in "ab":
        b.conv(f"conv1_{t}", "data", 48, 11, stride=4)
        b.pool(f"pool1_{t}", f"conv1_{t}", 3, stride=2)
        b.conv(f"conv2_{t}", f"pool1_{t}", 128, 5, pad=2)
        b.pool(f"pool2_{t}", f"conv2_{t}", 3, stride=2)
    for t in "ab":
        b.conv(f"conv3_{t}", ["pool2_a", "pool2_b"], 192, 3, pad=1)
        b.conv(f"conv4_{t}", f"conv3_{t}", 192, 3, pad=1)
        b.conv(f"conv5_{t}", f"conv4_{t}", 128, 3, pad=1)
        b.pool(f"pool3_{t}", f"conv5_{t}", 3, stride=2)
    b.fc("fc1", ["pool3_a", "pool3_b"], 4096)
    b.fc("fc2", "fc1", 4096)
    b.fc("fc3", "fc2", 1000)
    return b.build()
