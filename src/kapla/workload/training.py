"""Training expansion: an inference DAG becomes forward + backward layers.

Walking the forward layers in reverse topological order, every layer gets the
gradient of its output (``dY``) from its consumers and produces:

* CONV/FC: a weight-gradient layer ``<name>.wgrad`` (reads the forward input
  ``X`` and ``dY``) and a backward-data layer ``<name>.bwd`` (reads ``dY``,
  writes ``dX``). Both run the forward loop nest, so each costs exactly the
  forward MACs. ``.bwd`` is omitted when no producer is a layer, since nothing
  needs the gradient of the network's inputs.
* POOL: ``<name>.bwd`` (max pooling also reads ``X`` to find the arg-max).
* ELTWISE add: nothing; its ``dY`` flows straight to every operand.
* ELTWISE mul/unary and the vector modes (softmax, norms, activations...):
  one ``<name>.bwd<i>`` per operand that needs a gradient, reading ``dY``
  and the other operand(s) (the input itself for a one-operand mode), doing
  the mode's backward operations per element.
* MATMUL ``C = A x B``: the backward of a matrix product is two matrix
  products. ``<name>.bwd`` computes ``dA = dY x B^T`` (reading B, the
  weights or the fmap operand) and ``<name>.wgrad`` computes
  ``dB = A^T x dY``: the weight gradient of a projection, or, when B is an
  fmap (Q x K^T, scores x V), the gradient its producer receives. Each has
  the forward MACs.
* A channel-wise scaling ``y = x * b`` (b one value per channel,
  squeeze-and-excitation) the same way: ``<name>.bwd`` computes
  ``dx = dy * b`` (reading ``dy`` and the vector), ``<name>.wgrad`` the
  vector's gradient ``db = sum over H x W of dy * x`` (reading ``x`` and
  ``dy``), which the vector's producer receives. Neither has MACs; each does
  one operation per element of ``x``.

A layer whose output feeds several consumers sums their contributions in an
element-wise ``<name>.gradsum`` layer; a concatenation is undone by channel
(or, for tokens, row) slices on the edges; where consumers read ranges of an
output (a split of a fused QKV projection, a class token), the gradients of
the ranges are concatenated back in order, and the rows no consumer read
enter as zero gradients (external inputs ``<name>.grad<row>``). The loss
gradient of each network output enters as an external input
``<name>.grad``. Forward outputs read again by a backward layer are listed
in :attr:`Network.kept`: they must be written to DRAM.

So the training MACs are exactly ``3 x`` the forward CONV/FC/MATMUL MACs
minus the MACs of the layers with weights fed only by network inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kapla.errors import NetworkError
from kapla.workload.layer import FmapShape, Layer, Op, Phase
from kapla.workload.network import Edge, Network


@dataclass(frozen=True, slots=True)
class _Grad:
    """Where (part of) a gradient comes from: a node and an optional channel
    slice of its output; ``of``/``of_rows``: the channels or rows of the
    receiving layer's output it is the gradient of, when its consumer read
    only those (a split of a fused projection, a class token)."""

    src: str
    channels: tuple[int, int] | None = None
    of: tuple[int, int] | None = None
    of_rows: tuple[int, int] | None = None
    rows: tuple[int, int] | None = None  # a row slice of the source's output (a concatenation of tokens)

    def edge(self, dst: str, port: str) -> Edge:
        return Edge(self.src, dst, port, self.channels, self.rows)


def _for(grad: _Grad, e: Edge) -> _Grad:
    """``grad``, the gradient of what forward edge ``e`` carried, for ``e``'s producer."""
    if (e.channels or e.rows) and (grad.of or grad.of_rows):
        raise NetworkError(f"layer '{e.dst}': training through a slice of a slice of '{e.src}' is not supported")
    return replace(grad, of=e.channels, of_rows=e.rows)


def _edges(dy: tuple[_Grad, ...], dst: str) -> list[Edge]:
    return [g.edge(dst, "dy") for g in dy]


def training_network(net: Network) -> Network:
    """The training DAG of the inference network ``net``."""
    if net.training:
        raise NetworkError(f"network '{net.name}' is already a training network")
    inputs = dict(net.inputs)
    layers: list[Layer] = list(net.layers)
    edges: list[Edge] = list(net.edges)
    kept: set[str] = set(net.kept)
    grads: dict[str, list[_Grad]] = {layer.name: [] for layer in net.layers}

    def add(layer: Layer, new_edges: list[Edge]) -> str:
        layers.append(layer)
        edges.extend(new_edges)
        return layer.name

    def forward_inputs(layer: Layer, port: str, skip: int | None = None, of: str | None = None) -> list[Edge]:
        """The forward in-edges of ``layer`` (into its port ``of``, or all)
        re-targeted at a backward layer's port."""
        out = []
        for i, e in enumerate(net.in_edges(layer.name)):
            if i == skip or (of is not None and e.port != of):
                continue
            out.append(Edge(e.src, "", port, e.channels, e.rows))
            if e.src not in net.inputs:
                kept.add(e.src)
        return out

    def retarget(es: list[Edge], dst: str) -> list[Edge]:
        return [Edge(e.src, dst, e.port, e.channels, e.rows) for e in es]

    for layer in reversed(net.layers):
        dy = _output_gradient(layer, grads[layer.name], inputs, add)
        in_edges = net.in_edges(layer.name)
        needs = [e.src not in net.inputs for e in in_edges]

        if layer.op == Op.MATMUL or layer.is_scale:
            # A channel-wise scaling y = x * b as a product: dx = dy * b, db = sum over H x W of dy * x.
            a_edges = tuple(e for e in in_edges if e.port == "in")
            b_edges = tuple(e for e in in_edges if e.port == "b")
            if layer.has_weights or any(e.src not in net.inputs for e in b_edges):
                name = f"{layer.name}.wgrad"
                add(layer.with_phase(Phase.WGRAD, name),
                    retarget(forward_inputs(layer, "x", of="in"), name) + _edges(dy, name))
                if b_edges:
                    _split_edges(net, b_edges, layer.operand_shape, name, grads)
            if any(e.src not in net.inputs for e in a_edges):
                name = f"{layer.name}.bwd"
                add(layer.with_phase(Phase.BWD_DATA, name),
                    _edges(dy, name) + retarget(forward_inputs(layer, "b", of="b"), name))
                _split_edges(net, a_edges, layer.ifmap, name, grads)
            continue

        if layer.op == Op.ELTWISE and layer.mode == "add" and layer.n_inputs == 1 and len(in_edges) > 1:
            # A constant added to a concatenation (ViT's position embeddings): its gradient, split back.
            if len(dy) != 1 or dy[0].channels or dy[0].rows:
                raise NetworkError(f"layer '{layer.name}': its gradient is itself a concatenation, which kapla "
                                   "cannot split back over its inputs")
            _split_edges(net, in_edges, layer.ifmap, dy[0].src, grads)
            continue

        if layer.op == Op.ELTWISE and layer.mode == "add":
            for e, need in zip(in_edges, needs, strict=True):
                if need:
                    if len(dy) > 1 and (e.channels or e.rows):
                        raise NetworkError(f"layer '{layer.name}': training through a slice of '{e.src}' whose "
                                           "gradient is a concatenation is not supported")
                    grads[e.src].extend(_for(g, e) for g in dy)
            continue

        if layer.op == Op.ELTWISE and layer.n_inputs == 1:
            # One operand, maybe a concatenation: one backward layer, its gradient split back.
            if any(needs):
                name = f"{layer.name}.bwd"
                bwd = layer.with_phase(Phase.BWD_DATA, name)
                extra = retarget(forward_inputs(layer, "x"), name) if bwd.backward_reads_input else []
                add(bwd, _edges(dy, name) + extra)
                _split_gradient(net, layer, name, grads)
            continue

        if layer.op == Op.ELTWISE:
            # d(a*b)/da = dY * b: one backward layer per operand needing a gradient.
            for i, (e, need) in enumerate(zip(in_edges, needs, strict=True)):
                if not need:
                    continue
                name = f"{layer.name}.bwd{i}" if len(in_edges) > 1 else f"{layer.name}.bwd"
                others = forward_inputs(layer, "x", skip=i) if len(in_edges) > 1 else forward_inputs(layer, "x")
                add(layer.with_phase(Phase.BWD_DATA, name), _edges(dy, name) + retarget(others, name))
                grads[e.src].append(_for(_Grad(name), e))
            continue

        if layer.has_weights:
            name = f"{layer.name}.wgrad"
            add(layer.with_phase(Phase.WGRAD, name),
                retarget(forward_inputs(layer, "x"), name) + _edges(dy, name))

        if not any(needs):
            continue
        name = f"{layer.name}.bwd"
        bwd = layer.with_phase(Phase.BWD_DATA, name)
        extra = retarget(forward_inputs(layer, "x"), name) if any(p.name == "x" for p in bwd.ports) else []
        add(bwd, _edges(dy, name) + extra)
        _split_gradient(net, layer, name, grads)

    return Network(net.name, net.batch, inputs, tuple(layers), tuple(edges), frozenset(kept), training=True)


def _output_gradient(layer: Layer, parts: list[_Grad], inputs: dict, add) -> tuple[_Grad, ...]:
    """The nodes holding ``dY`` of ``layer``: the loss, a single consumer, or a
    sum; where consumers read channel or row ranges of the output (a split, a
    class token), the gradient of each range (summed per range) in order, the
    ranges no consumer read as zeros from DRAM (external inputs)."""
    if not parts:
        name = f"{layer.name}.grad"
        inputs[name] = layer.ofmap
        return (_Grad(name),)
    shape = layer.ofmap
    by_rows = any(p.of_rows is not None for p in parts)

    def span(p: _Grad) -> tuple[int, int] | None:
        return p.of_rows if by_rows else p.of

    ranges = sorted({r for r in map(span, parts) if r is not None})
    if not ranges:
        return (_sum(layer.name, parts, shape, add),)
    if any(span(p) is None or (by_rows and p.of is not None) for p in parts) or any(
            a[1] > b[0] for a, b in zip(ranges, ranges[1:], strict=False)):
        raise NetworkError(f"layer '{layer.name}': its consumers read overlapping or mixed ranges of its output, "
                           "which kapla's training expansion cannot put back together")
    extent = shape.h if by_rows else shape.c

    def piece(lo: int, hi: int) -> FmapShape:
        return FmapShape(shape.c, hi - lo, shape.w) if by_rows else FmapShape(hi - lo, shape.h, shape.w)

    out, at = [], 0
    for lo, hi in ranges + [(extent, extent)]:
        if at < lo:  # no consumer read these: their gradient is zero
            name = f"{layer.name}.grad{at}"
            inputs[name] = piece(at, lo)
            out.append(_Grad(name))
        if lo < hi:
            out.append(_sum(f"{layer.name}.{lo}", [p for p in parts if span(p) == (lo, hi)], piece(lo, hi), add))
        at = hi
    return tuple(out)


def _sum(label: str, parts: list[_Grad], shape: FmapShape, add) -> _Grad:
    if len(parts) == 1:
        return replace(parts[0], of=None, of_rows=None)
    name = f"{label}.gradsum"
    total = Layer(name, Op.ELTWISE, shape.c, shape.c, shape.h, shape.w, mode="add", n_inputs=len(parts))
    add(total, [p.edge(name, "in") for p in parts])
    return _Grad(name)


def _split_gradient(net: Network, layer: Layer, bwd: str, grads: dict[str, list[_Grad]]) -> None:
    """Hand each layer producer its part of ``dX``, undoing a channel concatenation."""
    _split_edges(net, net.in_edges(layer.name), layer.ifmap, bwd, grads)


def _split_edges(net: Network, in_edges: tuple[Edge, ...], shape: FmapShape, bwd: str,
                 grads: dict[str, list[_Grad]]) -> None:
    """Hand the producer of each of ``in_edges`` its part of the gradient
    ``bwd`` writes (of ``shape``), undoing a channel concatenation."""
    if len(in_edges) == 1:
        e = in_edges[0]
        if e.src not in net.inputs:
            grads[e.src].append(_for(_Grad(bwd), e))
        return
    shapes = [net.output_shape(e.src) for e in in_edges]
    if shape.w == 1 and all(s is not None and s.c == shape.c and e.channels is None and e.rows is None
                            for s, e in zip(shapes, in_edges, strict=True)):
        # A concatenation of token rows (a class token before the patches): split by rows.
        row = 0
        for e, s in zip(in_edges, shapes, strict=True):
            assert s is not None
            rows = s.elems // s.c
            if e.src not in net.inputs:
                grads[e.src].append(_for(_Grad(bwd, rows=(row, row + rows)), e))
            row += rows
        return
    offset = 0
    for e in in_edges:
        src_shape = net.output_shape(e.src)
        assert src_shape is not None, e.src  # a producer of a forward layer outputs an fmap
        width = (e.channels[1] - e.channels[0]) if e.channels else src_shape.c
        if (src_shape.h, src_shape.w) != (shape.h, shape.w):
            # Another layout (a flattening FC, a matmul's operand of several
            # producers): the split is in elements, as many channels of the
            # gradient as hold the producer's elements.
            width, rest = divmod(src_shape.elems, shape.h * shape.w)
            if rest:
                raise NetworkError(f"layer '{e.dst}': the gradient of its input '{e.src}' ({src_shape}) is no "
                                   f"channel range of its {shape} gradient")
        if e.src not in net.inputs:
            grads[e.src].append(_for(_Grad(bwd, (offset, offset + width)), e))
        offset += width
