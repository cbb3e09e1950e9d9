"""The model zoo: the networks of the KAPLA, TANGRAM and Atomic Dataflow evaluations, and transformers.

``get_network(name, batch)`` builds one by name; ``ZOO`` lists them. Names are
case-insensitive and ignore dashes and underscores (``MLP-L`` and
``ResNet-152`` are ``mlp_l`` and ``resnet152``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from kapla.errors import NetworkError
from kapla.workload.network import Network
from kapla.workload.zoo.alexnet import alexnet
from kapla.workload.zoo.efficientnet import efficientnet_b0
from kapla.workload.zoo.googlenet import googlenet
from kapla.workload.zoo.inception_v3 import inception_v3
from kapla.workload.zoo.lstm import lstm_l, lstm_m
from kapla.workload.zoo.mlp import mlp
from kapla.workload.zoo.mobilenet import mobilenet
from kapla.workload.zoo.preact_resnet import resnet1001
from kapla.workload.zoo.resnet import resnet18, resnet34, resnet50, resnet101, resnet152
from kapla.workload.zoo.transformers import bert_base, gpt2, gpt2_decode, llama3_8b, llama3_8b_decode, vit_b16
from kapla.workload.zoo.vgg import vgg16, vgg19

ZOO: dict[str, Callable[[int], Network]] = {
    "alexnet": alexnet,
    "vgg16": vgg16,
    "vgg19": vgg19,
    "googlenet": googlenet,
    "inception_v3": inception_v3,
    "resnet18": resnet18,
    "resnet34": resnet34,
    "resnet50": resnet50,
    "resnet101": resnet101,
    "resnet152": resnet152,
    "resnet1001": resnet1001,  # pre-activation, CIFAR-10 (32x32)
    "mobilenet": mobilenet,
    "efficientnet_b0": efficientnet_b0,
    "mlp_s": partial(mlp, "mlp_s"),
    "mlp_m": partial(mlp, "mlp_m"),
    "mlp_l": partial(mlp, "mlp_l"),
    "lstm_m": lstm_m,
    "lstm_l": lstm_l,
    "bert_base": bert_base,
    "bert_base_512": partial(bert_base, tokens=512),
    "gpt2": gpt2,
    "gpt2_decode": gpt2_decode,
    "llama3_8b_block": llama3_8b,
    "llama3_8b_decode": llama3_8b_decode,
    "vit_b16": vit_b16,
}

TRANSFORMERS = ("bert_base", "bert_base_512", "gpt2", "gpt2_decode", "llama3_8b_block", "llama3_8b_decode",
                "vit_b16")  # the zoo's transformers

ALIASES = {"vgg": "vgg16", "resnet": "resnet152", "mlp": "mlp_l", "lstm": "lstm_l", "bert": "bert_base",
           "vit": "vit_b16", "llama": "llama3_8b_block"}


def _squash(name: str) -> str:
    return name.strip().lower().replace("-", "").replace("_", "")


_LOOKUP = {_squash(n): n for n in ZOO} | {_squash(a): n for a, n in ALIASES.items()}


def canonical_name(name: str) -> str | None:
    """The zoo key for ``name``, ignoring case, dashes and underscores (None if unknown)."""
    return _LOOKUP.get(_squash(name))


def get_network(name: str, batch: int = 64) -> Network:
    """Build the zoo network ``name`` at ``batch``."""
    key = canonical_name(name)
    if key is None:
        raise NetworkError(f"unknown network '{name}'; the zoo has: {', '.join(ZOO)}")
    return ZOO[key](batch)


__all__ = ["ALIASES", "TRANSFORMERS", "ZOO", "canonical_name", "get_network"]
