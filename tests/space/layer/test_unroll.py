"""A level's spatial choices (kapla.space.layer.unroll)."""

import math

from kapla.dataflow.tensors import layer_dims
from kapla.space.layer import skeletons, unroll
from kapla.space.layer.unroll import Spatial, partition_options
from kapla.workload.layer import Layer, Op


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
