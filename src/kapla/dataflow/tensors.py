"""The three tensors of a layer's loop nest and how big a block of each is.

Every layer iterates the loop dimensions ``N, G, C, K, Y, X, S, R``. Its three
tensors each depend on a subset of them:

* the input fmap ``IFM`` on N, G, C and, through the sliding window, on
  Y/S and X/R (a block of Y output rows needs ``(Y-1)*stride + (S-1)*dilation + 1``
  input rows);
* the weights ``WGT`` on G, K, C, S, R;
* the output fmap ``OFM`` on N, G, K, Y, X.

Which of them is read and which is written depends on the training phase
(forward: OFM is written; backward-data: IFM; weight-gradient: WGT), but the
sizes and reuse patterns only depend on the kind. Pooling and element-wise
layers have no weights; an element-wise layer reads ``n_inputs`` IFMs.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

import numpy as np

from kapla.workload.layer import Layer, Op, Phase

DIMS = ("N", "G", "C", "K", "Y", "X", "S", "R")
"""Loop dimensions, the batch first."""


class Kind(enum.StrEnum):
    IFM = "ifm"
    WGT = "wgt"
    OFM = "ofm"


RELEVANT: Mapping[Kind, frozenset[str]] = {
    Kind.IFM: frozenset("NGCYXSR"),
    Kind.WGT: frozenset("GKCSR"),
    Kind.OFM: frozenset("NGKYX"),
}
"""The loop dimensions whose index changes which element of a tensor is touched."""


@dataclass(frozen=True, slots=True)
class TensorRole:
    """One tensor of a layer: its kind, whether the layer writes it, and its name.

    ``name`` scopes the tensor across layers: an fmap is named after the node
    that produces it, so a producer's output and its consumer's input share a
    name (KAPLA's inter-layer dependency by naming); weights are ``<layer>.w``.
    """

    kind: Kind
    written: bool
    name: str
    copies: int = 1  # an element-wise layer reads several same-shaped inputs


def layer_dims(layer: Layer, batch: int) -> dict[str, int]:
    """The full extent of every loop dimension of ``layer`` at ``batch``."""
    return {"N": batch, **layer.loops}


def window(out: int, kernel: int, stride: int, dilation: int) -> int:
    """Input rows (or columns) read by ``out`` outputs of a ``kernel``-tap window.

    Contiguous windows read their whole span; a stride larger than the window
    (or dilation gaps) leaves rows no output needs, which are not fetched.
    """
    span = (out - 1) * stride + (kernel - 1) * dilation + 1
    if dilation == 1:
        return min(span, out * kernel)
    return _touched(out, kernel, stride, dilation)


@lru_cache(maxsize=4096)
def _touched(out: int, kernel: int, stride: int, dilation: int) -> int:
    taps = np.arange(kernel) * dilation
    return len(np.unique((np.arange(out)[:, None] * stride + taps[None, :]).ravel()))


def footprint(kind: Kind, block: Mapping[str, int], layer: Layer) -> int:
    """Elements of a ``kind`` tensor touched by a block of the loop nest."""
    g = block.get("G", 1)
    if kind == Kind.WGT:
        return g * block.get("K", 1) * block.get("C", 1) * block.get("S", 1) * block.get("R", 1)
    n = block.get("N", 1)
    if kind == Kind.OFM:
        return n * g * block.get("K", 1) * block.get("Y", 1) * block.get("X", 1)
    return n * g * block.get("C", 1) * math.prod(ifm_extent(block, layer))


def ifm_extent(block: Mapping[str, int], layer: Layer) -> tuple[int, int]:
    """Input rows and columns a block reads (never more than the padded input)."""
    sy, sx = layer.stride
    dy, dx = layer.dilation
    rows = window(block.get("Y", 1), block.get("S", 1), sy, dy)
    cols = window(block.get("X", 1), block.get("R", 1), sx, dx)
    full_rows = window(layer.yo, layer.s, sy, dy)
    full_cols = window(layer.xo, layer.r, sx, dx)
    return min(rows, full_rows), min(cols, full_cols)


def tensor_roles(layer: Layer, ifm_name: str | None = None) -> tuple[TensorRole, ...]:
    """The tensors ``layer`` reads and writes in its phase, inputs first.

    ``ifm_name`` names the forward input fmap (its producers, when known).
    """
    fwd = layer.forward or layer.name
    ifm_name = ifm_name or f"{fwd}.in"
    wgt_name = f"{fwd}.w"
    if layer.phase == Phase.FWD:
        roles = [TensorRole(Kind.IFM, False, ifm_name, layer.n_inputs if layer.op == Op.ELTWISE else 1)]
        if layer.has_weights:
            roles.append(TensorRole(Kind.WGT, False, wgt_name))
        roles.append(TensorRole(Kind.OFM, True, layer.name))
    elif layer.phase == Phase.BWD_DATA:
        roles = [TensorRole(Kind.OFM, False, f"{fwd}.grad")]
        if layer.has_weights:
            roles.append(TensorRole(Kind.WGT, False, wgt_name))
        elif (layer.op == Op.POOL and layer.mode == "max") or (layer.op == Op.ELTWISE and layer.mode != "add"):
            roles.append(TensorRole(Kind.IFM, False, ifm_name))
        roles.append(TensorRole(Kind.IFM, True, layer.name))
    else:
        roles = [TensorRole(Kind.IFM, False, ifm_name), TensorRole(Kind.OFM, False, f"{fwd}.grad"),
                 TensorRole(Kind.WGT, True, layer.name)]
    return tuple(roles)
