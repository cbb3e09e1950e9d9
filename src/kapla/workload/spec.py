"""Network files: a YAML or JSON description of a network, validated with pydantic.

The format (documented in ``docs/network-format.md``)::

    name: tiny
    batch: 8
    inputs:
      data: [3, 32, 32]          # channels, height, width (or [features])
    layers:
      - {name: conv1, type: conv, inputs: [data], out_channels: 16, kernel: 3, padding: 1}
      - {name: pool1, type: pool, inputs: [conv1], kernel: 2, stride: 2}
      - {name: fc, type: fc, inputs: [pool1], out_features: 10}

Layers may be listed in any order; they are placed in topological order, and
cycles, references to unknown names and shape mismatches are reported with the
layer's name and position.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import networkx as nx
import yaml
from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, field_validator

from kapla.errors import NetworkError, SpecError
from kapla.workload.layer import VECTOR_MODES, Op
from kapla.workload.limits import MAX_SIZE
from kapla.workload.network import Network, NetworkBuilder

# Strict: a YAML ``true`` is not the count 1. Sizes are bounded here, where the
# user wrote them, so the message names the field (the bound's reason: limits.py).
PositiveInt = Annotated[int, Strict(), Field(gt=0, le=MAX_SIZE)]
NonNegativeInt = Annotated[int, Strict(), Field(ge=0, le=MAX_SIZE)]
IntPair = PositiveInt | tuple[PositiveInt, PositiveInt]
Padding = NonNegativeInt | tuple[NonNegativeInt, NonNegativeInt] | tuple[
    NonNegativeInt, NonNegativeInt, NonNegativeInt, NonNegativeInt]


class _LayerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    name: str = Field(min_length=1)
    inputs: list[str] = Field(min_length=1)

    @field_validator("inputs", mode="before")
    @classmethod
    def _one_input(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    def add_to(self, b: NetworkBuilder) -> None:
        raise NotImplementedError


class ConvSpec(_LayerSpec):
    type: Literal["conv"]
    out_channels: PositiveInt
    kernel: IntPair
    stride: IntPair = 1
    padding: Padding = 0
    dilation: IntPair = 1
    groups: PositiveInt = 1
    in_channels: PositiveInt | None = None

    def add_to(self, b: NetworkBuilder) -> None:
        b.conv(self.name, self.inputs, self.out_channels, self.kernel, self.stride, self.padding,
               self.groups, self.dilation, self.in_channels)


class DepthwiseSpec(_LayerSpec):
    type: Literal["depthwise"]
    kernel: IntPair
    stride: IntPair = 1
    padding: Padding = 0
    multiplier: PositiveInt = 1

    def add_to(self, b: NetworkBuilder) -> None:
        b.depthwise(self.name, self.inputs, self.kernel, self.stride, self.padding, self.multiplier)


class FCSpec(_LayerSpec):
    type: Literal["fc"]
    out_features: PositiveInt
    in_features: PositiveInt | None = None

    def add_to(self, b: NetworkBuilder) -> None:
        b.fc(self.name, self.inputs, self.out_features, self.in_features)


class PoolSpec(_LayerSpec):
    type: Literal["pool"]
    kernel: IntPair
    stride: IntPair | None = None
    padding: Padding = 0
    mode: Literal["max", "avg"] = "max"
    ceil_mode: bool = False

    def add_to(self, b: NetworkBuilder) -> None:
        b.pool(self.name, self.inputs, self.kernel, self.stride, self.padding, self.mode, self.ceil_mode)


class GlobalPoolSpec(_LayerSpec):
    type: Literal["global_pool"]
    mode: Literal["max", "avg"] = "avg"

    def add_to(self, b: NetworkBuilder) -> None:
        b.global_pool(self.name, self.inputs, self.mode)


class EltwiseSpec(_LayerSpec):
    type: Literal["eltwise"]
    mode: str = "add"

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, v: str) -> str:
        if v not in VECTOR_MODES:
            raise ValueError(f"mode must be one of {', '.join(VECTOR_MODES)} (got {v!r})")
        return v

    def add_to(self, b: NetworkBuilder) -> None:
        b.eltwise(self.name, self.inputs, self.mode)


class MatmulSpec(_LayerSpec):
    """``[heads, rows, inner] x [heads, inner, out_features]``: by weights, or by
    the fmap of ``operand`` (Q x K^T, scores x V)."""

    type: Literal["matmul"]
    out_features: PositiveInt
    operand: list[str] | None = None
    heads: PositiveInt = 1
    inner: PositiveInt | None = None
    rows: PositiveInt | None = None

    @field_validator("operand", mode="before")
    @classmethod
    def _one_operand(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    def add_to(self, b: NetworkBuilder) -> None:
        b.matmul(self.name, self.inputs, self.out_features, self.operand, self.heads, self.inner, self.rows)


LAYER_TYPES: dict[str, type[_LayerSpec]] = {
    "conv": ConvSpec,
    "depthwise": DepthwiseSpec,
    "fc": FCSpec,
    "pool": PoolSpec,
    "global_pool": GlobalPoolSpec,
    "eltwise": EltwiseSpec,
    "matmul": MatmulSpec,
}


class NetworkSpec(BaseModel):
    """The top level of a network file (layers are checked one by one, see :func:`parse_network`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    name: str = Field(min_length=1)
    batch: PositiveInt = 1
    inputs: dict[str, tuple[PositiveInt, ...]] = Field(min_length=1)

    @field_validator("inputs")
    @classmethod
    def _shapes(cls, v: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
        for name, shape in v.items():
            if len(shape) not in (1, 3):
                raise ValueError(f"input '{name}': a shape is [channels] or [channels, height, width] "
                                 f"(got {len(shape)} numbers)")
        return v
    layers: list[dict[str, Any]] = Field(min_length=1)


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _first_error(exc: ValidationError, prefix: str) -> str:
    errors = exc.errors()
    # a value that fits no member of a union (``kernel: 0``) is reported for its
    # simplest reading, the single number, not for the tuple forms it does not use
    err = next((e for e in errors if not any(isinstance(p, str) and p.startswith("tuple[") for p in e["loc"])),
               errors[0])
    # pydantic names union members in the location ("tuple[int, int]", "constrained-int"): not the user's words
    member = ("tuple[", "int", "constrained-")
    loc = _where(tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith(member))))
    msg = err["msg"].removeprefix("Value error, ")
    return f"{prefix}{loc}: {msg}" if loc else f"{prefix}{msg}"


def _layer_spec(raw: Any, index: int, source: str) -> _LayerSpec:
    label = f"{source}: layers[{index}]"
    if not isinstance(raw, dict):
        raise SpecError(f"{label}: expected a mapping with name, type and inputs (got {type(raw).__name__})")
    if "name" in raw:
        label += f" ('{raw['name']}')"
    kind = raw.get("type")
    if not isinstance(kind, str) or kind not in LAYER_TYPES:  # a list or mapping cannot even be looked up
        known = ", ".join(LAYER_TYPES)
        raise SpecError(f"{label}: unknown layer type {kind!r}; known types: {known}")
    try:
        return LAYER_TYPES[kind].model_validate(raw)
    except ValidationError as exc:
        raise SpecError(_first_error(exc, f"{label}.")) from None


def parse_network(data: Any, source: str = "network", batch: int | None = None) -> Network:
    """Build a network from the parsed contents of a network file."""
    if not isinstance(data, dict):
        raise SpecError(f"{source}: expected a mapping with name, inputs and layers at the top level")
    try:
        spec = NetworkSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(_first_error(exc, f"{source}: ")) from None
    layers = [_layer_spec(raw, i, source) for i, raw in enumerate(spec.layers)]
    order = _topological(layers, spec.inputs.keys(), source)
    builder = NetworkBuilder(spec.name, batch if batch is not None else spec.batch)
    for name, shape in spec.inputs.items():
        builder.input(name, *shape)
    for i in order:
        try:
            layers[i].add_to(builder)
        except NetworkError as exc:
            raise SpecError(f"{source}: layers[{i}]: {exc}") from None
    try:
        return builder.build()
    except NetworkError as exc:
        raise SpecError(f"{source}: {exc}") from None


def _topological(layers: list[_LayerSpec], inputs, source: str) -> list[int]:
    """Indices of ``layers`` in a topological order, preferring file order."""
    index: dict[str, int] = {}
    for i, layer in enumerate(layers):
        if layer.name in index or layer.name in inputs:
            raise SpecError(f"{source}: layers[{i}] ('{layer.name}'): the name is used twice")
        index[layer.name] = i
    g = nx.DiGraph()
    g.add_nodes_from(range(len(layers)))
    for i, layer in enumerate(layers):
        for src in layer.inputs:
            if src in index:
                g.add_edge(index[src], i)
            elif src not in inputs:
                raise SpecError(
                    f"{source}: layers[{i}] ('{layer.name}'): input '{src}' is neither a layer nor a network input")
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return list(nx.lexicographical_topological_sort(g))
    names = [layers[u].name for u, _ in cycle] + [layers[cycle[0][0]].name]
    raise SpecError(f"{source}: cycle between layers {' -> '.join(names)}")


def load_network_file(path: str | Path, batch: int | None = None) -> Network:
    """Read a YAML or JSON network file (``batch`` overrides the file's batch)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read network file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not a text file (byte {exc.object[exc.start]:#04x} at offset {exc.start} is "
                        "not UTF-8)") from None
    try:
        data = yaml.safe_load(text)  # YAML is a superset of JSON
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise SpecError(f"{path}: malformed file{at}: {problem}") from None
    return parse_network(data, str(path), batch)


def network_spec(net: Network) -> dict[str, Any]:
    """``net`` as the contents of a network file, which :func:`parse_network` reads back
    to the same layers and edges: convolutions (grouped and depthwise too), FC,
    pooling and element-wise layers. One error naming the first layer the format
    cannot hold (a product of two fmaps, a channel-wise scaling, an input that is a
    slice of its producer) or a training network (write its inference network)."""
    if net.training:
        raise SpecError(f"network '{net.name}': a training network is not written; write its inference network")
    layers: list[dict[str, Any]] = []
    for layer in net:
        where = f"network '{net.name}': layer '{layer.name}'"
        edges = net.in_edges(layer.name)
        if any(e.channels is not None or e.rows is not None or e.port != "in" for e in edges):
            raise SpecError(f"{where}: reads a slice or a second operand, which a network file cannot say")
        entry: dict[str, Any] = {"name": layer.name}
        if layer.op == Op.CONV:
            entry.update(type="conv", out_channels=layer.k, kernel=[layer.s, layer.r], stride=list(layer.stride),
                         padding=list(layer.pad), dilation=list(layer.dilation), groups=layer.groups)
        elif layer.op == Op.FC:
            entry.update(type="fc", out_features=layer.k)
        elif layer.op == Op.POOL:
            entry.update(type="pool", kernel=[layer.s, layer.r], stride=list(layer.stride),
                         padding=list(layer.pad), mode=layer.mode, ceil_mode=layer.ceil_mode)
        elif layer.op == Op.ELTWISE and not layer.is_scale:
            entry.update(type="eltwise", mode=layer.mode)
        else:
            raise SpecError(f"{where}: a {layer.op.value} layer of this kind is not written to network files yet")
        # defaults left out: a file an older kapla reads too
        for key, default in (("stride", [1, 1]), ("padding", [0, 0, 0, 0]), ("dilation", [1, 1]), ("groups", 1),
                             ("ceil_mode", False)):
            if entry.get(key, None) == default and not (key == "stride" and entry["type"] == "pool"):
                del entry[key]
        entry["inputs"] = [e.src for e in edges]
        layers.append(entry)
    inputs = {name: [shape.c, shape.h, shape.w] for name, shape in net.inputs.items()}
    return {"name": net.name, "batch": net.batch, "inputs": inputs, "layers": layers}
