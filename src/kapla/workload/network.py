"""Networks: a validated DAG of layers with its external inputs.

A :class:`Network` is immutable and always valid: its constructor checks that
the graph is acyclic, that every edge starts at a known layer or network input,
and that what producers deliver to each input port matches the shape the
consumer expects. Errors name the layer and what is wrong.

Build networks with :class:`NetworkBuilder`, which infers each layer's input
shape from its producers, so zoo definitions and network files only state what
a layer does, not what it receives.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import networkx as nx

from kapla.errors import NetworkError
from kapla.workload.layer import FmapShape, Layer, Merge, Op, Operand, Phase, Port
from kapla.workload.limits import MAX_MACS, MAX_SIZE


@dataclass(frozen=True, slots=True)
class Edge:
    """Data flowing from ``src`` (a layer or network input) into ``dst``'s ``port``.

    ``channels`` selects a channel range ``[lo, hi)`` of the producer's output
    (the backward pass splits a concatenated gradient this way; a split of a
    fused projection takes its parts); ``rows`` a range of its rows (tokens:
    a class token, the last token); None means all.
    """

    src: str
    dst: str
    port: str = "in"
    channels: tuple[int, int] | None = None
    rows: tuple[int, int] | None = None


@dataclass(frozen=True)
class Network:
    """A DAG of layers fed by named external inputs, for a given batch size."""

    name: str
    batch: int
    inputs: Mapping[str, FmapShape]
    layers: tuple[Layer, ...]
    edges: tuple[Edge, ...]
    kept: frozenset[str] = frozenset()
    """Producers whose outputs must also be written to DRAM: kept for the backward
    pass, or read as a matmul's second operand (port ``b``), which the cost model
    fetches from DRAM like weights; the network adds the latter itself."""
    training: bool = False
    _by_name: dict[str, Layer] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", dict(self.inputs))
        object.__setattr__(self, "layers", tuple(self.layers))
        object.__setattr__(self, "edges", tuple(self.edges))
        layer_names = {layer.name for layer in self.layers}
        operands = {e.src for e in self.edges if e.port == "b" and e.src in layer_names}
        object.__setattr__(self, "kept", frozenset(self.kept) | operands)
        _validate(self)
        object.__setattr__(self, "_by_name", {layer.name: layer for layer in self.layers})

    # ------------------------------------------------------------------ access

    def __getitem__(self, name: str) -> Layer:
        try:
            return self._by_name[name]
        except KeyError:
            raise NetworkError(f"network '{self.name}' has no layer '{name}'") from None

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[Layer]:
        return iter(self.layers)

    def __len__(self) -> int:
        return len(self.layers)

    @cached_property
    def graph(self) -> nx.MultiDiGraph:
        """The DAG over layer and input names (inputs carry ``input=True``)."""
        g = nx.MultiDiGraph()
        for name in self.inputs:
            g.add_node(name, input=True)
        for layer in self.layers:
            g.add_node(layer.name, input=False)
        for e in self.edges:
            g.add_edge(e.src, e.dst, port=e.port, channels=e.channels, rows=e.rows)
        return g

    def in_edges(self, name: str) -> tuple[Edge, ...]:
        return self._in_edges.get(name, ())

    def out_edges(self, name: str) -> tuple[Edge, ...]:
        return self._out_edges.get(name, ())

    def producers(self, name: str) -> tuple[str, ...]:
        """Distinct sources feeding ``name``, in edge order."""
        return self._producers.get(name, ())

    def consumers(self, name: str) -> tuple[str, ...]:
        return self._consumers.get(name, ())

    # a network search asks for them hundreds of thousands of times (ResNet-1001: 270,000)
    @cached_property
    def _producers(self) -> dict[str, tuple[str, ...]]:
        return {name: tuple(dict.fromkeys(e.src for e in edges)) for name, edges in self._in_edges.items()}

    @cached_property
    def _consumers(self) -> dict[str, tuple[str, ...]]:
        return {name: tuple(dict.fromkeys(e.dst for e in edges)) for name, edges in self._out_edges.items()}

    @cached_property
    def _in_edges(self) -> dict[str, tuple[Edge, ...]]:
        out: dict[str, list[Edge]] = {}
        for e in self.edges:
            out.setdefault(e.dst, []).append(e)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def _out_edges(self) -> dict[str, tuple[Edge, ...]]:
        out: dict[str, list[Edge]] = {}
        for e in self.edges:
            out.setdefault(e.src, []).append(e)
        return {k: tuple(v) for k, v in out.items()}

    def input_share(self, name: str, sources: Iterable[str]) -> float:
        """The share of ``name``'s input words (every edge into it, with its channel and
        row slices) that come from ``sources`` (layers or network inputs)."""
        sources = set(sources)
        total = part = 0
        for e in self.in_edges(name):
            shape = self.output_shape(e.src)
            assert shape is not None
            c = shape.c if e.channels is None else e.channels[1] - e.channels[0]
            h = shape.h if e.rows is None else e.rows[1] - e.rows[0]
            words = c * h * shape.w
            total += words
            part += words if e.src in sources else 0
        return part / total if total else 0.0

    def output_shape(self, name: str) -> FmapShape | None:
        """Per-sample shape produced by a layer or network input."""
        if name in self.inputs:
            return self.inputs[name]
        return self[name].out_shape

    # ------------------------------------------------------------ derivations

    @property
    def macs(self) -> int:
        """Total multiply-accumulates for the whole batch."""
        return self.batch * sum(layer.macs for layer in self.layers)

    def with_batch(self, batch: int) -> Network:
        """The same network at another batch size.

        A training network's backward layers do not depend on the batch, so
        re-batching is safe for both inference and training networks.
        """
        return replace(self, batch=batch)

    def to_training(self) -> Network:
        """The training DAG: forward layers followed by their backward layers."""
        from kapla.workload.training import training_network

        return training_network(self)


# ---------------------------------------------------------------- validation


def _validate(net: Network) -> None:
    where = f"network '{net.name}'"
    if not isinstance(net.batch, int) or isinstance(net.batch, bool) or net.batch < 1:
        raise NetworkError(f"{where}: batch must be a positive integer (got {net.batch!r})")
    if net.batch > MAX_SIZE:
        raise NetworkError(f"{where}: batch is {net.batch:,}; kapla handles batches up to {MAX_SIZE:,}")
    for layer in net.layers:
        if layer.macs * net.batch > MAX_MACS:
            raise NetworkError(f"{where}: layer '{layer.name}' performs {layer.macs * net.batch:.3g} "
                               f"multiply-accumulates at batch {net.batch}; kapla handles up to {MAX_MACS:.3g} "
                               "per layer")
    if not net.layers:
        raise NetworkError(f"{where}: has no layers")
    names: dict[str, str] = {n: "input" for n in net.inputs}
    for layer in net.layers:
        if layer.name in names:
            raise NetworkError(f"{where}: name '{layer.name}' is used twice")
        names[layer.name] = "layer"
    layers = {layer.name: layer for layer in net.layers}
    for e in net.edges:
        if e.dst not in layers:
            raise NetworkError(f"{where}: edge from '{e.src}' goes to unknown layer '{e.dst}'")
        if e.src not in names:
            raise NetworkError(f"layer '{e.dst}': input '{e.src}' is neither a layer nor a network input")
    _check_acyclic(net, layers)
    for name in net.kept:
        if name not in names:
            raise NetworkError(f"{where}: kept output '{name}' is neither a layer nor a network input")

    def out_shape(src: str) -> FmapShape | None:
        return net.inputs[src] if src in net.inputs else layers[src].out_shape

    by_dst: dict[str, list[Edge]] = {}
    for e in net.edges:
        by_dst.setdefault(e.dst, []).append(e)
    for layer in net.layers:
        incoming = by_dst.get(layer.name, [])
        for port in layer.ports:
            feeding = [e for e in incoming if e.port == port.name]
            if not feeding:
                raise NetworkError(f"layer '{layer.name}': input port '{port.name}' has no producer")
            delivered = []
            for e in feeding:
                shape = out_shape(e.src)
                if shape is None:
                    raise NetworkError(f"layer '{layer.name}': '{e.src}' produces a weight gradient, not an fmap")
                delivered.append((e.src, _slice(shape, e, layer.name)))
            _check_port(layer, port, delivered)
        unknown = {e.port for e in incoming} - {p.name for p in layer.ports}
        if unknown:
            raise NetworkError(f"layer '{layer.name}': no input port named {sorted(unknown)}")


def _check_acyclic(net: Network, layers: Mapping[str, Layer]) -> None:
    # Layers must be listed in a topological order, so every pass over
    # ``net.layers`` sees producers before consumers. A network so listed has no
    # cycle; one that is not is searched for a cycle first, the clearer error
    # (a search over every edge: a tenth of building ResNet-1001's training DAG).
    seen: set[str] = set(net.inputs)
    pending: dict[str, set[str]] = {e.dst: set() for e in net.edges}
    for e in net.edges:
        pending[e.dst].add(e.src)
    for layer in net.layers:
        missing = pending.get(layer.name, set()) - seen
        if missing:
            _check_no_cycle(net, layers)
            raise NetworkError(
                f"network '{net.name}': layer '{layer.name}' is listed before its input(s) {sorted(missing)}")
        seen.add(layer.name)


def _check_no_cycle(net: Network, layers: Mapping[str, Layer]) -> None:
    g = nx.DiGraph()
    g.add_nodes_from(layers)
    g.add_edges_from((e.src, e.dst) for e in net.edges if e.src in layers)
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return
    path = " -> ".join([u for u, _ in cycle] + [cycle[0][0]])
    raise NetworkError(f"network '{net.name}': cycle {path}")


def _slice(shape: FmapShape, e: Edge, consumer: str) -> FmapShape:
    if e.channels is not None:
        lo, hi = e.channels
        if not 0 <= lo < hi <= shape.c:
            raise NetworkError(
                f"layer '{consumer}': channel range [{lo}, {hi}) of '{e.src}' is outside its {shape.c} channels")
        shape = FmapShape(hi - lo, shape.h, shape.w)
    if e.rows is not None:
        lo, hi = e.rows
        if not 0 <= lo < hi <= shape.h:
            raise NetworkError(f"layer '{consumer}': row range [{lo}, {hi}) of '{e.src}' is outside its {shape.h} rows")
        shape = FmapShape(shape.c, hi - lo, shape.w)
    return shape


def _check_port(layer: Layer, port: Port, delivered: Sequence[tuple[str, FmapShape]]) -> None:
    want = port.shape
    srcs = [s for s, _ in delivered]
    label = f"layer '{layer.name}'" + (f" port '{port.name}'" if port.name != "in" else "")
    if port.any_layout:
        groups = [[d] for d in delivered] if port.merge == Merge.EACH else [list(delivered)]
        for group in groups:
            got_elems = sum(s.elems for _, s in group)
            if got_elems != want.elems:
                shapes = ", ".join(f"'{s}' {shape}" for s, shape in group)
                raise NetworkError(f"{label}: {'inputs' if len(group) > 1 else 'input'} {shapes} "
                                   f"{'hold' if len(group) > 1 else 'holds'} {got_elems:,} elements but "
                                   f"{want} ({want.elems:,}) are expected")
        return
    if port.merge == Merge.EACH:
        for src, got in delivered:
            if got != want:
                raise NetworkError(f"{label}: input '{src}' is {got} but {want} is expected")
        return
    if all((s.h, s.w) == (want.h, want.w) for _, s in delivered):
        got_c = sum(s.c for _, s in delivered)
        if got_c != want.c:
            raise NetworkError(
                f"{label}: inputs {srcs} provide {got_c} channels but {want.c} are expected")
        return
    # Tokens laid out as rows x columns again (the gradient of patches that became tokens).
    if all((s.h, s.w) == (want.h * want.w, 1) for _, s in delivered) and sum(s.c for _, s in delivered) == want.c:
        return
    # An FC layer (or anything fed by flat vectors) flattens what it receives.
    flat = layer.op == Op.FC or all((s.h, s.w) == (1, 1) for _, s in delivered)
    got_elems = sum(s.elems for _, s in delivered)
    if flat and got_elems == want.elems:
        return
    shapes = ", ".join(f"'{s}' {shape}" for s, shape in delivered)
    raise NetworkError(f"{label}: inputs {shapes} do not match the expected {want}")


# ------------------------------------------------------------------- builder


class NetworkBuilder:
    """Assembles a :class:`Network` layer by layer, inferring input shapes.

    Each method takes the names of the producers and returns the new layer's
    name. Shapes flow from producers, so a definition only states what a layer
    does; an optional declared ``in_channels`` is checked against them.
    """

    def __init__(self, name: str, batch: int = 64) -> None:
        self.name = name
        self.batch = batch
        self._inputs: dict[str, FmapShape] = {}
        self._layers: dict[str, Layer] = {}
        self._edges: list[Edge] = []

    # -- sources

    def input(self, name: str, channels: int, height: int = 1, width: int | None = None) -> str:
        """Declare an external input (image, token embedding, initial state)."""
        self._check_new(name)
        if any(not isinstance(v, int) or v < 1 for v in (channels, height, width or height)):
            raise NetworkError(f"input '{name}': shape must be positive integers")
        self._inputs[name] = FmapShape(channels, height, height if width is None else width)
        return name

    def shape_of(self, name: str) -> FmapShape:
        if name in self._inputs:
            return self._inputs[name]
        if name in self._layers:
            shape = self._layers[name].out_shape
            if shape is not None:
                return shape
        raise NetworkError(f"network '{self.name}': '{name}' is neither a layer nor a network input")

    # -- layers

    def conv(self, name: str, inputs: str | Iterable[str], k: int, kernel: int | tuple[int, int],
             stride: int | tuple[int, int] = 1, pad: int | Sequence[int] = 0, groups: int = 1,
             dilation: int | tuple[int, int] = 1, in_channels: int | None = None) -> str:
        srcs, shape = self._gather(name, inputs, in_channels)
        s, r = _pair(kernel)
        return self._add(Layer(name, Op.CONV, shape.c, k, shape.h, shape.w, s, r, _pair(stride),
                               _pads(pad), _pair(dilation), groups), srcs)

    def depthwise(self, name: str, inputs: str | Iterable[str], kernel: int | tuple[int, int],
                  stride: int | tuple[int, int] = 1, pad: int | Sequence[int] = 0,
                  multiplier: int = 1) -> str:
        srcs, shape = self._gather(name, inputs, None)
        s, r = _pair(kernel)
        return self._add(Layer(name, Op.CONV, shape.c, shape.c * multiplier, shape.h, shape.w, s, r,
                               _pair(stride), _pads(pad), (1, 1), shape.c), srcs)

    def fc(self, name: str, inputs: str | Iterable[str], k: int, in_features: int | None = None) -> str:
        srcs, shape = self._gather(name, inputs, None, concat_flat=True)
        if in_features is not None and in_features != shape.elems:
            raise NetworkError(
                f"layer '{name}': inputs {srcs} provide {shape.elems} features but in_features={in_features}")
        return self._add(Layer(name, Op.FC, shape.c, k, shape.h, shape.w, shape.h, shape.w), srcs)

    def pool(self, name: str, inputs: str | Iterable[str], kernel: int | tuple[int, int],
             stride: int | tuple[int, int] | None = None, pad: int | Sequence[int] = 0,
             mode: str = "max", ceil_mode: bool = False) -> str:
        srcs, shape = self._gather(name, inputs, None)
        s, r = _pair(kernel)
        st = (s, r) if stride is None else _pair(stride)
        return self._add(Layer(name, Op.POOL, shape.c, shape.c, shape.h, shape.w, s, r, st, _pads(pad),
                               mode=mode, ceil_mode=ceil_mode), srcs)

    def global_pool(self, name: str, inputs: str | Iterable[str], mode: str = "avg") -> str:
        srcs, shape = self._gather(name, inputs, None)
        return self._add(Layer(name, Op.POOL, shape.c, shape.c, shape.h, shape.w, shape.h, shape.w,
                               (shape.h, shape.w), mode=mode), srcs)

    def eltwise(self, name: str, inputs: Sequence[str], mode: str = "add") -> str:
        srcs = _names(inputs)
        if not srcs:
            raise NetworkError(f"layer '{name}': an eltwise layer needs at least one input")
        shapes = [self.shape_of(s) for s in srcs]
        for src, shape in zip(srcs, shapes, strict=True):
            if shape != shapes[0]:
                raise NetworkError(
                    f"layer '{name}': input '{src}' is {shape} but '{srcs[0]}' is {shapes[0]}; "
                    "eltwise inputs must match")
        shape = shapes[0]
        layer = Layer(name, Op.ELTWISE, shape.c, shape.c, shape.h, shape.w, mode=mode, n_inputs=len(srcs))
        return self._add(layer, srcs)

    def scale(self, name: str, inputs: str | Iterable[str], by: str | Iterable[str]) -> str:
        """A channel-wise scaling (squeeze-and-excitation): the C x H x W fmap
        of ``inputs`` times the C x 1 x 1 vector ``by`` produces, channel by
        channel. An ELTWISE ``mul`` with the vector on port ``b``
        (:attr:`Layer.is_scale`): no MACs, C x H x W operations."""
        srcs, shape = self._gather(name, inputs, None)
        vecs, vec = self._gather(name, by, None)
        want = FmapShape(shape.c, 1, 1)
        if vec != want:
            shown = "+".join(f"'{v}'" for v in vecs)
            raise NetworkError(f"layer '{name}': scaling the {shape} input of {srcs} needs a {want} vector "
                               f"but {shown} {'are' if len(vecs) > 1 else 'is'} {vec}")
        layer = Layer(name, Op.ELTWISE, shape.c, shape.c, shape.h, shape.w, mode="mul", operand=Operand.FMAP)
        return self.add_layer(layer, [Edge(s, name) for s in srcs] + [Edge(v, name, "b") for v in vecs])

    def matmul(self, name: str, inputs: str | Iterable[str], out: int, operand: str | Iterable[str] | None = None,
               heads: int = 1, inner: int | None = None, rows: int | None = None) -> str:
        """A matrix product ``[heads, rows, inner] x [heads, inner, out]`` per sample.

        ``inputs`` produce the left operand; ``operand`` the right one when it
        is an fmap (Q x K^T, scores x V), else it is a weight (a projection).
        ``inner`` defaults to the inputs' channels over ``heads``, ``rows`` to
        their rows x columns (the tokens); both may regroup the inputs (a
        reshape or transpose between them: only element counts must agree),
        as grouped-query attention does with ``heads`` = K/V heads and
        ``rows`` = query heads per K/V head x tokens.
        """
        srcs, shape = self._gather(name, inputs, None, concat_flat=True)
        channels, tokens = shape.c, shape.h * shape.w
        if inner is None:
            if channels % heads:
                raise NetworkError(f"layer '{name}': {channels} input channels do not split into {heads} heads")
            inner = channels // heads
        rows = tokens if rows is None else rows
        kind = Operand.WEIGHT if operand is None else Operand.FMAP
        layer = Layer(name, Op.MATMUL, heads * inner, heads * out, rows, 1, groups=heads, operand=kind)
        edges = [Edge(s, name) for s in srcs] + [Edge(s, name, "b") for s in _names(operand or ())]
        return self.add_layer(layer, edges)

    def add_layer(self, layer: Layer, edges: Iterable[Edge]) -> str:
        """Add a fully specified layer with explicit edges (checked on build)."""
        self._check_new(layer.name)
        self._layers[layer.name] = layer
        self._edges.extend(edges)
        return layer.name

    def build(self, kept: Iterable[str] = (), training: bool = False) -> Network:
        return Network(self.name, self.batch, self._inputs, tuple(self._layers.values()),
                       tuple(self._edges), frozenset(kept), training)

    # -- helpers

    def _check_new(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise NetworkError(f"network '{self.name}': layer names must be non-empty strings (got {name!r})")
        if name in self._layers or name in self._inputs:
            raise NetworkError(f"network '{self.name}': name '{name}' is used twice")

    def _gather(self, name: str, inputs: str | Iterable[str], in_channels: int | None,
                concat_flat: bool = False) -> tuple[list[str], FmapShape]:
        srcs = _names(inputs)
        if not srcs:
            raise NetworkError(f"layer '{name}': has no inputs")
        shapes = [self.shape_of(s) for s in srcs]
        first = shapes[0]
        if all((s.h, s.w) == (first.h, first.w) for s in shapes):
            shape = FmapShape(sum(s.c for s in shapes), first.h, first.w)
        elif concat_flat:
            shape = FmapShape(sum(s.elems for s in shapes), 1, 1)
        else:
            desc = ", ".join(f"'{s}' {sh}" for s, sh in zip(srcs, shapes, strict=True))
            raise NetworkError(f"layer '{name}': inputs {desc} differ in height/width and cannot be concatenated")
        if in_channels is not None and in_channels != shape.c:
            raise NetworkError(
                f"layer '{name}': inputs {srcs} provide {shape.c} channels but in_channels={in_channels}")
        return srcs, shape

    def _add(self, layer: Layer, srcs: Sequence[str]) -> str:
        return self.add_layer(layer, (Edge(s, layer.name) for s in srcs))


def _names(inputs: str | Iterable[str]) -> list[str]:
    return [inputs] if isinstance(inputs, str) else list(inputs)


def _pair(v: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(v, int):
        return (v, v)
    t = tuple(v)
    if len(t) != 2:
        raise NetworkError(f"expected one integer or two (height, width), got {v!r}")
    return (int(t[0]), int(t[1]))


def _pads(v: int | Sequence[int]) -> tuple[int, int, int, int]:
    """Padding as (top, left, bottom, right) from an int, a (h, w) pair or four values."""
    if isinstance(v, int):
        return (v, v, v, v)
    t = tuple(int(x) for x in v)
    if len(t) == 2:
        return (t[0], t[1], t[0], t[1])
    if len(t) == 4:
        return t
    raise NetworkError(f"padding must be one, two or four integers, got {v!r}")


__all__ = ["Edge", "Network", "NetworkBuilder", "Phase"]
