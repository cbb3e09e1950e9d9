"""Size and work statistics of a network, computed as TANGRAM Table 2 does.

An fmap is a layer's output (pooling and element-wise outputs included,
network inputs excluded); weights exclude biases; "total" sums over layers.
Operations count what the cost model charges at the PE's operation energy:
MACs, and the comparisons and element-wise steps of pooling, softmax, norms,
activations (:attr:`Layer.ops`). Layers are also summed by op class
(:attr:`Layer.op_class`: projection, attention, softmax, norm, ...).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from kapla.workload.layer import Op, Phase
from kapla.workload.network import Network


@dataclass(frozen=True, slots=True)
class LayerStats:
    name: str
    op: str
    phase: str
    description: str
    macs: int  # whole batch
    ops: int  # whole batch: MACs or the element-wise work of a layer without MACs
    op_class: str
    out_bytes: int  # the layer's output: fmap for the whole batch, or the weight gradient
    weight_bytes: int


@dataclass(frozen=True, slots=True)
class ClassStats:
    """The layers of one op class, summed."""

    op_class: str
    layers: int
    macs: int
    ops: int
    weight_bytes: int


@dataclass(frozen=True, slots=True)
class NetworkStats:
    name: str
    batch: int
    training: bool
    word_bits: int
    layers: int
    conv_layers: int
    fc_layers: int
    matmul_layers: int  # by weights (projections) and of two fmaps (attention)
    macs: int
    fmap_largest_bytes: int
    fmap_total_bytes: int
    weight_largest_bytes: int
    weight_total_bytes: int
    per_layer: tuple[LayerStats, ...]
    by_class: tuple[ClassStats, ...] = ()

    def to_dict(self, per_layer: bool = True) -> dict:
        data = {"format": "kapla-stats", "version": STATS_VERSION, **asdict(self)}
        data["by_class"] = [asdict(c) for c in self.by_class]
        if per_layer:
            data["per_layer"] = [asdict(ls) for ls in self.per_layer]
        else:
            del data["per_layer"]
        return data


STATS_VERSION = 1  # of the JSON statistics (docs/result-schema.json)


def layer_stats(net: Network, word_bits: int = 16) -> tuple[LayerStats, ...]:
    word = word_bits / 8
    out = []
    for layer in net:
        if layer.out_shape is not None:
            out_elems = layer.out_shape.elems * net.batch
        else:  # a weight gradient does not scale with the batch
            out_elems = layer.weight_elems
        weights = layer.weight_elems if layer.phase == Phase.FWD else 0
        out.append(LayerStats(layer.name, str(layer.op), str(layer.phase), layer.describe(),
                              layer.macs * net.batch, layer.ops * net.batch, layer.op_class,
                              int(out_elems * word), int(weights * word)))
    return tuple(out)


def network_stats(net: Network, word_bits: int = 16) -> NetworkStats:
    """Statistics of ``net`` at its batch size, with ``word_bits``-bit words."""
    per_layer = layer_stats(net, word_bits)
    fmaps = [ls.out_bytes for ls, layer in zip(per_layer, net, strict=True) if layer.out_shape is not None]
    weights = [ls.weight_bytes for ls in per_layer if ls.weight_bytes]
    fwd = [layer for layer in net if layer.phase == Phase.FWD]
    classes: dict[str, list[LayerStats]] = {}
    for ls in per_layer:
        classes.setdefault(ls.op_class, []).append(ls)
    by_class = tuple(ClassStats(name, len(group), sum(s.macs for s in group), sum(s.ops for s in group),
                                sum(s.weight_bytes for s in group)) for name, group in classes.items())
    return NetworkStats(
        name=net.name,
        batch=net.batch,
        training=net.training,
        word_bits=word_bits,
        layers=len(net),
        conv_layers=sum(1 for layer in fwd if layer.op == Op.CONV),
        fc_layers=sum(1 for layer in fwd if layer.op == Op.FC),
        matmul_layers=sum(1 for layer in fwd if layer.op == Op.MATMUL),
        macs=sum(ls.macs for ls in per_layer),
        fmap_largest_bytes=max(fmaps, default=0),
        fmap_total_bytes=sum(fmaps),
        weight_largest_bytes=max(weights, default=0),
        weight_total_bytes=sum(weights),
        per_layer=per_layer,
        by_class=by_class,
    )
