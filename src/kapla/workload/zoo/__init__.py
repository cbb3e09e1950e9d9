"""The model zoo: the networks of the KAPLA and TANGRAM evaluations.

``get_network(name, batch)`` builds one by name; ``ZOO`` lists them. Names are
case-insensitive and accept dashes (``MLP-L`` is ``mlp_l``).
"""

from __future__ import annotations

from functools import partial
from typing import Callable

from kapla.errors import NetworkError
from kapla.workload.network import Network
from kapla.workload.zoo.alexnet import alexnet
from kapla.workload.zoo.googlenet import googlenet
from kapla.workload.zoo.lstm import lstm_l, lstm_m
from kapla.workload.zoo.mlp import mlp
from kapla.workload.zoo.mobilenet import mobilenet
from kapla.workload.zoo.resnet import resnet50, resnet152
from kapla.workload.zoo.vgg import vgg16

ZOO: dict[str, Callable[[int], Network]] = {
    "alexnet": alexnet,
    "vgg16": vgg16,
    "googlenet": googlenet,
    "resnet50": resnet50,
    "resnet152": resnet152,
    "mobilenet": mobilenet,
    "mlp_s": partial(mlp, "mlp_s"),
    "mlp_m": partial(mlp, "mlp_m"),
    "mlp_l": partial(mlp, "mlp_l"),
    "lstm_m": lstm_m,
    "lstm_l": lstm_l,
}

ALIASES = {"vgg": "vgg16", "resnet": "resnet152", "mlp": "mlp_l", "lstm": "lstm_l"}


def canonical_name(name: str) -> str | None:
    key = name.strip().lower().replace("-", "_")
    key = ALIASES.get(key, key)
    return key if key in ZOO else None


def get_network(name: str, batch: int = 64) -> Network:
    """Build the zoo network ``name`` at ``batch``."""
    key = canonical_name(name)
    if key is None:
        raise NetworkError(f"unknown network '{name}'; the zoo has: {', '.join(ZOO)}")
    return ZOO[key](batch)


__all__ = ["ALIASES", "ZOO", "canonical_name", "get_network"]
