"""Import an ONNX model as a kapla :class:`~kapla.workload.network.Network`.

kapla schedules the layers that move and compute feature maps (CONV, FC,
POOL, ELTWISE). An ONNX graph has many more operators, most of which do not
matter to a dataflow schedule, so the importer walks the graph once, in its
(topological) node order, and keeps for every ONNX tensor one of:

* a *feature map*: the tuple of kapla producers (layers or network inputs)
  whose outputs, concatenated along channels, form the tensor. A plain layer
  output is a 1-tuple; a ``Concat`` is the tuple of its operands' producers,
  because :class:`NetworkBuilder` concatenates a list of inputs itself;
* a *constant*: an initializer or anything computed from constants only
  (weights, biases, reshape targets, ``Shape`` arithmetic). Constants cost
  nothing per sample, so they never become layers.

Operators are handled by a dispatch table (:data:`_HANDLERS`). Activations,
normalisations and pure reshapes are folded away: their output aliases their
input. Every layer the importer creates is checked against the shape ONNX
shape inference gives its output, so a model kapla would misread (say, a
``Reshape`` that reorganises an fmap before a convolution) is reported with
the node's name instead of being scheduled wrongly.

Errors are one line starting with the file name: :class:`SpecError` for a file
that is not an ONNX model, :class:`UnsupportedOpError` for operators (or uses
of them) kapla cannot represent, :class:`NetworkError` for shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
from onnx import helper, shape_inference

from kapla.errors import KaplaError, NetworkError, SpecError, UnsupportedOpError
from kapla.workload.layer import FmapShape
from kapla.workload.network import Network, NetworkBuilder

Dims = tuple[int | None, ...]  # an ONNX tensor shape; None marks a symbolic or unknown dim

_DEFAULT_DOMAINS = ("", "ai.onnx")


def load_onnx(path: str | Path, batch: int | None = None, name: str | None = None) -> Network:
    """Read the ONNX model at ``path`` as a kapla network.

    Graph inputs that are not initializers become network inputs (shape
    ``N x C x H x W`` or ``N x C``). The network's batch is ``batch`` when
    given, else the inputs' static batch dimension, else 1. ``name`` defaults
    to the file's stem (exporters' graph names, e.g. ``main_graph``, rarely
    say which model it is).
    """
    path = Path(path)
    model = _read_model(path)
    return _Importer(path, model, batch, name or path.stem).run()


# --------------------------------------------------------------- reading


def _read_model(path: Path) -> onnx.ModelProto:
    """Parse and shape-infer the model, or raise :class:`SpecError` naming the file."""
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
    try:
        return shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception as exc:
        raise SpecError(f"{path}: ONNX shape inference failed ({_first_line(exc)})") from None


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
        for tensor in self.graph.initializer:
            self.consts.add(tensor.name)
            self.dims[tensor.name] = tuple(int(d) for d in tensor.dims)
        for sparse in self.graph.sparse_initializer:
            self.consts.add(sparse.values.name)
            self.dims[sparse.values.name] = tuple(int(d) for d in sparse.dims)
        self.fmaps: dict[str, tuple[str, ...]] = {}
        self.unusable: dict[str, str] = {}  # graph inputs kapla cannot read -> why
        self.builder = NetworkBuilder(name, 1 if batch is None else batch)
        self.batch_given = batch is not None

    # -- driver

    def run(self) -> Network:
        self._add_inputs()
        for index, (proto, layer_name) in enumerate(zip(self.graph.node, _layer_names(self.graph), strict=True)):
            attrs = {a.name: helper.get_attribute_value(a) for a in proto.attribute}
            self._import_node(_Node(proto, index, layer_name, attrs))
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
            dims = _tensor_dims(value)
            shape = _as_fmap(dims)
            if shape is None:
                # Reported only if a layer reads it, so that, say, an LSTM
                # model's N x T x C input does not hide the unsupported LSTM.
                self.unusable[value.name] = (f"{self.path}: graph input '{value.name}' has shape {_show(dims)}; "
                                             "kapla needs a static N x C x H x W or N x C shape")
                continue
            self.builder.input(value.name, shape.c, shape.h, shape.w)
            self.fmaps[value.name] = (value.name,)
            if dims and dims[0] is not None:
                batches[value.name] = dims[0]
        if self.batch_given or not batches:
            return  # an explicit batch wins; a symbolic batch dim means 1
        if len(set(batches.values())) > 1:
            raise NetworkError(f"{self.path}: graph inputs disagree on the batch size {batches}; pass a batch")
        self.builder.batch = next(iter(batches.values()))

    def _import_node(self, node: _Node) -> None:
        used = [t for t in node.inputs if t]
        for t in used:
            if t not in self.fmaps and t not in self.consts and t not in self.unusable:
                raise NetworkError(f"{self.path}: {node.label} reads '{t}', which no graph input, "
                                   "initializer or earlier node produces")
        # A node that reads no feature map belongs to the model's constant or
        # shape arithmetic: it does no per-sample work, whatever its op.
        if all(t in self.consts for t in used):
            self.consts.update(o for o in node.proto.output if o)
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

    # -- helpers for handlers

    def fail(self, node: _Node, message: str, error: type[KaplaError] = UnsupportedOpError) -> KaplaError:
        return error(f"{self.path}: {node.label}: {message}")

    def fmap(self, node: _Node, i: int) -> tuple[str, ...]:
        """The kapla producers of the node's ``i``-th input, which must be a feature map."""
        if i >= len(node.inputs) or not node.inputs[i]:
            raise self.fail(node, f"input {i} is missing", SpecError)
        tensor = node.inputs[i]
        if tensor in self.consts:
            raise self.fail(node, f"input {i} ('{tensor}') is a constant where kapla expects a feature map")
        return self.producers(tensor)

    def producers(self, tensor: str) -> tuple[str, ...]:
        """The kapla producers of a feature-map tensor."""
        if tensor in self.unusable:
            raise NetworkError(self.unusable[tensor])
        return self.fmaps[tensor]

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
        out = node.proto.output[0]
        ours = self.builder.shape_of(layer)
        dims = self.dims.get(out)
        theirs = _as_fmap(dims)
        if dims is not None and theirs is not None and (theirs != ours if len(dims) == 4
                                                        else theirs.elems != ours.elems):
            raise self.fail(node, f"kapla computes output {ours} but the model says {_show(dims)}",
                            NetworkError)
        self.fmaps[out] = (layer,)

    def alias(self, node: _Node, srcs: tuple[str, ...]) -> None:
        self.fmaps[node.proto.output[0]] = srcs


def _show(dims: Dims | None) -> str:
    if dims is None:
        return "unknown"
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


# --------------------------------------------------------------- handlers


def _fold(imp: _Importer, node: _Node) -> None:
    """No MACs and no change to the fmap that matters: the output is the input."""
    imp.alias(node, imp.fmap(node, 0))


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
    """An FC layer reading input 0, with constant weight input 1 holding K along ``out_axis``."""
    srcs = imp.fmap(node, 0)
    w = imp.const_dims(node, 1, "weight")
    if len(w) != 2:
        raise imp.fail(node, f"weight {_show(w)} is not a matrix")
    a = imp.dims.get(node.inputs[0])
    if a is not None and len(a) != 2:
        # A MatMul over a rank-3 tensor applies the weight per position (a
        # sequence model); an FC layer would flatten the positions instead.
        raise imp.fail(node, f"input '{node.inputs[0]}' has shape {_show(a)}; kapla's FC layers need "
                             "an N x features input")
    k, features = w[out_axis], w[1 - out_axis]
    imp.define(node, imp.builder.fc(node.name, list(srcs), k, in_features=features))


def _gemm(imp: _Importer, node: _Node) -> None:
    if node.attr("transA", 0):
        raise imp.fail(node, "transA=1 (a transposed feature map) is not supported")
    # B is K x C with transB=1 (PyTorch's Linear), else C x K; C (the bias) is ignored.
    _fc(imp, node, out_axis=0 if node.attr("transB", 0) else 1)


def _matmul(imp: _Importer, node: _Node) -> None:
    if node.inputs[0] in imp.consts:
        raise imp.fail(node, "the constant is the left operand (W x X); kapla's FC layers compute X x W")
    _fc(imp, node, out_axis=1)


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


def _eltwise(imp: _Importer, node: _Node) -> None:
    """Add/Mul/Sum of fmaps; constant operands (a bias, a scale) are folded away."""
    operands = [t for t in node.inputs if t and t not in imp.consts]
    if len(operands) == 1:
        imp.alias(node, imp.producers(operands[0]))
        return
    srcs = []
    for t in operands:
        producers = imp.producers(t)
        if len(producers) > 1:
            raise imp.fail(node, f"operand '{t}' is a concatenation of {list(producers)}; kapla's "
                                 "element-wise layers read whole tensors")
        srcs.append(producers[0])
    shapes = [imp.builder.shape_of(s) for s in srcs]
    if any(sh != shapes[0] for sh in shapes):
        shown = ", ".join(f"'{s}' {sh}" for s, sh in zip(srcs, shapes, strict=True))
        raise imp.fail(node, f"operands {shown} differ in shape; kapla's element-wise layers do not broadcast")
    mode = "mul" if node.op == "Mul" else "add"
    imp.define(node, imp.builder.eltwise(node.name, srcs, mode))


def _concat(imp: _Importer, node: _Node) -> None:
    """Channel concatenation is no layer: consumers read the list of producers."""
    rank = len(imp.dims.get(node.proto.output[0]) or ())
    axis = node.attr("axis", 1)
    if axis < 0 and rank:
        axis += rank
    if axis != 1:
        raise imp.fail(node, f"concatenation along axis {node.attr('axis')}; kapla concatenates channels (axis 1)")
    srcs: list[str] = []
    for i, t in enumerate(node.inputs):
        if t:
            srcs.extend(imp.fmap(node, i))
    imp.alias(node, tuple(srcs))


_FOLDED = (
    "Relu", "LeakyRelu", "PRelu", "Elu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Clip",
    "BatchNormalization", "Dropout", "Identity", "Flatten", "Reshape", "Squeeze", "Unsqueeze",
    "Softmax", "LRN", "Cast",
)

_HANDLERS: dict[str, Callable[[_Importer, _Node], None]] = {
    **{op: _fold for op in _FOLDED},
    "Shape": _constant,
    "Size": _constant,
    "Conv": _conv,
    "Gemm": _gemm,
    "MatMul": _matmul,
    "MaxPool": _pool,
    "AveragePool": _pool,
    "GlobalAveragePool": _global_pool,
    "GlobalMaxPool": _global_pool,
    "Add": _eltwise,
    "Mul": _eltwise,
    "Sum": _eltwise,
    "Concat": _concat,
}
"""ONNX op type (default domain) -> handler that binds the node's output."""

SUPPORTED_OPS = tuple(sorted(_HANDLERS))

__all__ = ["SUPPORTED_OPS", "load_onnx"]
