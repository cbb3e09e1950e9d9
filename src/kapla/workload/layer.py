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

Transformers map onto the same nest:

* a token sequence ``[batch, tokens, features]`` is an fmap of ``features``
  channels by ``tokens`` rows by one column;
* a MATMUL ``[..., M, Kin] x [..., Kin, Nout]`` with head (batch-like) loops
  is ``G`` = heads, ``C`` = ``Kin``, ``K`` = ``Nout``, ``Y`` = ``M`` rows
  (every other broadcast position folded into them), ``X = S = R = 1``:
  ``out[n, g, k, y] += a[n, g, c, y] * b[g, k, c]`` is exactly the nest above.
  Its second operand ``b`` is either a *weight* (a projection: the nest of a
  1x1 convolution over the token rows) or an *fmap* another layer produces
  (Q x K^T, scores x V: no weights). An fmap operand depends on the sample,
  which the weight tensor of the nest does not, so such a layer runs with
  the batch folded into its groups (``G`` = heads x batch, ``N`` = 1; see
  :meth:`Layer.folds_batch`): every element is then read and reused exactly
  as the matrix product does. Grouped-query attention puts the ``r`` query
  heads that share one K/V head in the rows (``G`` = K/V heads, ``Y`` =
  ``r`` x tokens), so each K/V head is fetched once for its ``r`` query heads.
* vector work (softmax, layer/RMS norm, GELU/SiLU, scaling, residual adds,
  rotary embedding) is an ELTWISE layer of a *vector mode*
  (:data:`VECTOR_MODES`): one loop iteration per element, as many
  operations per iteration as the mode does (:attr:`Layer.ops_per_point`),
  run on the PE array at one operation per PE per cycle (the hardware
  template has no separate vector unit). A row reduction (softmax, norms)
  reads its input and writes its output once like an element-wise layer;
  the per-row statistics it keeps are one word per row and not counted.

A *channel-wise scaling* (squeeze-and-excitation: a C x H x W fmap times a
C x 1 x 1 vector computed from it) is an ELTWISE ``mul`` of one input with
an fmap operand on port ``b`` (:attr:`Layer.is_scale`). Its nest is a 1x1
depthwise convolution whose "weights" are the vector: ``G`` = C (x batch:
the vector differs per sample, so the batch folds into the groups as for a
matmul of two fmaps), ``C = K = 1``, ``Y x X`` = H x W; no MACs, one
operation per element (``C x H x W``). Its backward-data layer reads ``dy``
and the vector, its weight-gradient layer writes the vector's gradient
(``sum over H x W of dy * x``).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache

from kapla.errors import NetworkError
from kapla.memo import copied, kept_hash, without_kept_hash
from kapla.workload.limits import MAX_SIZE


class Op(enum.StrEnum):
    """The kind of computation a layer performs."""

    CONV = "conv"
    FC = "fc"
    POOL = "pool"
    ELTWISE = "eltwise"
    MATMUL = "matmul"


class Operand(enum.StrEnum):
    """What a MATMUL's second operand is (a channel-wise scaling's is always an fmap)."""

    WEIGHT = "weight"  # a parameter tensor, like a CONV/FC's weights
    FMAP = "fmap"  # an activation another layer (or a network input) produces


@dataclass(frozen=True, slots=True)
class VectorMode:
    """The work of one element-wise or row-reduction mode of an ELTWISE layer.

    ``ops``/``bwd_ops``: operations per element of the forward and backward
    computations (one operation = one arithmetic step or one function such as
    exp, erf or rsqrt on one element); ``row``: a reduction over each row
    (the statistics of softmax or a norm) precedes the element-wise part;
    ``op_class``: the group reports put it in.
    """

    ops: int
    bwd_ops: int
    row: bool
    op_class: str


VECTOR_MODES: Mapping[str, VectorMode] = {
    # the original element-wise modes: one operation per output element
    "add": VectorMode(1, 0, False, "eltwise"),  # its gradient passes through: no backward layer
    "mul": VectorMode(1, 1, False, "eltwise"),
    "unary": VectorMode(1, 1, False, "activation"),
    # max, x - max, exp, row sum, x * (1 / sum); backward: dy*y, row sum, dy - s, * y
    "softmax": VectorMode(5, 4, True, "softmax"),
    # mean (sum), x - mean, square, row sum, * rsqrt(var), * gamma, + beta; backward: 9
    "layernorm": VectorMode(7, 9, True, "norm"),
    # square, row sum, * rsqrt(mean square), * gamma; backward: 6
    "rmsnorm": VectorMode(4, 6, True, "norm"),
    # x / sqrt(2), erf, + 1, * x, * 0.5 (the tanh form counts the same); backward: 6
    "gelu": VectorMode(5, 6, False, "activation"),
    # exp(-x), + 1, reciprocal, * x; backward: 5
    "silu": VectorMode(4, 5, False, "activation"),
    # x * constant (1 / sqrt(head dim), a mask added, a bias)
    "scale": VectorMode(1, 1, False, "scale"),
    # x * cos + rotate_half(x) * sin; the cos/sin tables are per position and shared by heads and samples
    "rotary": VectorMode(3, 3, False, "rotary"),
}
"""Modes of ELTWISE layers and the work each does per element (one place for these counts)."""


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
    any_layout: bool = False
    """The layer reads the input as a flat matrix: a layout op (reshape,
    transpose) may sit between producer and consumer, so only the element
    counts must agree."""


LOOP_DIMS = ("G", "C", "K", "Y", "X", "S", "R")
"""Per-sample loop dimensions of every layer (the batch ``N`` comes from the network)."""

_POOL_MODES = ("max", "avg")
_ELTWISE_MODES = tuple(VECTOR_MODES)


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

_MAC_OPS = frozenset({Op.CONV, Op.FC, Op.MATMUL})


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
    operand: Operand | None = None  # a MATMUL's second operand: weight or fmap
    yo: int = field(init=False)
    xo: int = field(init=False)

    # layers key the caches of every solve and estimate; their twenty fields
    # (the enums' hashes in Python) are hashed once
    __hash__ = kept_hash
    __getstate__ = without_kept_hash

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", Op(self.op))
        object.__setattr__(self, "phase", Phase(self.phase))
        where = f"layer '{self.name}'"
        if self.op == Op.MATMUL:
            if self.operand not in tuple(Operand):
                raise NetworkError(f"{where}: a matmul's second operand must be one of "
                                   f"{tuple(str(o) for o in Operand)} (got {self.operand!r})")
            object.__setattr__(self, "operand", Operand(self.operand))
            if (self.s, self.r, self.stride, self.pad, self.dilation) != (1, 1, (1, 1), (0, 0, 0, 0), (1, 1)):
                raise NetworkError(f"{where}: a matmul has no filter window, stride or padding")
        elif self.op == Op.ELTWISE and self.mode == "mul" and self.n_inputs == 1 and self.operand is not None:
            # A channel-wise scaling (squeeze-and-excitation): the fmap times a C x 1 x 1 vector on port ``b``.
            if self.operand != Operand.FMAP:
                raise NetworkError(f"{where}: a channel-wise scaling's second operand must be an fmap "
                                   f"(got {self.operand!r})")
            object.__setattr__(self, "operand", Operand.FMAP)
        elif self.operand is not None:
            raise NetworkError(f"{where}: only a matmul or a one-input eltwise 'mul' (a channel-wise scaling) "
                               f"has a second operand (got {self.operand!r})")
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
        if self.op == Op.MATMUL:
            return self._matmul_ports()
        if self.is_scale:
            return self._scale_ports()
        # Element-wise work does not care how its operands are laid out, only
        # that they hold as many elements as it computes.
        flat = self.op == Op.ELTWISE
        # Operands of an element-wise layer each deliver the whole tensor; a
        # one-operand (vector) layer may read a concatenation.
        merge = Merge.EACH if self.op == Op.ELTWISE and self.n_inputs > 1 else Merge.CONCAT
        if self.phase == Phase.FWD:
            return (Port("in", self.ifmap, merge, flat),)
        if self.phase == Phase.BWD_DATA:
            ports = [Port("dy", self.ofmap, any_layout=flat)]
            if self.backward_reads_input:
                ports.append(Port("x", self.ifmap, merge, flat))
            return tuple(ports)
        return (Port("x", self.ifmap), Port("dy", self.ofmap))

    def _matmul_ports(self) -> tuple[Port, ...]:
        """A matmul reads ``a`` (port ``in``, ``x`` in the weight gradient), ``dy``
        in backward phases, and an fmap operand ``b``; any layout of each."""
        a, dy = Port("in", self.ifmap, any_layout=True), Port("dy", self.ofmap, any_layout=True)
        b = (Port("b", self.operand_shape, any_layout=True),) if self.operand == Operand.FMAP else ()
        if self.phase == Phase.FWD:
            return (a, *b)
        if self.phase == Phase.BWD_DATA:  # dA = dY x B^T
            return (dy, *b)
        return (Port("x", self.ifmap, any_layout=True), dy)  # dB = A^T x dY (a weight gradient or dB)

    def _scale_ports(self) -> tuple[Port, ...]:
        """A channel-wise scaling ``y = x * b`` reads ``x`` (port ``in``) and
        the C x 1 x 1 vector ``b``; ``dx = dy * b`` reads ``dy`` and ``b``;
        ``db = sum over H x W of dy * x`` reads ``x`` and ``dy``. Channel ``c`` of
        ``b`` scales channel ``c`` of ``x``, so every layout but a concatenation of
        channels is refused (as a convolution's input is)."""
        b = Port("b", self.operand_shape)
        dy = Port("dy", self.ofmap, any_layout=True)  # the gradient of its own output, as every eltwise's
        if self.phase == Phase.FWD:
            return (Port("in", self.ifmap), b)
        if self.phase == Phase.BWD_DATA:
            return (dy, b)
        return (Port("x", self.ifmap), dy)

    @property
    def operand_shape(self) -> FmapShape:
        """A matmul's second operand per sample as an fmap: ``Kin`` x heads
        channels by ``Nout`` rows (the layout a K projection writes K in); a
        channel-wise scaling's (its groups are its channels): C x 1 x 1."""
        return FmapShape(self.c, self.k // self.groups, 1)

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
        if self.operand == Operand.FMAP:
            return self.operand_shape  # the gradient of the fmap operand, for its producer
        return None

    # -------------------------------------------------------------- loop nest

    @property
    def has_weights(self) -> bool:
        return self.op in (Op.CONV, Op.FC) or self.operand == Operand.WEIGHT

    @property
    def backward_reads_input(self) -> bool:
        """The backward-data layer of a layer without weights reads the forward
        input again: max pooling routes gradients to the arg-max, a product
        scales them by the other operand, a function or a row reduction needs
        its argument (softmax's needs its output, as many words, read in its place)."""
        if self.op == Op.POOL:
            return self.mode == "max"
        vm = self.vector_mode
        return vm is not None and vm.bwd_ops > 0

    @property
    def folds_batch(self) -> bool:
        """The batch runs as more groups (``G`` x batch, ``N`` = 1): a matmul
        whose second operand is an fmap, or a channel-wise scaling, whose vector
        is different in every sample, where the loop nest's weight tensor is
        the same for all samples."""
        return self.operand == Operand.FMAP

    @property
    def is_scale(self) -> bool:
        """A channel-wise scaling: an eltwise ``mul`` of one fmap by a C x 1 x 1
        vector (squeeze-and-excitation), the nest of a 1 x 1 depthwise
        convolution whose per-sample "weights" are the vector."""
        return self.op == Op.ELTWISE and self.operand == Operand.FMAP

    @property
    def vector_mode(self) -> VectorMode | None:
        return VECTOR_MODES[self.mode] if self.op == Op.ELTWISE and self.mode is not None else None

    @property
    def ops_per_point(self) -> int:
        """Operations per loop iteration: 1 for MACs, pooling and plain
        element-wise layers, the mode's count for vector work."""
        vm = self.vector_mode
        if vm is None:
            return 1
        return max(1, vm.ops if self.phase == Phase.FWD else vm.bwd_ops)

    @property
    def ops(self) -> int:
        """Operations per sample (MACs, compares, element-wise steps): what
        the cost model charges at the PE's operation energy and rate."""
        return self.loop_ops * self.ops_per_point

    @property
    def op_class(self) -> str:
        """The group reports put the layer in: conv, fc, pool, projection
        (a matmul by weights), attention (a matmul of two fmaps), and the vector
        modes' classes (softmax, norm, activation, scale, rotary, eltwise)."""
        if self.op == Op.MATMUL:
            return "projection" if self.operand == Operand.WEIGHT else "attention"
        vm = self.vector_mode
        return vm.op_class if vm is not None else str(self.op)

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
        return self.loop_ops if self.op in _MAC_OPS else 0

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
        elif self.op == Op.MATMUL:
            heads = f"{self.groups}x " if self.groups > 1 else ""
            rows = self.h * self.w
            text = f"matmul {heads}[{rows}x{self.c // self.groups}] x [{self.c // self.groups}x{self.k // self.groups}]"
            text += " by weights" if self.operand == Operand.WEIGHT else " of fmaps"
        elif self.is_scale:
            text = f"eltwise-mul {self.ofmap} by {self.operand_shape} per channel"
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


@lru_cache(maxsize=1 << 14)  # a network search keys its layer solves and costs by it, many times a layer
def shape_key(layer: Layer) -> Layer:
    """The layer with its identity removed: equal keys need equal schemes and costs
    (the key of a layer solve, and of a layer's cost in a segment)."""
    # a copy of its fields, not made anew: they were checked when the layer was
    # (a deep network's thousands of layers took a tenth of a second more)
    key: Layer = copied(layer, name="_", forward=None)
    return key
