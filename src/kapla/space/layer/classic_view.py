"""The classic three-level hierarchy's view of the one layer space.

On PE registers under a node buffer under DRAM (every level holding every
tensor in one buffer, one word width, a PE-mapping template on the PE array,
partitions over the nodes: :func:`classic`), a frame of
:func:`kapla.space.layer.frames.frames` is a :class:`Skeleton`: its node
level's stacks a node partition, its register level's spatial choice a PE
mapping, its buffer sharing and what loop blocking must still cover. The
skeletons are those frames (in their order) but the ones whose mapping
leaves the template's fixed loops or unit to loop blocking (strips and
partial filters, which the classic evaluator does not cost); the fast 3-level
evaluator (:mod:`kapla.space.layer.batch`) and the exhaustive solver's walk
on this hierarchy work on them.
"""

from __future__ import annotations

from collections.abc import Iterator

from kapla.arch.spec import ArchSpec
from kapla.dataflow.mapping import PeMapping
from kapla.dataflow.tensors import DIM_INDEX
from kapla.space.layer.frames import Frame, frames
from kapla.space.layer.skeletons import BLOCK_DIMS, NodePartition, Skeleton
from kapla.workload.layer import Layer


def classic(arch: ArchSpec) -> bool:
    """The hardware this module's space describes: PE registers under a node
    buffer under DRAM, every level holding every tensor in one buffer, one word
    width, a PE-mapping template on the PE array and partitions of the nodes.
    Other hierarchies are searched through :mod:`kapla.space.layer.frames`."""
    if len(arch.levels) != 3 or len(set(arch.tensor_bits_of(k) for k in ("ifm", "wgt", "ofm"))) != 1:
        return False
    for i in range(2):
        if arch.capacity_is_split(i) or not all(arch.holds(i, k) for k in ("ifm", "wgt", "ofm")):
            return False
        if any(getattr(arch.levels[i], f, None) is not None for f in ("read_pj", "write_pj")):
            return False
    return arch.unroll_of(0).kind == "template" and arch.unroll_of(1).kind == "partition"


def skeletons(layer: Layer, batch: int, arch: ArchSpec) -> Iterator[Skeleton]:
    """The skeletons of ``layer`` on the classic hierarchy ``arch``: its frames but the relaxed ones,
    in their order."""
    template = arch.unroll_of(0).template
    assert template is not None  # classic(arch)
    spatial = None
    for frame in frames(layer, batch, arch, relax=False):
        if frame.spatial is not spatial:  # the sharing choices of one spatial choice follow each other
            spatial, (partition, mapping, rest, levels) = frame.spatial, _parts(frame, template)
        yield Skeleton(layer, batch, partition, frame.shr, mapping, rest, levels)


def _parts(frame: Frame, template: str) -> tuple[NodePartition, PeMapping, tuple[tuple[str, int], ...],
                                                  tuple[str, str]]:
    """What a frame's skeletons share whatever their buffer sharing: partition, mapping, what is left, levels."""
    pe, node = frame.spatial
    return (NodePartition(node.stacks), PeMapping(template, pe.unit, pe.stacks, pe.inner, pe.note),
            tuple((d, frame.rest[DIM_INDEX[d]]) for d in BLOCK_DIMS), (frame.levels[0], frame.levels[1]))


__all__ = ["classic", "skeletons"]
