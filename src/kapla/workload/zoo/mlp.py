"""The PRIME MLPs (Chi et al., 2016): fully connected layers on 784 inputs."""

from kapla.workload.network import Network, NetworkBuilder

SIZES = {
    "mlp_s": (500, 250, 10),
    "mlp_m": (1000, 500, 250, 10),
    "mlp_l": (1500, 1000, 500, 10),
}


def mlp(name: str, batch: int = 64) -> Network:
    b = NetworkBuilder(name, batch)
    prev = b.input("data", 784)
    for i, size in enumerate(SIZES[name], start=1):
        prev = b.fc(f"fc{i}", prev, size)
    return b.build()
