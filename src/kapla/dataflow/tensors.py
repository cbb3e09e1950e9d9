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
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

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
    """The full extent of every loop dimension of ``layer`` at ``batch``.

    A layer that folds the batch into its groups (a matmul of two fmaps,
    :attr:`Layer.folds_batch`) runs ``G`` x ``batch`` groups of one sample."""
    if layer.folds_batch:
        return {"N": 1, **layer.loops, "G": layer.loops["G"] * batch}
    return {"N": batch, **layer.loops}


def window(out, kernel, stride: int, dilation: int):
    """Input rows (or columns) read by ``out`` outputs of a ``kernel``-tap window.

    Contiguous windows read their whole span; a stride larger than the window
    (or dilation gaps) leaves rows no output needs, which are not fetched.
    ``out`` and ``kernel`` may be ints (an int is returned) or integer arrays.
    """
    if isinstance(out, (int, np.integer)) and isinstance(kernel, (int, np.integer)):
        out, kernel = int(out), int(kernel)
        if dilation == 1:
            return min((out - 1) * stride + kernel, out * kernel)
        return _touched(out, kernel, stride, dilation)
    out, kernel = np.asarray(out, dtype=np.int64), np.asarray(kernel, dtype=np.int64)
    if dilation == 1:
        return np.minimum((out - 1) * stride + kernel, out * kernel)
    pairs, inv = np.unique(np.stack(np.broadcast_arrays(out, kernel), axis=-1).reshape(-1, 2), axis=0,
                           return_inverse=True)
    vals = np.array([_touched(int(o), int(k), stride, dilation) for o, k in pairs], dtype=np.int64)
    return vals[inv.reshape(-1)].reshape(np.broadcast_shapes(out.shape, kernel.shape))


@lru_cache(maxsize=4096)
def _touched(out: int, kernel: int, stride: int, dilation: int) -> int:
    taps = np.arange(kernel) * dilation
    return len(np.unique((np.arange(out)[:, None] * stride + taps[None, :]).ravel()))


DIM_INDEX = {d: i for i, d in enumerate(DIMS)}
"""Column of each loop dimension in block arrays."""

RELEVANT_MASK: Mapping[Kind, np.ndarray] = {k: np.array([d in RELEVANT[k] for d in DIMS]) for k in Kind}
"""Per kind, which columns of a block array index the tensor."""

WINDOW_AXIS = np.array([{"Y": 0, "S": 0, "X": 1, "R": 1}.get(d, -1) for d in DIMS])
"""The input-window axis (0 rows, 1 columns) a loop dimension moves, -1 for none."""


@lru_cache(maxsize=4096)
def whole_input(layer: Layer) -> tuple[int, int]:
    """Rows and columns of the padded input the whole layer reads."""
    sy, sx = layer.stride
    dy, dx = layer.dilation
    return window(layer.yo, layer.s, sy, dy), window(layer.xo, layer.r, sx, dx)


def ifm_extents(block: np.ndarray, layer: Layer) -> tuple[np.ndarray, np.ndarray]:
    """Input rows and columns each block of a ``(..., 8)`` array reads (never
    more than the padded input)."""
    sy, sx = layer.stride
    dy, dx = layer.dilation
    full_rows, full_cols = whole_input(layer)
    rows = np.minimum(window(block[..., DIM_INDEX["Y"]], block[..., DIM_INDEX["S"]], sy, dy), full_rows)
    cols = np.minimum(window(block[..., DIM_INDEX["X"]], block[..., DIM_INDEX["R"]], sx, dx), full_cols)
    return rows, cols


def footprints(block: np.ndarray, layer: Layer, kinds=tuple(Kind),
               extents: tuple[np.ndarray, np.ndarray] | None = None) -> dict[Kind, np.ndarray]:
    """Elements of each kind touched by each block of a ``(..., 8)`` integer array
    of loop extents (columns in :data:`DIMS` order): the one footprint rule.
    ``extents``: the blocks' :func:`ifm_extents`, where the caller has them already."""
    col = DIM_INDEX
    g = block[..., col["G"]]
    out = {}
    for kind in kinds:
        if kind == Kind.WGT:
            out[kind] = g * block[..., col["K"]] * block[..., col["C"]] * block[..., col["S"]] * block[..., col["R"]]
        elif kind == Kind.OFM:
            out[kind] = block[..., col["N"]] * g * block[..., col["K"]] * block[..., col["Y"]] * block[..., col["X"]]
        else:
            rows, cols = ifm_extents(block, layer) if extents is None else extents
            out[kind] = block[..., col["N"]] * g * block[..., col["C"]] * rows * cols
    return out


def as_block(block: Mapping[str, int]) -> np.ndarray:
    """A ``{dim: extent}`` mapping as a block array (missing dims are 1)."""
    return np.array([block.get(d, 1) for d in DIMS], dtype=np.int64)


def footprint(kind: Kind, block: Mapping[str, int], layer: Layer) -> int:
    """Elements of a ``kind`` tensor touched by one block of the loop nest."""
    return int(footprints(as_block(block), layer, (kind,))[kind])


def ifm_extent(block: Mapping[str, int], layer: Layer) -> tuple[int, int]:
    """Input rows and columns one block reads (never more than the padded input)."""
    rows, cols = ifm_extents(as_block(block), layer)
    return int(rows), int(cols)


def tensor_roles(layer: Layer, ifm_name: str | None = None) -> tuple[TensorRole, ...]:
    """The tensors ``layer`` reads and writes in its phase, inputs first.

    ``ifm_name`` names the forward input fmap (its producers, when known). A
    matmul's fmap operand plays the weight tensor's part (``<layer>.b``).
    """
    fwd = layer.forward or layer.name
    ifm_name = ifm_name or f"{fwd}.in"
    wgt_name = f"{fwd}.b" if layer.folds_batch else f"{fwd}.w"
    reads_wgt = layer.has_weights or layer.folds_batch
    if layer.phase == Phase.FWD:
        roles = [TensorRole(Kind.IFM, False, ifm_name, layer.n_inputs if layer.op == Op.ELTWISE else 1)]
        if reads_wgt:
            roles.append(TensorRole(Kind.WGT, False, wgt_name))
        roles.append(TensorRole(Kind.OFM, True, layer.name))
    elif layer.phase == Phase.BWD_DATA:
        roles = [TensorRole(Kind.OFM, False, f"{fwd}.grad")]
        if reads_wgt:
            roles.append(TensorRole(Kind.WGT, False, wgt_name))
        elif layer.backward_reads_input:
            roles.append(TensorRole(Kind.IFM, False, ifm_name))
        roles.append(TensorRole(Kind.IFM, True, layer.name))
    else:
        roles = [TensorRole(Kind.IFM, False, ifm_name), TensorRole(Kind.OFM, False, f"{fwd}.grad"),
                 TensorRole(Kind.WGT, True, layer.name)]
    return tuple(roles)
