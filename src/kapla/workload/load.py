"""Resolve what a user names as a network: a zoo name or a file."""

from __future__ import annotations

from pathlib import Path

from kapla.errors import NetworkError
from kapla.workload.network import Network
from kapla.workload.zoo import ZOO, canonical_name, get_network

DEFAULT_BATCH = 64
NETWORK_SUFFIXES = (".yaml", ".yml", ".json")


def load_network(source: str | Path, batch: int | None = None, training: bool = False,
                 seq: int | None = None) -> Network:
    """A zoo network by name, or a network file (YAML/JSON) or ONNX model by path.

    ``batch`` overrides the batch written in a file or model (zoo networks
    default to 64, the batch of the KAPLA and TANGRAM evaluations); ``seq``
    binds an ONNX model's symbolic sequence length (other sources have none
    to bind and refuse it).
    """
    if seq is not None and Path(str(source)).suffix.lower() != ".onnx":
        raise NetworkError(f"'{source}': a sequence length binds an ONNX model's symbolic dims; "
                           "this network has fixed shapes")
    text = str(source)
    path = Path(text)
    if isinstance(source, str) and canonical_name(text) is not None and not path.is_file():
        net = get_network(text, DEFAULT_BATCH if batch is None else batch)
    elif path.suffix.lower() == ".onnx":
        from kapla.workload.onnx_import import load_onnx

        net = load_onnx(path, batch=batch, seq=seq)
    elif path.suffix.lower() in NETWORK_SUFFIXES:
        from kapla.workload.spec import load_network_file

        net = load_network_file(path, batch=batch)
    else:
        raise NetworkError(
            f"unknown network '{text}': not a zoo network ({', '.join(ZOO)}) "
            f"nor a {'/'.join(NETWORK_SUFFIXES)}/.onnx file")
    return net.to_training() if training else net
