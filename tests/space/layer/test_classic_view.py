"""The classic hierarchy's skeletons are a view of the one layer space's frames, not a second space."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.dataflow.tensors import DIM_INDEX
from kapla.space.layer.classic_view import classic, skeletons
from kapla.space.layer.frames import frames
from kapla.space.layer.skeletons import BLOCK_DIMS
from kapla.workload.layer import Layer, Op

CLASSIC = [load_arch("multinode").with_node_region(2, 4), load_arch("multinode_4x4"), load_arch("edge"),
           load_arch("multinode_nndataflow").with_node_region(3, 3)]


@settings(max_examples=30, deadline=None)
@given(c=st.integers(1, 96), k=st.integers(1, 96), hw=st.integers(1, 28), rs=st.sampled_from([1, 3, 5, 11]),
       batch=st.sampled_from([1, 2, 16]), arch=st.sampled_from(CLASSIC))
def test_skeletons_are_the_unrelaxed_frames_in_order(c, k, hw, rs, batch, arch):
    rs = min(rs, hw)
    layer = Layer("l", Op.CONV, c=c, k=k, h=hw, w=hw, s=rs, r=rs)
    assert classic(arch)
    every = frames(layer, batch, arch)
    plain = [f for f in every if not f.spatial[0].relaxed]
    assert frames(layer, batch, arch, relax=False) == plain
    skels = list(skeletons(layer, batch, arch))
    assert len(skels) == len(plain)
    for skel, frame in zip(skels, plain, strict=True):
        pe, node = frame.spatial
        assert skel.partition.stacks == node.stacks and skel.shr == frame.shr
        assert (skel.mapping.unit, skel.mapping.stacks, skel.mapping.inner) == (pe.unit, pe.stacks, pe.inner)
        assert skel.remaining == tuple((d, frame.rest[DIM_INDEX[d]]) for d in BLOCK_DIMS)


@pytest.mark.parametrize("name", ["simba", "interstellar"])
def test_other_hierarchies_are_not_classic(name):
    assert not classic(load_arch(name))
