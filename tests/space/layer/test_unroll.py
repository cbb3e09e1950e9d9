"""A level's spatial choices (kapla.space.layer.unroll)."""

import math

from kapla.arch import load_arch
from kapla.dataflow.mapping import pe_mappings
from kapla.dataflow.tensors import layer_dims
from kapla.space.layer import skeletons, unroll
from kapla.space.layer.unroll import Spatial, partition_options, spatial_options
from kapla.workload.layer import Layer, Op
from kapla.workload.zoo import get_network


def test_a_node_levels_choices_are_its_partitions_however_often_asked():
    # the choices are kept per kept tuple of partitions: asked again, or after the
    # partitions' own cache let its tuple go (a new tuple, maybe at a reused id), the
    # same choices, one per partition using every node
    extents = layer_dims(Layer("c", Op.CONV, c=64, k=128, h=28, w=28, s=3, r=3, pad=(1, 1, 1, 1)), 16)
    fresh = [Spatial(p.stacks, note="partition") for p in skeletons.node_partitions_of(extents, (4, 4))]
    first = next(partition_options(extents, (4, 4)))
    again = next(partition_options(extents, (4, 4)))
    assert first == again == fresh and len(fresh) > 10
    assert all(a is b for a, b in zip(first, again, strict=True))  # kept, not built again
    skeletons._partitions_of.cache_clear()
    unroll._spatial_of.clear()
    assert next(partition_options(extents, (4, 4))) == fresh
    for sp in fresh:  # every node used: the stacks span the 4x4 grid
        assert math.prod(st.rows for st in sp.stacks) == 4 and math.prod(st.cols for st in sp.stacks) == 4


def test_a_templates_choices_are_one_object_per_mapping_with_the_mappings_values():
    # blocks of other node partitions, and of other solves, give the same mappings again:
    # each is one choice (its loops and unit worked out once), equal to the mapping's values
    arch = load_arch("multinode")
    layer = Layer("c", Op.CONV, c=64, k=128, h=28, w=28, s=3, r=3, pad=(1, 1, 1, 1))
    full = layer_dims(layer, 16)
    template = arch.unroll_of(0).template
    seen: dict = {}
    for n in (1, 2, 4, 8, 16):
        block = dict(full, N=-(-full["N"] // n), K=-(-full["K"] // max(1, n // 2)))
        mappings = pe_mappings(template, layer, block, arch.levels[0].array, arch.counting.streams_rows)
        choices = spatial_options(arch, 0, layer, block)
        assert choices == [Spatial(m.stacks, m.unit, m.inner, m.note) for m in mappings]
        for m, sp in zip(mappings, choices, strict=True):
            assert seen.setdefault((m, m.note), sp) is sp
    assert len(seen) < 5 * len(choices)  # the blocks share most of their mappings
    unroll._choices.clear()  # dropped (a bound on memory): built again, equal
    assert spatial_options(arch, 0, layer, full) == [Spatial(m.stacks, m.unit, m.inner, m.note) for m in
                                                    pe_mappings(template, layer, full, arch.levels[0].array,
                                                                arch.counting.streams_rows)]


def test_relaxed_choices_come_where_no_fixed_block_fits_and_are_choices_of_their_own():
    # AlexNet's conv1_a on multinode: no mapping's fixed blocks fit, so each brings its
    # relaxed variants (strips, partial filters), other choices than the mapping's own,
    # the same objects asked again
    arch = load_arch("multinode").with_node_region(4, 4)
    layer = next(x for x in get_network("alexnet", 1) if x.name == "conv1_a")
    block = layer_dims(layer, 64)
    plain = spatial_options(arch, 0, layer, block, relax=False)
    relaxed = spatial_options(arch, 0, layer, block)
    assert not any(unroll._blocks_fit(arch, layer, tuple(sorted(sp.unit)), tuple(sorted(sp.covered().items())))
                   for sp in plain)
    assert set(plain) < set(relaxed) and all(sp.relaxed for sp in relaxed if sp not in plain)
    assert not any(sp.relaxed for sp in plain)
    assert all(a is b for a, b in zip(relaxed, spatial_options(arch, 0, layer, block), strict=True))
