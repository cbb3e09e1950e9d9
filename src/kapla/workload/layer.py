"""Layers: immutable descriptions of one NN layer's computation.

Every layer kapla schedules is a loop nest over the same seven dimensions
(KAPLA Table I), with the batch ``N`` supplied by the network::

    for n, g, k, c, yo, xo, s, r:
        out[n, g, k, yo, xo] += in[n, g, c, yo*sy + s*dy, xo*sx + r*dx] * w[g, k, c, s, r]

``G`` counts independent channel groups (1 for a dense CONV/FC, the channel
count for depthwise CONV, POOL and element-wise layers), ``C``/``K`` are input
and output channels *per group*, ``Y``/``X`` the output fmap height/width and
``S``/``R`` the filter height/width.

Training adds two more computations over exactly the same loop nest; only the
roles of the three tensors change (see :class:`Phase`). Keeping one loop nest
for all three is what lets the dataflow and cost layers treat backward layers
like any other layer.

An FC layer is a CONV whose filter covers its whole input fmap, so its output
is 1x1; this is how its weights (K x C x H x W) and MACs come out right.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from kapla.errors import NetworkError
from kapla.workload.limits import MAX_SIZE


class Op(enum.StrEnum):
    """The kind of computation a layer performs."""

    CONV = "conv"
    FC = "fc"
    POOL = "pool"
    ELTWISE = "eltwise"


class Phase(enum.StrEnum):
    """Which of the three computations over a layer's loop nest this is.

    ``FWD`` reads the input fmap and the weights and writes the output fmap.
    ``BWD_DATA`` reads the output gradient and the weights and writes the input
    gradient (a transposed convolution). ``WGRAD`` reads the input fmap and the
    output gradient and writes the weight gradient.
    """

    FWD = "fwd"
    BWD_DATA = "bwd_data"
    WGRAD = "wgrad"


class Merge(enum.StrEnum):
    """How several producers feeding one input port combine."""

    CONCAT = "concat"  # stacked along channels (inception, two-tower AlexNet)
    EACH = "each"  # every producer delivers the whole tensor (element-wise ops)


@dataclass(frozen=True, slots=True)
class FmapShape:
    """Per-sample shape of a feature map: channels x height x width."""

    c: int
    h: int
    w: int

    @property
    def elems(self) -> int:
        return self.c * self.h * self.w

    def __str__(self) -> str:
        return f"{self.c}x{self.h}x{self.w}"


@dataclass(frozen=True, slots=True)
class Port:
    """A named input of a layer: the shape it expects and how producers merge."""

    name: str
    shape: FmapShape
    merge: Merge = Merge.CONCAT


LOOP_DIMS = ("G", "C", "K", "Y", "X", "S", "R")
"""Per-sample loop dimensions of every layer (the batch ``N`` comes from the network)."""

_POOL_MODES = ("max", "avg")
_ELTWISE_MODES = ("add", "mul", "unary")


def _out_size(size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int,
              dilation: int, ceil_mode: bool) -> int:
    span = dilation * (kernel - 1) + 1
    num = size + pad_lo + pad_hi - span
    if num < 0:
        return 0
    steps = -(-num // stride) if ceil_mode else num // stride
    return steps + 1


#: The words a message uses for a layer's fields (its spec's keys say kernel, channels...).
_FIELD_NAMES = {"c": "input channels", "k": "output channels", "h": "input height", "w": "input width",
                "s": "filter height", "r": "filter width", "n_inputs": "operand count"}


@dataclass(frozen=True)
class Layer:
    """One layer: its geometry, its operation and which training phase it is.

    Geometry is always that of the *forward* computation; backward layers keep
    the forward geometry and flip :attr:`phase`, so input/output shapes and
    tensor roles are derived, never stored twice.
    """

    name: str
    op: Op
    c: int  # input channels (all groups)
    k: int  # output channels (all groups)
    h: int  # input fmap height (unpadded)
    w: int  # input fmap width (unpadded)
    s: int = 1  # filter height
    r: int = 1  # filter width
    stride: tuple[int, int] = (1, 1)
    pad: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, left, bottom, right
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    mode: str | None = None  # pool: max/avg; eltwise: add/mul
    n_inputs: int = 1  # element-wise operands
    ceil_mode: bool = False
    phase: Phase = Phase.FWD
    forward: str | None = None  # name of the forward layer a backward layer belongs to
    yo: int = field(init=False)
    xo: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", Op(self.op))
        object.__setattr__(self, "phase", Phase(self.phase))
        where = f"layer '{self.name}'"
        for fname in ("c", "k", "h", "w", "s", "r", "groups", "n_inputs"):
            value = getattr(self, fname)
            what = _FIELD_NAMES.get(fname, fname)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise NetworkError(f"{where}: {what} must be a positive integer (got {value!r})")
            if value > MAX_SIZE:
                raise NetworkError(f"{where}: {what} is {value:,}; kapla handles sizes up to {MAX_SIZE:,}")
        if any(v < 1 for v in self.stride) or any(v < 1 for v in self.dilation):
            raise NetworkError(f"{where}: stride and dilation must be positive (got {self.stride}, {self.dilation})")
        if any(v < 0 for v in self.pad):
            raise NetworkError(f"{where}: padding must be non-negative (got {self.pad})")
        if self.c % self.groups or self.k % self.groups:
            raise NetworkError(
                f"{where}: groups={self.groups} must divide both input channels {self.c} "
                f"and output channels {self.k}")
        if self.op in (Op.POOL, Op.ELTWISE) and self.c != self.k:
            raise NetworkError(f"{where}: a {self.op} layer keeps its channels (got {self.c} in, {self.k} out)")
        if self.op == Op.POOL and self.mode not in _POOL_MODES:
            raise NetworkError(f"{where}: pool mode must be one of {_POOL_MODES} (got {self.mode!r})")
        if self.op == Op.ELTWISE:
            if self.mode not in _ELTWISE_MODES:
                raise NetworkError(f"{where}: eltwise mode must be one of {_ELTWISE_MODES} (got {self.mode!r})")
            if (self.s, self.r, self.stride) != (1, 1, (1, 1)):
                raise NetworkError(f"{where}: an eltwise layer has no filter window")
        if self.op in (Op.POOL, Op.ELTWISE) and self.groups != self.c:
            object.__setattr__(self, "groups", self.c)
        yo = _out_size(self.h, self.s, self.stride[0], self.pad[0], self.pad[2], self.dilation[0], self.ceil_mode)
        xo = _out_size(self.w, self.r, self.stride[1], self.pad[1], self.pad[3], self.dilation[1], self.ceil_mode)
        if yo < 1 or xo < 1:
            raise NetworkError(
                f"{where}: a {self.s}x{self.r} window does not fit the {self.h}x{self.w} input "
                f"(with padding {self.pad})")
        object.__setattr__(self, "yo", yo)
        object.__setattr__(self, "xo", xo)

    # ------------------------------------------------------------------ shapes

    @property
    def ifmap(self) -> FmapShape:
        """The forward input fmap (per sample)."""
        return FmapShape(self.c, self.h, self.w)

    @property
    def ofmap(self) -> FmapShape:
        """The forward output fmap (per sample)."""
        return FmapShape(self.k, self.yo, self.xo)

    @property
    def ports(self) -> tuple[Port, ...]:
        """The inputs this layer reads from other layers, in this phase."""
        if self.phase == Phase.FWD:
            merge = Merge.EACH if self.op == Op.ELTWISE else Merge.CONCAT
            return (Port("in", self.ifmap, merge),)
        if self.phase == Phase.BWD_DATA:
            ports = [Port("dy", self.ofmap)]
            # Max pooling routes gradients to the arg-max, element-wise multiply
            # scales them by the other operand: both need forward data back.
            if (self.op == Op.POOL and self.mode == "max") or (self.op == Op.ELTWISE and self.mode in ("mul", "unary")):
                ports.append(Port("x", self.ifmap, Merge.EACH if self.op == Op.ELTWISE else Merge.CONCAT))
            return tuple(ports)
        return (Port("x", self.ifmap), Port("dy", self.ofmap))

    def port(self, name: str) -> Port:
        for p in self.ports:
            if p.name == name:
                return p
        raise NetworkError(f"layer '{self.name}' has no input port '{name}' (has {[p.name for p in self.ports]})")

    @property
    def out_shape(self) -> FmapShape | None:
        """The fmap this layer produces per sample, or None for a weight gradient."""
        if self.phase == Phase.FWD:
            return self.ofmap
        if self.phase == Phase.BWD_DATA:
            return self.ifmap
        return None

    # -------------------------------------------------------------- loop nest

    @property
    def has_weights(self) -> bool:
        return self.op in (Op.CONV, Op.FC)

    @property
    def loops(self) -> Mapping[str, int]:
        """Sizes of the per-sample loop dimensions (see :data:`LOOP_DIMS`)."""
        return {
            "G": self.groups,
            "C": self.c // self.groups,
            "K": self.k // self.groups,
            "Y": self.yo,
            "X": self.xo,
            "S": self.s if self.op != Op.ELTWISE else 1,
            "R": self.r if self.op != Op.ELTWISE else 1,
        }

    @property
    def loop_ops(self) -> int:
        """Iterations of the loop nest per sample (MACs for CONV/FC)."""
        return math.prod(self.loops.values())

    @property
    def macs(self) -> int:
        """Multiply-accumulates per sample; POOL and ELTWISE perform none."""
        return self.loop_ops if self.has_weights else 0

    @property
    def weight_elems(self) -> int:
        """Elements of the weight tensor (biases excluded, as TANGRAM Table 2)."""
        if not self.has_weights:
            return 0
        return self.k * (self.c // self.groups) * self.s * self.r

    @property
    def is_depthwise(self) -> bool:
        return self.op == Op.CONV and self.groups > 1 and self.groups == self.c

    def with_phase(self, phase: Phase, name: str) -> Layer:
        """The same loop nest computing another training phase."""
        return replace(self, name=name, phase=phase, forward=self.name)

    def describe(self) -> str:
        """A short human-readable summary of the operation."""
        if self.op == Op.FC:
            text = f"fc {self.ifmap} -> {self.k}"
        elif self.op == Op.ELTWISE:
            text = f"eltwise-{self.mode} {self.n_inputs}x {self.ofmap}"
        else:
            kind = "pool-" + str(self.mode) if self.op == Op.POOL else ("dwconv" if self.is_depthwise else "conv")
            text = f"{kind} {self.s}x{self.r}/{self.stride[0]} {self.ifmap} -> {self.ofmap}"
            if self.op == Op.CONV and self.groups > 1 and not self.is_depthwise:
                text += f" g{self.groups}"
        if self.phase != Phase.FWD:
            text = f"{self.phase} of {self.forward}: " + text
        return text
