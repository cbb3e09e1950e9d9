import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.dataflow.directives import Stack
from kapla.dataflow.tensors import RELEVANT, Kind, tensor_roles
from kapla.space.layer.classic_view import skeletons
from kapla.space.layer.skeletons import (
    _even_factorizations,
    factorizations,
    node_partitions,
    read_kinds,
    sharing_by_reads,
    sharing_of,
    splits_evenly,
)
from kapla.workload.zoo import get_network

ALEXNET = get_network("alexnet", 64)


def test_factorizations_are_complete():
    assert sorted(factorizations(4, 2)) == [(1, 4), (2, 2), (4, 1)]
    assert len(factorizations(256, 3)) == math.comb(8 + 2, 2)  # 2^8 over 3 slots


def test_even_splits():
    assert splits_evenly(64, 16) and splits_evenly(55, 5)
    assert not splits_evenly(55, 16)  # 16 blocks of 4 pad 64 - 55 = 9 > 10 %
    assert not splits_evenly(60, 16)  # the last of 16 blocks of 4 would be empty


def test_partitions_fill_the_region_and_split_evenly():
    layer = ALEXNET["conv2_a"]
    full = {"N": 64, **layer.loops}
    parts = node_partitions(layer, 64, (16, 16))
    assert parts
    for p in parts:
        assert math.prod(s.rows for s in p.stacks) == 16 and math.prod(s.cols for s in p.stacks) == 16
        assert all(splits_evenly(full[s.dim], s.count) for s in p.stacks)
    assert len({tuple(sorted(p.factors.items())) for p in parts}) == len(parts)


def test_skeletons_cover_sharing_options():
    arch = load_arch("multinode_4x4")
    skels = list(skeletons(ALEXNET["conv3_a"], 64, arch))
    shared = {s.shr for s in skels}
    assert () in shared and any(s for s in shared)
    off = list(skeletons(ALEXNET["conv3_a"], 64, arch.with_options(buffer_sharing=False)))
    assert {s.shr for s in off} == {()} and len(off) < len(skels)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 64), st.lists(st.integers(1, 300), min_size=0, max_size=4))
def test_the_even_factorizations_are_the_factorizations_that_split_every_size_evenly(n, sizes):
    # node partitions walk only counts that split their dim evenly: the same counts, in the same order
    counts = factorizations(n, len(sizes)) if sizes else ((),)
    want = [c for c in counts if all(splits_evenly(s, k) for s, k in zip(sizes, c, strict=True))]
    assert list(_even_factorizations(n, tuple(sizes))) == want


_TRAINING = get_network("alexnet", 4).to_training()
_LAYERS = list(_TRAINING)  # every phase: forward, data and weight gradients


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("NGCKYXSR"), st.integers(1, 4), st.integers(1, 4)), max_size=4),
       st.sampled_from(range(len(_LAYERS))))
def test_sharing_options_are_each_read_kinds_groups_of_nodes_needing_the_same_data(stacks, which):
    # the options kept per pair of group sizes are what the rule gives for the layer itself:
    # none, then each kind the layer reads whose copy more than one node needs, then both
    layer = _LAYERS[which]
    stacks = tuple(Stack(d, r, c) for d, r, c in stacks)
    read = {r.kind for r in tensor_roles(layer) if not r.written}
    groups = {k: math.prod(s.count for s in stacks if s.dim not in RELEVANT[k])
              for k in (Kind.IFM, Kind.WGT) if k in read}
    groups = {k: n for k, n in groups.items() if n > 1}
    expected = [()] + [tuple((k, groups[k]) for k in kinds)
                       for r in range(1, len(groups) + 1) for kinds in itertools.combinations(sorted(groups), r)]
    assert list(sharing_of(stacks, layer)) == expected
    assert sharing_by_reads(stacks, read_kinds(layer)) is sharing_of(stacks, layer)  # kept per group sizes
