"""kapla's evaluation of an nn_dataflow schedule, under nn_dataflow's conventions."""

from __future__ import annotations

from collections import defaultdict

from kapla.arch.spec import ArchSpec
from kapla.interop.nn_dataflow.figures import Figures, ToolFigures
from kapla.interop.nn_dataflow.imported import ImportedLayer, import_layer
from kapla.interop.nn_dataflow.reader import LEVELS, NnDataflowRun
from kapla.interop.nn_dataflow.regions import layer_regions
from kapla.model.hardware import ITCN, STATIC
from kapla.workload.network import Network


def kapla_figures(run: NnDataflowRun, net: Network, arch: ArchSpec) -> ToolFigures:
    """Convert each layer's scheme of ``run`` into kapla's directives and evaluate them on ``arch``.

    ``net`` is nn_dataflow's network as kapla builds it (:func:`~kapla.interop.nn_dataflow.networks.network_of_run`:
    layer names are the keys of ``run.schedules``); ``arch`` is the run's hardware
    (:func:`~kapla.interop.nn_dataflow.hardware.arch_from_run`). Returns kapla's
    figures: per layer in ``run.schedules`` order, with accesses keyed DRAM,
    GBUF, ITCN, REGF (:data:`~kapla.interop.nn_dataflow.reader.LEVELS`) and
    kapla's objections to the layer's scheme as its notes, and the network's total.
    """
    imported = imported_layers(run, net, arch)
    # nn_dataflow's levels by position: whatever the hardware calls them
    regf, gbuf, dram = (level.name for level in arch.levels)
    names = dict(zip(LEVELS, (dram, gbuf, ITCN, regf), strict=True))
    layers = {im.name: _figures(im, names, arch.static_energy) for im in imported}
    # a segment's regions run side by side; the layers of one region one after another
    segments: dict[int, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for im in imported:
        seg, spatial, _ = run.schedules[im.name].sched_seq
        segments[seg][spatial] += im.cost.time
    time = sum(max(stages.values()) for stages in segments.values())
    # static energy over the run, not over the layers' own times added up
    static = sum(im.cost.energy.get(STATIC, 0.0) for im in imported)
    energy = sum(im.cost.total_energy for im in imported) - static + arch.static_energy * time
    total = Figures(energy, time, {lvl: sum(f.accesses[lvl] for f in layers.values()) for lvl in LEVELS},
                    sum(f.noc_hops for f in layers.values()))
    return ToolFigures(total, layers)


def imported_layers(run: NnDataflowRun, net: Network, arch: ArchSpec) -> list[ImportedLayer]:
    """Each layer of ``run`` as kapla's directives and their cost on its nodes, in schedule order."""
    regions = layer_regions(run)
    segments: dict[int, list[str]] = defaultdict(list)
    for name, s in run.schedules.items():
        segments[s.segment].append(name)
    return [import_layer(net, run.batch, arch, name, s, regions[name], segments[s.segment])
            for name, s in run.schedules.items()]


def _figures(im: ImportedLayer, names: dict[str, str], static: float) -> Figures:
    c = im.cost
    # a layer's static energy is the whole chip's over its time, as nn_dataflow counts it
    # (its region's share alone would leave the other nodes' uncounted)
    energy = c.total_energy - c.energy.get(STATIC, 0.0) + static * c.time
    return Figures(energy, c.time, {lvl: c.level_accesses(names[lvl]) for lvl in LEVELS}, c.noc_hops,
                   im.notes)
