"""nn_dataflow's schedule evaluated by kapla's evaluator, layer by layer.

Each layer's scheme becomes kapla's directives (:mod:`.convert`) and is
costed by :func:`kapla.model.evaluate.evaluate` on the hardware the caller
gives (``multinode_nndataflow`` to count as nn_dataflow does). Where the
segment keeps data on chip -- an input forwarded from its producer, an
output kept for its consumer, weights pinned for the whole run -- the layer
is costed with that :class:`~kapla.model.feed.Feed`, as nn_dataflow's
``is_dram`` flags and its zero DRAM weight traffic say.

nn_dataflow's schemes are valid in nn_dataflow's rules; kapla's check may
disagree (a processing pass streams a whole input row through a PE whose
register file kapla sees holding it; a PE left idle by Eyeriss's rounding).
The layer is costed all the same and kapla's objections are kept as notes,
so a difference in the rules is shown, never hidden.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.segment import AnyRegion
from kapla.interop.nn_dataflow.convert import FIL, NdfScheme, to_layer_scheme
from kapla.interop.nn_dataflow.reader import LayerSchedule
from kapla.model.evaluate import LayerCost, evaluate
from kapla.model.feed import FROM_DRAM, Feed
from kapla.model.segment import dram_distance, region_arch
from kapla.workload.network import Network

#: NoC hops a forwarded fmap travels between neighbouring regions (nn_dataflow
#: counts its own per-node distances; kapla's hop model is coarser).
FORWARD_HOPS = 1.0


@dataclass(frozen=True)
class ImportedLayer:
    """One layer of an imported schedule: kapla's directives, their cost, kapla's objections."""

    name: str
    scheme: LayerScheme
    feed: Feed
    cost: LayerCost
    notes: tuple[str, ...]


def feed_of(schedule: LayerSchedule, has_weights: bool, dram_hops: float | None = None,
            forwarded: float = 0.0) -> Feed:
    """Where nn_dataflow's scheme gets its data: DRAM or on chip (``dram_hops``: its
    nodes' mean distance to the DRAM channels, None: the hardware's own). ``forwarded``:
    the share of its input words its producers in the same segment make; nn_dataflow
    marks such an input as from DRAM when another part of it is, and reads only that
    part from DRAM (an LSTM's ``cell_cout_f``: the cell's C, not its forget gate's output)."""
    src_dram, dst_dram = schedule.is_dram
    pinned = has_weights and schedule.access[0][FIL] == 0.0
    if src_dram and not forwarded and dst_dram and not pinned and dram_hops is None:
        return FROM_DRAM
    if not src_dram:  # all of it forwarded
        hops, share = FORWARD_HOPS, 1.0
    elif forwarded:  # its segment's part forwarded, the rest from DRAM
        hops, share = FORWARD_HOPS, forwarded
    else:
        hops, share = None, 1.0
    # nn_dataflow counts no read of weights kept on chip that its scheme streams past the node
    # buffers; its schedules are costed as it counts them (kapla's own read them there)
    return Feed(ifm_hops=hops, to_dram=dst_dram, pinned=pinned, dram_hops=dram_hops, ifm_share=share,
                free_bypassed_pins=pinned)


def import_layer(net: Network, batch: int, arch: ArchSpec, name: str, schedule: LayerSchedule,
                 region: AnyRegion | None = None, segment: Iterable[str] = ()) -> ImportedLayer:
    """Layer ``name`` of ``net`` under nn_dataflow's scheme ``schedule``, on the nodes
    ``region`` of the chip ``arch`` (None: the whole chip); ``segment``: the layers of
    its segment (whose outputs reach it on chip)."""
    layer = net[name]
    producers = net.producers(name)
    local = arch if region is None else region_arch(arch, region)
    directives = to_layer_scheme(layer, batch, NdfScheme.of(schedule), local.levels[0].array,
                                 local.levels[-2].array, ifm_name=producers[0] if producers else None)
    inside = set(segment)
    forwarded = net.input_share(name, [p for p in producers if p in inside and p != name])
    feed = feed_of(schedule, layer.has_weights, None if region is None else dram_distance(arch, region), forwarded)
    checked = evaluate(directives, local, feed)
    cost = checked if checked.valid else evaluate(directives, local, feed, check=False, feed_rule=False)
    notes: tuple[str, ...] = ()
    if not checked.valid:
        # the structural rules hide the feed's from the check: both are kept
        fed = evaluate(directives, local, feed, check=False)
        notes = tuple(dict.fromkeys(str(v) for v in checked.validity.reasons + fed.validity.reasons))
    return ImportedLayer(name, directives, feed, cost, notes)
