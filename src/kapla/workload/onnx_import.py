"""Import an ONNX model as a kapla :class:`~kapla.workload.network.Network`.

kapla schedules the layers that move and compute feature maps. An ONNX graph
has many more operators, so the importer walks the graph once, in its
(topological) node order, and keeps for every ONNX tensor one of:

* a *feature map*: the kapla producers (layers or network inputs) whose
  outputs, concatenated, form the tensor, each maybe a channel or row range
  of its producer (:class:`_Part`; ``Split``/``Slice``/``Gather`` of a
  projection's output). A ``Concat`` is the list of its operands' parts;
* a *constant*: an initializer or anything computed from constants only
  (weights, biases, reshape targets, ``Shape`` arithmetic). Constants cost
  nothing per sample, so they never become layers;
* a *side input*: what is computed from non-feature graph inputs only
  (integer attention masks, position ids, token ids, and what constant
  tables they look up): per-sample data that broadcasts into a layer (a
  mask added to the scores, rotary cos/sin) but is no fmap. One read where
  a layer needs a feature map (token embeddings looked up by ids) is a
  network input: its rows come from DRAM with the sample;
* *pending element-wise work* on one feature map (:class:`_Pending`), or a
  *row statistic* of it (:class:`_Stat`, a ``ReduceMean``): the nodes of a
  decomposed LayerNorm, RMSNorm, GELU (``Erf`` form), SiLU or rotary
  embedding are gathered until a consumer needs the result, then become one
  vector layer of that mode; a chain of other element-wise steps with
  constants or side inputs (scaling by 1/sqrt(d), a mask added by ``Add`` or
  selected by ``Where``) becomes one ``scale`` layer per step. Two different
  feature maps meet in an element-wise layer of equal shapes; the one
  broadcast kapla takes is a ``Mul`` of an ``[N, C, H, W]`` fmap by an
  ``[N, C, 1, 1]`` vector a node of the graph computes (squeeze-and-excitation):
  a channel-wise scaling (:meth:`NetworkBuilder.scale`).

Layout operators (``Reshape``, ``Transpose``, ``Squeeze``, ``Unsqueeze``,
``Flatten``, ``Expand``, ``Cast``, ``Identity``, ``Dropout``) carry shapes
and cost nothing: their output is their input, re-read in the consumer's
order (the cost model counts words, not their order; the layer after a
layout op reads as many words as it would have). ``Expand`` of a K or V
head (grouped-query attention's ``repeat_kv``) is remembered, so the
product reads each K/V head once for its query heads. Biases added to a
projection's output are folded into it (kapla's convention: weights exclude
biases); ReLU-like activations, batch norm and LRN fold into their producer
as before; softmax, norms, GELU, SiLU, scaling and masking never do.

``MatMul`` of any rank becomes a MATMUL layer (the batch is the first axis,
the other leading axes are heads, broadcasting B's heads over A's), by
weights when B is a constant, of two fmaps otherwise (Q x K^T, scores x
V: no weights); ``Gemm`` and a rank-2 ``MatMul`` by weights are FC layers.
Graph inputs of integer type (attention masks, ids) are side inputs; an
embedding lookup read as a feature map is a network input, as is a constant
concatenated to an fmap (ViT's class token). Symbolic dims are bound before ONNX shape inference: the first
axis of every graph input by the batch, every other by ``seq``.

Every CONV/POOL layer the importer creates is checked against the shape ONNX
shape inference gives its input and output, so a model kapla would misread
(say, a ``Reshape`` that reorganises an fmap before a convolution) is
reported with the node's name instead of being scheduled wrongly.

Errors are one line starting with the file name: :class:`SpecError` for a file
that is not an ONNX model, :class:`UnsupportedOpError` for operators (or uses
of them) kapla cannot represent or cost (``Loop``, ``If``, ``Scan``, custom
domains), :class:`NetworkError` for shapes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from kapla.errors import KaplaError, NetworkError, SpecError, UnsupportedOpError
from kapla.workload.layer import FmapShape, Layer, Op, Operand
from kapla.workload.network import Edge, Network, NetworkBuilder

Dims = tuple[int | None, ...]  # an ONNX tensor shape; None marks a symbolic or unknown dim

_DEFAULT_DOMAINS = ("", "ai.onnx")
_UNCOSTED = ("Loop", "If", "Scan")  # control flow: work kapla cannot count without running the model

#: Ops that compute on a feature map: a side input they read is data (looked-up embeddings), not metadata.
_WORK_OPS = frozenset({"MatMul", "Gemm", "Conv", "Softmax", "LayerNormalization", "RMSNormalization", "Gelu",
                       "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})

#: ONNX element types of feature maps; every other graph input (ids, masks) is a side input.
_FLOAT_TYPES = frozenset({onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16,
                          onnx.TensorProto.DOUBLE})


def load_onnx(path: str | Path, batch: int | None = None, name: str | None = None,
              seq: int | None = None) -> Network:
    """Read the ONNX model at ``path`` as a kapla network.

    Floating-point graph inputs that are not initializers become network
    inputs (``N x C x H x W``, ``N x C``, or ``N x tokens x features``, read
    as ``features`` channels by ``tokens`` rows); integer inputs (attention
    masks, token and position ids) are side inputs. The network's batch is
    ``batch`` when given, else the inputs' static batch dimension, else 1;
    ``seq`` binds every other symbolic dim of the graph inputs (the sequence
    length). ``name`` defaults to the file's stem (exporters' graph names,
    e.g. ``main_graph``, rarely say which model it is).
    """
    path = Path(path)
    model = _read_model(path, batch, seq)
    return _Importer(path, model, batch, name or path.stem).run()


# --------------------------------------------------------------- reading


def _read_model(path: Path, batch: int | None = None, seq: int | None = None) -> onnx.ModelProto:
    """Parse, bind symbolic dims and shape-infer the model, or raise :class:`SpecError` naming the file."""
    try:
        # Weights are not needed (only their shapes, which the tensor header
        # carries), so external weight files are not read.
        model = onnx.load(str(path), load_external_data=False)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    except Exception as exc:  # protobuf's DecodeError and friends
        raise SpecError(f"{path}: not a valid ONNX model ({_first_line(exc)})") from None
    # Arbitrary bytes occasionally parse as a protobuf message with no graph.
    if not model.HasField("graph") or not model.graph.node:
        raise SpecError(f"{path}: not a valid ONNX model (it has no graph nodes)")
    for index, proto in enumerate(model.graph.node):  # before shape inference, which may choke on them
        if proto.op_type in _UNCOSTED or proto.domain not in _DEFAULT_DOMAINS:
            op = proto.op_type if proto.domain in _DEFAULT_DOMAINS else f"{proto.domain}.{proto.op_type}"
            label = f"node '{proto.name}' (op {op})" if proto.name else f"node #{index} (op {op})"
            raise UnsupportedOpError(f"{path}: {label} is not supported; kapla cannot cost control flow or "
                                     "custom-domain ops")
    _bind_dims(model.graph, batch, seq)
    try:
        return shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception as exc:
        raise SpecError(f"{path}: ONNX shape inference failed ({_first_line(exc)})") from None


def _bind_dims(graph: onnx.GraphProto, batch: int | None, seq: int | None) -> None:
    """Give the graph inputs' symbolic dims values: the first axis the batch
    (1 when none is given: the network's batch is set apart from the model's),
    the others ``seq`` when given; the same names elsewhere in the graph too."""
    consts = {t.name for t in graph.initializer}
    bound: dict[str, int] = {}
    for value in graph.input:
        if value.name in consts or not value.type.HasField("tensor_type"):
            continue
        for axis, dim in enumerate(value.type.tensor_type.shape.dim):
            if dim.HasField("dim_value") and dim.dim_value > 0:
                continue
            size = (batch or 1) if axis == 0 else seq
            if size is None:
                continue
            if dim.HasField("dim_param") and dim.dim_param:
                bound.setdefault(dim.dim_param, size)
            dim.dim_value = size
    if not bound:
        return
    for value in (*graph.value_info, *graph.output):
        if not value.type.HasField("tensor_type"):
            continue
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_param") and dim.dim_param in bound:
                dim.dim_value = bound[dim.dim_param]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _tensor_dims(value: onnx.ValueInfoProto) -> Dims | None:
    t = value.type
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                 for d in t.tensor_type.shape.dim)


def _as_fmap(dims: Dims | None) -> FmapShape | None:
    """The per-sample C x H x W of an NCHW or NC tensor shape, if fully known."""
    if dims is None or len(dims) not in (2, 4) or any(d is None for d in dims[1:]):
        return None
    c, h, w = (*(d for d in dims[1:] if d is not None), 1, 1)[:3]
    return FmapShape(c, h, w)


def _as_tokens(dims: Dims | None) -> FmapShape | None:
    """A per-sample ``[..., features]`` shape as ``features`` channels by the
    positions before them as rows (rank 3 and up), if fully known."""
    if dims is None or len(dims) < 3 or any(d is None for d in dims[1:]):
        return None
    known = [d for d in dims[1:] if d is not None]
    return FmapShape(known[-1], math.prod(known[:-1]), 1)


def _layer_names(graph: onnx.GraphProto) -> list[str]:
    """Layer names: the node's own name when present and unique, else ``<op>_<index>``."""
    counts: dict[str, int] = {}
    for node in graph.node:
        counts[node.name] = counts.get(node.name, 0) + 1
    used = {i.name for i in graph.input}
    names = []
    for index, node in enumerate(graph.node):
        label = node.name
        if not label or counts[label] > 1 or label in used:
            label = f"{node.op_type.lower()}_{index}"
            while label in used or counts.get(label, 0):  # never steal a real node's name
                label += "_"
        used.add(label)
        names.append(label)
    return names


# --------------------------------------------------------------- what a tensor is


@dataclass(frozen=True)
class _Part:
    """A kapla producer's output, or a channel or row range of it, that is part of a tensor."""

    src: str
    channels: tuple[int, int] | None = None
    rows: tuple[int, int] | None = None

    def edge(self, dst: str, port: str = "in") -> Edge:
        return Edge(self.src, dst, port, self.channels, self.rows)

    @property
    def whole(self) -> bool:
        return self.channels is None and self.rows is None


Parts = tuple[_Part, ...]


@dataclass(frozen=True)
class _Pending:
    """Element-wise work on the fmap ``base`` not yet made a layer.

    ``ops``: the ONNX op types of its steps in order, ``nodes``: their layer
    names; ``reductions``: row reductions among them (a norm has two, RMS
    norm one); ``sliced``: parts of the base were cut and put back together
    (``rotate_half`` of a rotary embedding); ``cut``: it is one such part.
    """

    base: Parts
    ops: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    reductions: int = 0
    sliced: bool = False
    cut: bool = False

    def then(self, op: str, node: str) -> _Pending:
        return replace(self, ops=self.ops + (op,), nodes=self.nodes + (node,))


@dataclass(frozen=True)
class _Stat:
    """Row statistics (a mean, a variance, their root) of the fmap ``base``."""

    base: Parts
    ops: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    reductions: int = 1


#: Element-wise ONNX ops: arithmetic and functions (with broadcasting).
_ARITH = ("Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "Neg", "Erf", "Tanh", "Sigmoid", "Exp",
          "Where", "Max", "Min", "Abs", "Log")
_REDUCE = ("ReduceMean", "ReduceSum", "ReduceMax")


def _mode_of(p: _Pending) -> str | None:
    """The vector mode a gathered run of element-wise steps computes, or
    None for plain arithmetic (one ``scale`` layer per step)."""
    ops = set(p.ops)
    if p.reductions and "Exp" in ops:
        return "softmax"
    if p.reductions >= 2:
        return "layernorm"
    if p.reductions == 1:
        return "rmsnorm"
    if ops & {"Erf", "Tanh"}:
        return "gelu"
    if "Sigmoid" in ops:
        return "silu"
    if p.sliced:
        return "rotary"
    return None


# --------------------------------------------------------------- import


@dataclass(frozen=True)
class _Node:
    """One ONNX node with what the handlers need: attributes, layer name, label for messages."""

    proto: onnx.NodeProto
    index: int
    name: str  # the kapla layer name, if the node becomes a layer
    attrs: dict[str, Any]

    @property
    def op(self) -> str:
        p = self.proto
        return p.op_type if p.domain in _DEFAULT_DOMAINS else f"{p.domain}.{p.op_type}"

    @property
    def label(self) -> str:
        p = self.proto
        return f"node '{p.name}' (op {self.op})" if p.name else f"node #{self.index} (op {self.op})"

    def attr(self, key: str, default: Any = None) -> Any:
        value = self.attrs.get(key, default)
        return value.decode() if isinstance(value, bytes) else value

    @property
    def inputs(self) -> list[str]:
        return list(self.proto.input)  # "" marks an omitted optional input

    @property
    def out(self) -> str:
        return self.proto.output[0]


class _Importer:
    """Walks one ONNX graph and feeds a :class:`NetworkBuilder`."""

    def __init__(self, path: Path, model: onnx.ModelProto, batch: int | None, name: str) -> None:
        self.path = path
        self.graph = model.graph
        self.dims: dict[str, Dims] = {}
        for value in (*self.graph.value_info, *self.graph.input, *self.graph.output):
            dims = _tensor_dims(value)
            if dims is not None:
                self.dims[value.name] = dims
        self.consts: set[str] = set()
        self.values: dict[str, np.ndarray] = {}  # the constants whose values slicing needs
        for tensor in self.graph.initializer:
            self.consts.add(tensor.name)
            self.dims[tensor.name] = tuple(int(d) for d in tensor.dims)
            if tensor.data_type == onnx.TensorProto.INT64 and math.prod(tensor.dims) <= 64:
                self.values[tensor.name] = numpy_helper.to_array(tensor)
        for sparse in self.graph.sparse_initializer:
            self.consts.add(sparse.values.name)
            self.dims[sparse.values.name] = tuple(int(d) for d in sparse.dims)
        self.sides: set[str] = set()
        self.fmaps: dict[str, Parts] = {}
        self.pending: dict[str, _Pending] = {}
        self.stats: dict[str, _Stat] = {}
        self.parent: dict[Parts, Parts] = {}  # a slice's parts -> the parts it was cut from
        self.repeat: dict[str, int] = {}  # fmaps that an Expand repeats (K/V heads shared by query heads)
        self.made: dict[str, str] = {}  # layer name -> the op it came from (for bias folding)
        self.unusable: dict[str, str] = {}  # graph inputs kapla cannot read -> why
        self.builder = NetworkBuilder(name, 1 if batch is None else batch)
        self.batch_given = batch is not None
        self.sample = 1  # the model's own batch: per-sample sizes are ONNX sizes over it

    # -- driver

    def run(self) -> Network:
        self._add_inputs()
        for index, (proto, layer_name) in enumerate(zip(self.graph.node, _layer_names(self.graph), strict=True)):
            attrs = {a.name: helper.get_attribute_value(a) for a in proto.attribute}
            self._import_node(_Node(proto, index, layer_name, attrs))
        for out in self.graph.output:  # element-wise work at the end of the graph is work too
            if out.name in self.pending:
                self.realize(out.name)
        try:
            return self.builder.build()
        except NetworkError as exc:
            raise NetworkError(f"{self.path}: {exc}") from None

    def _add_inputs(self) -> None:
        """Declare the non-initializer graph inputs and take the batch from them."""
        batches: dict[str, int] = {}
        for value in self.graph.input:
            if value.name in self.consts:  # old exporters list initializers as inputs too
                continue
            t = value.type
            if t.HasField("tensor_type") and t.tensor_type.elem_type not in _FLOAT_TYPES:
                self.sides.add(value.name)  # ids and masks: no feature map
                continue
            dims = _tensor_dims(value)
            shape = _as_fmap(dims) or _as_tokens(dims)
            if shape is None:
                # Reported only if a layer reads it, so that, say, an LSTM
                # model's N x T x C input does not hide the unsupported LSTM.
                self.unusable[value.name] = (f"{self.path}: graph input '{value.name}' has shape {_show(dims)}; "
                                             "kapla needs a static N x C x H x W, N x C or N x tokens x features "
                                             "shape (bind a symbolic sequence length with --seq)")
                continue
            self.builder.input(value.name, shape.c, shape.h, shape.w)
            self.fmaps[value.name] = (_Part(value.name),)
            if dims and dims[0] is not None:
                batches[value.name] = dims[0]
        if batches:
            if len(set(batches.values())) > 1:
                raise NetworkError(f"{self.path}: graph inputs disagree on the batch size {batches}; pass a batch")
            self.sample = next(iter(batches.values()))
        if not self.batch_given and batches:
            self.builder.batch = self.sample  # an explicit batch wins; a symbolic batch dim means 1

    def _import_node(self, node: _Node) -> None:
        used = [t for t in node.inputs if t]
        for t in used:
            if not self.known(t):
                raise NetworkError(f"{self.path}: {node.label} reads '{t}', which no graph input, "
                                   "initializer or earlier node produces")
        # A node that reads no feature map belongs to the model's constant or
        # shape arithmetic, or to its masks and ids: it does no per-sample work.
        if all(t in self.consts for t in used):
            self.consts.update(o for o in node.proto.output if o)
            self._keep_value(node)
            return
        if all(t in self.consts or t in self.sides for t in used) and node.op not in _WORK_OPS:
            self.sides.update(o for o in node.proto.output if o)
            return
        handler = _HANDLERS.get(node.op) if node.proto.domain in _DEFAULT_DOMAINS else None
        if handler is None:
            raise UnsupportedOpError(
                f"{self.path}: {node.label} is not supported; supported ops: {', '.join(sorted(_HANDLERS))}")
        try:
            handler(self, node)
        except KaplaError as exc:
            if str(exc).startswith(f"{self.path}: "):
                raise
            # Builder errors name the layer but not the file or the ONNX op.
            raise type(exc)(f"{self.path}: {node.label}: {exc}") from None

    def _keep_value(self, node: _Node) -> None:
        """Small integer constants (slice bounds, split sizes) by value."""
        if node.op == "Constant" and node.proto.output:
            value = node.attrs.get("value")
            if isinstance(value, onnx.TensorProto) and math.prod(value.dims) <= 64:
                self.values[node.out] = numpy_helper.to_array(value)

    def known(self, t: str) -> bool:
        return (t in self.fmaps or t in self.consts or t in self.unusable or t in self.sides
                or t in self.pending or t in self.stats)

    # -- helpers for handlers

    def fail(self, node: _Node, message: str, error: type[KaplaError] = UnsupportedOpError) -> KaplaError:
        return error(f"{self.path}: {node.label}: {message}")

    def fmap(self, node: _Node, i: int) -> tuple[str, ...]:
        """The kapla producers of the node's ``i``-th input, a whole feature map
        (what CONV, POOL and FC layers read: no ranges of producers)."""
        if i >= len(node.inputs) or not node.inputs[i]:
            raise self.fail(node, f"input {i} is missing", SpecError)
        tensor = node.inputs[i]
        if tensor in self.consts:
            raise self.fail(node, f"input {i} ('{tensor}') is a constant where kapla expects a feature map")
        parts = self.parts(node, tensor)
        if not all(p.whole for p in parts):
            raise self.fail(node, f"input '{tensor}' is a slice of {[p.src for p in parts]}; a {node.op} reads "
                                  "whole feature maps")
        return tuple(p.src for p in parts)

    def producers(self, tensor: str) -> tuple[str, ...]:
        """The kapla producers of a feature-map tensor."""
        if tensor in self.unusable:
            raise NetworkError(self.unusable[tensor])
        return tuple(p.src for p in self.fmaps[tensor])

    def parts(self, node: _Node, tensor: str, repeated: bool = False) -> Parts:
        """The parts of a feature-map tensor, making pending work a layer first.
        ``repeated``: the reader takes an fmap an ``Expand`` repeats (a product's operand)."""
        if tensor in self.unusable:
            raise NetworkError(self.unusable[tensor])
        if tensor in self.stats:
            raise self.fail(node, f"input '{tensor}' is a row statistic (a {'/'.join(self.stats[tensor].ops)}); "
                                  "kapla reads it only inside a norm")
        if tensor in self.sides:
            self._side_input(node, tensor)
        if tensor in self.consts:
            raise self.fail(node, f"input '{tensor}' is a constant where kapla expects a feature map")
        if tensor in self.pending:
            self.realize(tensor)
        if self.repeat.get(tensor, 1) > 1 and not repeated:
            raise self.fail(node, f"input '{tensor}' repeats a feature map {self.repeat[tensor]} times "
                                  "(Expand); kapla reads such a tensor only as a matrix product's operand")
        return self.fmaps[tensor]

    def _side_input(self, node: _Node, tensor: str) -> None:
        """A side input read as a feature map (embeddings looked up by token
        ids): a network input, the rows read from DRAM with each sample."""
        dims = self.dims.get(tensor)
        shape = _as_tokens(dims) or _as_fmap(dims)
        if shape is None:
            raise self.fail(node, f"input '{tensor}' comes from the model's ids or masks (shape {_show(dims)}), "
                                  "not a feature map")
        self.sides.discard(tensor)
        self.builder.input(tensor, shape.c, shape.h, shape.w)
        self.fmaps[tensor] = (_Part(tensor),)

    def kind(self, tensor: str) -> str:
        for name, table in (("const", self.consts), ("side", self.sides), ("pending", self.pending),
                            ("stat", self.stats), ("fmap", self.fmaps)):
            if tensor in table:
                return name
        return "unusable"

    def base(self, tensor: str) -> Parts:
        """The fmap element-wise work on ``tensor`` works on."""
        if tensor in self.pending:
            return self.pending[tensor].base
        if tensor in self.stats:
            return self.stats[tensor].base
        if tensor in self.unusable:
            raise NetworkError(self.unusable[tensor])
        return self.fmaps[tensor]

    def elems(self, parts: Parts) -> int:
        """Per-sample elements of a tensor made of ``parts``."""
        total = 0
        for p in parts:
            shape = self.builder.shape_of(p.src)
            c = p.channels[1] - p.channels[0] if p.channels else shape.c
            rows = p.rows[1] - p.rows[0] if p.rows else shape.h
            total += c * rows * shape.w
        return total

    def per_sample(self, tensor: str) -> Dims | None:
        """The ONNX shape of ``tensor`` but its first (batch) axis."""
        dims = self.dims.get(tensor)
        return None if dims is None else dims[1:]

    def known_dims(self, node: _Node, tensor: str) -> tuple[int, ...]:
        """The ONNX shape of ``tensor``, its batch axis the model's batch if
        shape inference lost it (a mask sliced by a computed length)."""
        dims = self.dims.get(tensor)
        if dims:
            dims = (dims[0] or self.sample, *dims[1:])
        if dims is None or any(d is None for d in dims):
            raise self.fail(node, f"the shape of '{tensor}' is unknown ({_show(dims)}); bind symbolic dims "
                                  "with --batch and --seq", NetworkError)
        return tuple(d for d in dims if d is not None)

    def const_dims(self, node: _Node, i: int, what: str) -> tuple[int, ...]:
        """The static shape of the node's ``i``-th input, which must be a constant (weights)."""
        tensor = node.inputs[i] if i < len(node.inputs) else ""
        if tensor not in self.consts:
            raise self.fail(node, f"{what} '{tensor}' must be a constant (an initializer), not a feature map")
        dims = self.dims.get(tensor)
        if dims is None or any(d is None for d in dims):
            raise self.fail(node, f"the shape of {what} '{tensor}' is unknown", NetworkError)
        return tuple(d for d in dims if d is not None)

    def shape_in(self, node: _Node, srcs: Sequence[str]) -> FmapShape:
        """The fmap kapla will feed the node, checked against ONNX's view of input 0.

        Folded reshapes keep the producer's C x H x W; a spatial layer fed by
        one that really reorganised the data would be misread, so refuse it.
        """
        shapes = [self.builder.shape_of(s) for s in srcs]
        ours = FmapShape(sum(s.c for s in shapes), shapes[0].h, shapes[0].w)
        theirs = self.dims.get(node.inputs[0])
        if theirs is not None and len(theirs) != 4:
            raise self.fail(node, f"input '{node.inputs[0]}' has rank {len(theirs)}; "
                                  "kapla supports 2-D (N x C x H x W) convolution and pooling")
        onnx_shape = _as_fmap(theirs)
        if onnx_shape is not None and onnx_shape != ours:
            raise self.fail(node, f"input '{node.inputs[0]}' is {onnx_shape} in the model but {ours} after "
                                  "folding reshapes, which kapla cannot follow", NetworkError)
        return ours

    def define(self, node: _Node, layer: str) -> None:
        """Bind the node's output to the new layer, checking it against ONNX shape inference."""
        out = node.out
        ours = self.builder.shape_of(layer)
        dims = self.dims.get(out)
        theirs = _as_fmap(dims)
        if dims is not None and theirs is not None and (theirs != ours if len(dims) == 4
                                                        else theirs.elems != ours.elems):
            raise self.fail(node, f"kapla computes output {ours} but the model says {_show(dims)}",
                            NetworkError)
        self.fmaps[out] = (_Part(layer),)
        self.made[layer] = node.op

    def add(self, node: _Node, layer: Layer, edges: Sequence[Edge], out: str | None = None) -> None:
        """Add a layer the transformer handlers built; its output is ``out`` (the node's)."""
        self.builder.add_layer(layer, edges)
        self.fmaps[out or node.out] = (_Part(layer.name),)
        self.made[layer.name] = node.op

    def alias(self, node: _Node, srcs: tuple[str, ...]) -> None:
        self.fmaps[node.out] = tuple(_Part(s) for s in srcs)

    def same(self, node: _Node, tensor: str, out: str | None = None) -> None:
        """The node's output is ``tensor``, whatever it is (a layout op)."""
        out = out or node.out
        tables: tuple[dict[str, Any], ...] = (self.fmaps, self.pending, self.stats, self.repeat)
        for table in tables:
            if tensor in table:
                table[out] = table[tensor]
        for table_set in (self.sides, self.consts):
            if tensor in table_set:
                table_set.add(out)
        if tensor in self.unusable:
            self.unusable[out] = self.unusable[tensor]

    # -- pending element-wise work

    def realize(self, tensor: str) -> None:
        """Make the pending work on ``tensor`` layers: one of a vector mode, or
        one ``scale`` layer per step of plain arithmetic."""
        p = self.pending.pop(tensor)
        if p.cut:
            raise UnsupportedOpError(f"{self.path}: '{tensor}' is a slice of {[q.src for q in p.base]} that is no "
                                     "channel or row range of it; kapla reads such slices only inside a rotary "
                                     "embedding")
        if not p.nodes:  # slices put back as they were: a layout change, no work
            self.fmaps[tensor] = p.base
            return
        mode = _mode_of(p)
        shape = self.vector_shape(p.base)
        if mode is not None:
            self._vector(p.nodes[-1], shape, mode, p.base)
        else:
            prev: Parts = p.base
            for step in p.nodes:
                self._vector(step, shape, "scale", prev)
                prev = (_Part(step),)
        self.fmaps[tensor] = (_Part(p.nodes[-1]),)

    def _vector(self, name: str, shape: FmapShape, mode: str, parts: Parts) -> None:
        if name in self.made:  # a step an earlier consumer of the same work made a layer already
            return
        layer = Layer(name, Op.ELTWISE, shape.c, shape.c, shape.h, shape.w, mode=mode)
        self.builder.add_layer(layer, [q.edge(name) for q in parts])
        self.made[name] = mode

    def vector_shape(self, parts: Parts) -> FmapShape:
        """The shape of a vector layer over ``parts``: its producer's, if it is
        one whole output (so a convolution can read it back), else the parts'
        channels by as many rows as they hold."""
        shapes = [self.builder.shape_of(p.src) for p in parts]
        if len(parts) == 1 and parts[0].whole:
            return shapes[0]
        channels = {(p.channels[1] - p.channels[0]) if p.channels else s.c for p, s in zip(parts, shapes, strict=True)}
        c = channels.pop() if len(channels) == 1 else 1
        return FmapShape(c, self.elems(parts) // c, 1)

    def vector(self, node: _Node, mode: str, i: int = 0) -> None:
        """A vector layer of ``mode`` over the node's ``i``-th input."""
        parts = self.parts(node, node.inputs[i])
        self._vector(node.name, self.vector_shape(parts), mode, parts)
        self.fmaps[node.out] = (_Part(node.name),)


def _show(dims: Dims | Sequence[int] | None) -> str:
    if dims is None:
        return "unknown"
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


# --------------------------------------------------------------- handlers


def _fold(imp: _Importer, node: _Node) -> None:
    """No work and no change to the data that matters (a layout op, an
    activation folded into its producer): the output is the input."""
    imp.same(node, node.inputs[0])


def _constant(imp: _Importer, node: _Node) -> None:
    """Shape metadata of an fmap (``Shape``, ``Size``) is a constant."""
    imp.consts.update(o for o in node.proto.output if o)


def _pair(imp: _Importer, node: _Node, key: str, default: Sequence[int]) -> tuple[int, int]:
    """A 2-D (height, width) attribute such as kernel_shape, strides or dilations."""
    value = tuple(node.attr(key, default))
    if len(value) != 2:
        raise imp.fail(node, f"{key} {list(value)} is not 2-D; kapla supports 2-D (N x C x H x W) layers")
    return value[0], value[1]


def _pads(imp: _Importer, node: _Node, shape: FmapShape, kernel: Sequence[int],
          strides: Sequence[int], dilations: Sequence[int]) -> tuple[int, int, int, int]:
    """Explicit (top, left, bottom, right) padding, resolving ``auto_pad``.

    ONNX lists pads as (h_begin, w_begin, h_end, w_end), which is kapla's order.
    SAME_* pads so that ``out = ceil(in / stride)``; the odd pixel goes at the
    end for SAME_UPPER and at the beginning for SAME_LOWER.
    """
    auto = node.attr("auto_pad", "NOTSET")
    if auto == "NOTSET":
        pads = tuple(node.attr("pads", [0, 0, 0, 0]))
        if len(pads) != 4:
            raise imp.fail(node, f"pads {list(pads)} are not 2-D (top, left, bottom, right)")
        return pads[0], pads[1], pads[2], pads[3]
    if auto == "VALID":
        return (0, 0, 0, 0)
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise imp.fail(node, f"auto_pad {auto!r} is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", SpecError)
    lo, hi = [], []
    for size, k, s, d in zip((shape.h, shape.w), kernel, strides, dilations, strict=True):
        out = -(-size // s)
        total = max(0, (out - 1) * s + d * (k - 1) + 1 - size)
        begin = total // 2 if auto == "SAME_UPPER" else total - total // 2
        lo.append(begin)
        hi.append(total - begin)
    return (lo[0], lo[1], hi[0], hi[1])


def _conv(imp: _Importer, node: _Node) -> None:
    srcs = imp.fmap(node, 0)
    w = imp.const_dims(node, 1, "weight")  # K x C/group x kh x kw
    kernel = _pair(imp, node, "kernel_shape", w[2:])
    shape = imp.shape_in(node, srcs)
    groups = node.attr("group", 1)
    if w[1] * groups != shape.c:
        raise imp.fail(node, f"weight {_show(w)} with group={groups} expects {w[1] * groups} input "
                             f"channels but the input has {shape.c}", NetworkError)
    strides, dilations = _pair(imp, node, "strides", (1, 1)), _pair(imp, node, "dilations", (1, 1))
    pads = _pads(imp, node, shape, kernel, strides, dilations)
    imp.define(node, imp.builder.conv(node.name, list(srcs), w[0], kernel, strides, pads, groups, dilations))


def _fc(imp: _Importer, node: _Node, out_axis: int) -> None:
    """Input 0 by the constant weight matrix input 1 (holding K along ``out_axis``):
    an FC layer if input 0 is one vector per sample, else a matmul by weights
    over its positions (a projection of every token)."""
    w = imp.const_dims(node, 1, "weight")
    if len(w) != 2:
        raise imp.fail(node, f"weight {_show(w)} is not a matrix")
    k, features = w[out_axis], w[1 - out_axis]
    parts = imp.parts(node, node.inputs[0])
    elems = imp.elems(parts)
    if elems == features and all(p.whole for p in parts):
        imp.define(node, imp.builder.fc(node.name, [p.src for p in parts], k, in_features=features))
        return
    if elems % features:
        raise imp.fail(node, f"input '{node.inputs[0]}' holds {elems:,} elements per sample, no whole number of "
                             f"{features}-feature rows", NetworkError)
    layer = Layer(node.name, Op.MATMUL, features, k, elems // features, 1, operand=Operand.WEIGHT)
    imp.add(node, layer, [p.edge(node.name) for p in parts])


def _gemm(imp: _Importer, node: _Node) -> None:
    if node.attr("transA", 0):
        raise imp.fail(node, "transA=1 (a transposed feature map) is not supported")
    # B is K x C with transB=1 (PyTorch's Linear), else C x K; C (the bias) is ignored.
    _fc(imp, node, out_axis=0 if node.attr("transB", 0) else 1)


def _matmul(imp: _Importer, node: _Node) -> None:
    """``[..., M, K] x [..., K, N]``: by weights when B is a constant, else a product of two fmaps."""
    a, b = node.inputs[0], node.inputs[1]
    if a in imp.consts:
        raise imp.fail(node, "the constant is the left operand (W x X); kapla's FC layers compute X x W")
    if b in imp.consts:
        w = imp.const_dims(node, 1, "weight")
        if len(w) <= 2:
            _fc(imp, node, out_axis=1)
            return
        heads, k, n = math.prod(w[:-2]), w[-2], w[-1]  # one weight matrix per head
        parts = imp.parts(node, a)
        rows, rest = divmod(imp.elems(parts), heads * k)
        if rest:
            raise imp.fail(node, f"input '{a}' does not split into {heads} heads of {k}-feature rows", NetworkError)
        layer = Layer(node.name, Op.MATMUL, heads * k, heads * n, rows, 1, groups=heads, operand=Operand.WEIGHT)
        imp.add(node, layer, [p.edge(node.name) for p in parts])
        return
    if b in imp.sides:
        raise imp.fail(node, f"operand '{b}' comes from the model's ids or masks, not a feature map")
    da, db = imp.known_dims(node, a), imp.known_dims(node, b)
    k, n = da[-1], db[-1]
    if len(db) < 2 or db[-2] != k:
        raise imp.fail(node, f"operands {_show(da)} and {_show(db)} do not multiply", NetworkError)
    a_parts, b_parts = imp.parts(node, a), imp.parts(node, b, repeated=True)
    # Heads are counted in B's own elements: an Expand that repeats K/V
    # heads for several query heads (grouped-query attention) adds none, and
    # the query heads that share one become rows of its product.
    heads, rest = divmod(imp.elems(b_parts), k * n)
    rows, rest_a = divmod(imp.elems(a_parts), max(1, heads) * k)
    if rest or rest_a or heads < 1:
        raise imp.fail(node, f"operands '{a}' {_show(da)} and '{b}' {_show(db)} do not split into heads "
                             "kapla can map", NetworkError)
    layer = Layer(node.name, Op.MATMUL, heads * k, heads * n, rows, 1, groups=heads, operand=Operand.FMAP)
    imp.add(node, layer, [p.edge(node.name) for p in a_parts] + [p.edge(node.name, "b") for p in b_parts])


def _pool(imp: _Importer, node: _Node) -> None:
    srcs = imp.fmap(node, 0)
    kernel = _pair(imp, node, "kernel_shape", ())
    shape = imp.shape_in(node, srcs)
    # ONNX pools default to stride 1 (kapla's builder defaults to the kernel).
    strides, dilations = _pair(imp, node, "strides", (1, 1)), _pair(imp, node, "dilations", (1, 1))
    if dilations != (1, 1):
        raise imp.fail(node, f"dilated pooling (dilations={list(dilations)}) is not supported")
    pads = _pads(imp, node, shape, kernel, strides, dilations)
    mode = "max" if node.op == "MaxPool" else "avg"
    imp.define(node, imp.builder.pool(node.name, list(srcs), kernel, strides, pads, mode,
                                      bool(node.attr("ceil_mode", 0))))


def _global_pool(imp: _Importer, node: _Node) -> None:
    srcs = imp.fmap(node, 0)
    imp.shape_in(node, srcs)
    mode = "max" if node.op == "GlobalMaxPool" else "avg"
    imp.define(node, imp.builder.global_pool(node.name, list(srcs), mode))


def _arith(imp: _Importer, node: _Node) -> None:
    """Element-wise arithmetic and functions, with broadcasting.

    Steps on one fmap (with constants, side inputs or the fmap's own row
    statistics) gather as pending work; two different fmaps meet in an
    element-wise layer (``add`` for Add/Sub/Sum/Where/Max/Min, ``mul`` for
    Mul/Div) once their pending work is made layers.
    """
    ins = [t for t in node.inputs if t]
    if node.op == "Where":
        if imp.kind(ins[0]) not in ("const", "side"):
            raise imp.fail(node, f"condition '{ins[0]}' is a feature map; kapla masks by constants or side inputs")
        ins = ins[1:]
    live = [t for t in ins if imp.kind(t) not in ("const", "side")]
    bases = list(dict.fromkeys(imp.base(t) for t in live))
    if len(bases) == 1:
        base = bases[0]
        if all(imp.kind(t) == "stat" for t in live):  # eps, square root, reciprocal of a row statistic
            stats = [imp.stats[t] for t in live]
            imp.stats[node.out] = _Stat(base, tuple(o for s in stats for o in s.ops) + (node.op,),
                                        tuple(dict.fromkeys(n for s in stats for n in s.nodes)),
                                        max(s.reductions for s in stats))
            return
        if _is_bias(imp, node, live):
            imp.same(node, live[0])
            return
        imp.pending[node.out] = _merge(imp, live, base).then(node.op, node.name)
        return
    if any(imp.kind(t) == "stat" for t in live):
        raise imp.fail(node, "applies the row statistics of one feature map to another")
    operands = [imp.parts(node, t) for t in live]
    for t, parts in zip(live, operands, strict=True):
        if len(parts) > 1:
            raise imp.fail(node, f"operand '{t}' is a concatenation of {[p.src for p in parts]}; kapla's "
                                 "element-wise layers read whole tensors")
    sizes = [imp.elems(parts) for parts in operands]
    if any(size != sizes[0] for size in sizes):
        scaled = _channel_scaling(imp, node, live, operands)
        if scaled is not None:
            x, vector = scaled
            imp.define(node, imp.builder.scale(node.name, [p.src for p in x], [p.src for p in vector]))
            return
        shown = ", ".join(f"'{t}' {_show(imp.dims.get(t))} ({size:,} elements)"
                          for t, size in zip(live, sizes, strict=True))
        raise imp.fail(node, f"operands {shown} differ in shape; kapla's element-wise layers do not broadcast "
                             "one feature map over another; the one broadcast kapla takes is a Mul by an "
                             "[N, C, 1, 1] vector a node computes (a channel-wise scaling)")
    mode = "mul" if node.op in ("Mul", "Div") else "add"
    srcs = [parts[0] for parts in operands]
    if all(p.whole for p in srcs) and len({imp.builder.shape_of(p.src) for p in srcs}) == 1:
        imp.define(node, imp.builder.eltwise(node.name, [p.src for p in srcs], mode))
        return
    shape = imp.vector_shape(operands[0])
    layer = Layer(node.name, Op.ELTWISE, shape.c, shape.c, shape.h, shape.w, mode=mode, n_inputs=len(srcs))
    imp.add(node, layer, [p.edge(node.name) for p in srcs])


def _channel_scaling(imp: _Importer, node: _Node, live: list[str], operands: list[Parts]) -> tuple[Parts, Parts] | None:
    """The fmap and the vector of a channel-wise scaling (squeeze-and-excitation),
    or None: a ``Mul`` of an ``[N, C, H, W]`` fmap by an ``[N, C, 1, 1]`` vector
    that a node of the graph computes (no network input, constant or side
    input), each operand one whole producer output."""
    if node.op != "Mul" or len(live) != 2:
        return None
    dims = [imp.dims.get(t) for t in live]
    for big, small in ((0, 1), (1, 0)):
        fmap, vector = dims[big], dims[small]
        if fmap is None or vector is None or len(fmap) != 4 or len(vector) != 4:
            continue
        if None in fmap[1:] or tuple(vector[1:]) != (fmap[1], 1, 1) or vector[0] != fmap[0]:
            continue
        parts = operands[small]
        if len(parts) == 1 and parts[0].whole and parts[0].src in imp.made and all(p.whole for p in operands[big]):
            return operands[big], parts
    return None


def _merge(imp: _Importer, live: list[str], base: Parts) -> _Pending:
    """The pending work of several inputs on the same fmap, as one."""
    pend = [imp.pending[t] for t in live if t in imp.pending]
    stats = [imp.stats[t] for t in live if t in imp.stats]
    ops = tuple(o for p in pend for o in p.ops) + tuple(o for s in stats for o in s.ops)
    nodes = tuple(dict.fromkeys(n for p in pend for n in p.nodes))
    reductions = max([p.reductions for p in pend] + [s.reductions for s in stats] + [0])
    return _Pending(base, ops, nodes, reductions, any(p.sliced for p in pend), any(p.cut for p in pend))


def _is_bias(imp: _Importer, node: _Node, live: list[str]) -> bool:
    """A constant vector added to a projection's or convolution's own output: its bias, folded."""
    if node.op != "Add" or len(live) != 1 or live[0] not in imp.fmaps:
        return False
    parts = imp.fmaps[live[0]]
    if len(parts) != 1 or not parts[0].whole or imp.made.get(parts[0].src) not in ("MatMul", "Gemm", "Conv"):
        return False
    other = [t for t in node.inputs if t and t != live[0]]
    channels = imp.builder.shape_of(parts[0].src).c
    return all(t in imp.consts and math.prod(d or 1 for d in imp.dims.get(t, ())) in (1, channels)
               for t in other)


def _reduce(imp: _Importer, node: _Node) -> None:
    """A reduction over each row (the last axis) of an fmap: a statistic of a norm or softmax."""
    t = node.inputs[0]
    imp.base(t)  # a graph input kapla cannot read is reported as such
    if imp.kind(t) not in ("fmap", "pending"):
        raise imp.fail(node, f"input '{t}' is not a feature map kapla can reduce")
    rank = len(imp.dims.get(t) or ())
    axes = node.attr("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        axes = imp.values.get(node.inputs[1])
        if axes is None:
            raise imp.fail(node, "its axes are computed; kapla needs them constant")
    axes = [int(a) + rank if int(a) < 0 else int(a) for a in np.ravel(axes)] if axes is not None else []
    if not rank or axes != [rank - 1]:
        raise imp.fail(node, f"reduces axes {axes or 'all'} of a rank-{rank} tensor; kapla costs row reductions "
                             "(the last axis: norms, softmax)")
    prev = imp.pending.get(t)
    base = imp.base(t)
    imp.stats[node.out] = _Stat(base, (prev.ops if prev else ()) + (node.op,), prev.nodes if prev else (),
                                (prev.reductions if prev else 0) + 1)


def _softmax(imp: _Importer, node: _Node) -> None:
    imp.vector(node, "softmax")


def _layernorm(imp: _Importer, node: _Node) -> None:
    imp.vector(node, "rmsnorm" if node.op == "RMSNormalization" else "layernorm")
    for extra in node.proto.output[1:]:  # the mean and inverse deviation outputs: per-row statistics
        if extra:
            imp.stats[extra] = _Stat(imp.fmaps[node.out], (node.op,), (node.name,))


def _gelu(imp: _Importer, node: _Node) -> None:
    imp.vector(node, "gelu")


def _expand(imp: _Importer, node: _Node) -> None:
    """A broadcast of an fmap: remembered as a repeat (K/V heads shared by query heads)."""
    t = node.inputs[0]
    parts = imp.parts(node, t, repeated=True)
    before = imp.elems(parts) * imp.repeat.get(t, 1)
    after = math.prod(imp.known_dims(node, node.out)) // imp.sample
    imp.fmaps[node.out] = parts
    if after != before:
        imp.repeat[node.out] = imp.repeat.get(t, 1) * after // before


# -- slices


def _slice_parts(imp: _Importer, parts: Parts, dims: tuple[int, ...], axis: int, lo: int, hi: int) -> Parts | None:
    """``parts`` cut to ``[lo, hi)`` along ONNX ``axis`` of a tensor of ``dims``,
    as channel or row ranges of the producers, or None if no such range."""
    d = dims[1:]
    a = axis - 1
    if len(parts) == 1:
        p = parts[0]
        shape = imp.builder.shape_of(p.src)
        c0, c1 = p.channels or (0, shape.c)
        r0, r1 = p.rows or (0, shape.h)
        for k in range(len(d) + 1):
            if math.prod(d[k:]) != c1 - c0 or math.prod(d[:k]) != (r1 - r0) * shape.w:
                continue
            if a >= k and all(x == 1 for x in d[k:a]):
                step = math.prod(d[a + 1:])
                return (_Part(p.src, (c0 + lo * step, c0 + hi * step), p.rows),)
            if a < k and shape.w == 1 and all(x == 1 for x in d[:a]):
                step = math.prod(d[a + 1:k])
                return (_Part(p.src, p.channels, (r0 + lo * step, r0 + hi * step)),)
        return None
    # A concatenation of token rows: take the parts (or rows of them) the range covers.
    features = d[-1]
    if a != len(d) - 2 or any(x != 1 for x in d[:a]):
        return None
    out, start = [], 0
    for p in parts:
        size = imp.elems((p,))
        if size % features:
            return None
        rows = size // features
        first, last = max(lo, start), min(hi, start + rows)
        if first < last:
            if (first, last) == (start, start + rows):
                out.append(p)
            else:
                cut = _slice_parts(imp, (p,), (1, rows, features), 1, first - start, last - start)
                if cut is None:
                    return None
                out.extend(cut)
        start += rows
    return tuple(out)


def _cut(imp: _Importer, node: _Node, axis: int, ranges: Sequence[tuple[int, int]], outs: Sequence[str]) -> None:
    t = node.inputs[0]
    dims = imp.known_dims(node, t)
    axis = axis + len(dims) if axis < 0 else axis
    if axis == 0:
        raise imp.fail(node, "slices the batch axis; kapla schedules whole batches")
    prev = imp.pending.get(t)
    if prev is not None and (prev.cut or not prev.ops):
        raise imp.fail(node, f"slices '{t}', itself a slice kapla could not map")
    parts = imp.parts(node, t)
    for (lo, hi), out in zip(ranges, outs, strict=True):
        if not out:
            continue
        lo, hi = max(0, lo), min(hi, dims[axis])
        if (lo, hi) == (0, dims[axis]):
            imp.fmaps[out] = parts
            continue
        cut = _slice_parts(imp, parts, dims, axis, lo, hi)
        if cut is None:  # an interleaved range: only a rotary embedding puts such slices back together
            imp.pending[out] = _Pending(parts, cut=True)
        else:
            imp.fmaps[out] = cut
            imp.parent[cut] = parts


def _split(imp: _Importer, node: _Node) -> None:
    axis, start, ranges = node.attr("axis", 0), 0, []
    for out in node.proto.output:
        size = imp.known_dims(node, out)[axis]
        ranges.append((start, start + size))
        start += size
    _cut(imp, node, axis, ranges, list(node.proto.output))


def _const_value(imp: _Importer, node: _Node, i: int, what: str) -> list[int] | None:
    if i >= len(node.inputs) or not node.inputs[i]:
        return None
    value = imp.values.get(node.inputs[i])
    if value is None:
        raise imp.fail(node, f"its {what} '{node.inputs[i]}' are computed; kapla slices feature maps by constants")
    return [int(v) for v in np.ravel(value)]


def _slice(imp: _Importer, node: _Node) -> None:
    dims = imp.known_dims(node, node.inputs[0])
    starts, ends = _const_value(imp, node, 1, "starts"), _const_value(imp, node, 2, "ends")
    axes = _const_value(imp, node, 3, "axes") or list(range(len(starts or ())))
    steps = _const_value(imp, node, 4, "steps") or [1] * len(axes)
    if starts is None or ends is None:
        raise imp.fail(node, "has no starts or ends", SpecError)
    cuts = []
    for axis, lo, hi, step in zip(axes, starts, ends, steps, strict=True):
        axis = axis + len(dims) if axis < 0 else axis
        size = dims[axis]
        lo, hi = (lo + size if lo < 0 else lo), (hi + size if hi < 0 else hi)
        lo, hi = max(0, min(lo, size)), max(0, min(hi, size))
        if step != 1:
            raise imp.fail(node, f"steps by {step}; kapla slices contiguous ranges")
        if (lo, hi) != (0, size):
            cuts.append((axis, lo, hi))
    if len(cuts) > 1:
        raise imp.fail(node, "cuts several axes at once; kapla slices one")
    if not cuts:
        imp.same(node, node.inputs[0])
        return
    axis, lo, hi = cuts[0]
    _cut(imp, node, axis, [(lo, hi)], [node.out])


def _gather(imp: _Importer, node: _Node) -> None:
    index = _const_value(imp, node, 1, "indices")
    if index is None or not index or index != list(range(index[0], index[0] + len(index))):
        raise imp.fail(node, "gathers a feature map by indices that are no constant contiguous range")
    dims = imp.known_dims(node, node.inputs[0])
    axis = node.attr("axis", 0)
    axis = axis + len(dims) if axis < 0 else axis
    lo = index[0] + dims[axis] if index[0] < 0 else index[0]
    _cut(imp, node, axis, [(lo, lo + len(index))], [node.out])


def _concat(imp: _Importer, node: _Node) -> None:
    """A concatenation is no layer: consumers read the list of parts. Halves of
    one fmap put back together (``rotate_half``) stay pending work on it."""
    rank = len(imp.dims.get(node.out) or ())
    axis = node.attr("axis", 1)
    if axis < 0 and rank:
        axis += rank
    ins = [t for t in node.inputs if t]
    live = [t for t in ins if imp.kind(t) not in ("const", "side")]
    whole = _rejoined(imp, live) if len(live) == len(ins) else None
    if whole is not None:
        merged = _merge(imp, [t for t in live if t in imp.pending], whole)
        imp.pending[node.out] = replace(merged, sliced=True, cut=False)
        return
    if rank == 4 and axis != 1 and all(_nchw(imp, t) for t in live):
        # Feature maps of convolutions side by side in height or width: no
        # kapla layer reads that. (A KV cache and the new tokens' K, a
        # [batch, heads, tokens, dim] tensor, are read by products in any layout.)
        raise imp.fail(node, f"concatenation along axis {node.attr('axis')}; kapla concatenates channels (axis 1)")
    parts: list[_Part] = []
    for i, t in enumerate(node.inputs):
        if not t:
            continue
        if t in imp.consts:  # a learned token (ViT's class token): read from DRAM with the sample
            shape = _as_tokens(imp.dims.get(t)) or _as_fmap(imp.dims.get(t))
            if shape is None:
                raise imp.fail(node, f"input {i} ('{t}') is a constant of shape {_show(imp.dims.get(t))}")
            name = f"{node.name}.{i}"
            imp.builder.input(name, shape.c, shape.h, shape.w)
            parts.append(_Part(name))
            continue
        parts.extend(imp.parts(node, t))
    imp.fmaps[node.out] = tuple(parts)


def _rejoined(imp: _Importer, live: list[str]) -> Parts | None:
    """The fmap that slices of it (maybe negated, as ``rotate_half`` does)
    put back together form, or None."""
    origins = []
    for t in live:
        p = imp.pending.get(t)
        if p is not None and p.cut:
            origins.append(p.base)
        elif imp.kind(t) in ("fmap", "pending") and imp.base(t) in imp.parent:
            origins.append(imp.parent[imp.base(t)])
        else:
            return None
    if len(set(origins)) != 1 or len(live) < 2:
        return None
    whole = origins[0]
    cut = [imp.base(t) for t in live if not (t in imp.pending and imp.pending[t].cut)]
    if cut and sum(imp.elems(c) for c in cut) * len(live) != imp.elems(whole) * len(cut):
        return None
    return whole


def _nchw(imp: _Importer, tensor: str) -> bool:
    """The tensor is one whole fmap laid out as kapla holds it (N x C x H x W)."""
    parts = imp.fmaps.get(tensor)
    if parts is None or len(parts) != 1 or not parts[0].whole:
        return False
    dims = imp.dims.get(tensor)
    return dims is not None and _as_fmap(dims) == imp.builder.shape_of(parts[0].src)


_FOLDED = (
    "Relu", "LeakyRelu", "PRelu", "Elu", "HardSigmoid", "HardSwish", "Clip",
    "BatchNormalization", "LRN",  # folded into their producer, as nn_dataflow does
    "Dropout", "Identity", "Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Cast",  # layout
)

_HANDLERS: dict[str, Callable[[_Importer, _Node], None]] = {
    **{op: _fold for op in _FOLDED},
    **{op: _arith for op in _ARITH},
    **{op: _reduce for op in _REDUCE},
    "Sum": _arith,
    "Shape": _constant,
    "Size": _constant,
    "Conv": _conv,
    "Gemm": _gemm,
    "MatMul": _matmul,
    "MaxPool": _pool,
    "AveragePool": _pool,
    "GlobalAveragePool": _global_pool,
    "GlobalMaxPool": _global_pool,
    "Concat": _concat,
    "Softmax": _softmax,
    "LayerNormalization": _layernorm,
    "RMSNormalization": _layernorm,
    "Gelu": _gelu,
    "Expand": _expand,
    "Split": _split,
    "Slice": _slice,
    "Gather": _gather,
}
"""ONNX op type (default domain) -> handler that binds the node's output."""

SUPPORTED_OPS = tuple(sorted(_HANDLERS))

__all__ = ["SUPPORTED_OPS", "load_onnx"]
