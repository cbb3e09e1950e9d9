"""KAPLA's intra-layer solver: close to the exhaustive optimum, valid, deterministic,
and honouring a feed (data kept on chip fetched once)."""

import pytest

from kapla.arch import load_arch
from kapla.dataflow.tensors import Kind
from kapla.model.evaluate import Feed, evaluate
from kapla.search.base import NoSchemeError
from kapla.search.layer.exhaustive.solver import ExhaustiveIntraSolver
from kapla.search.layer.kapla.solver import KaplaIntraSolver
from kapla.workload.layer import Layer, Op
from kapla.workload.zoo import get_network

ARCH = load_arch("multinode").with_node_region(2, 2)
LAYERS = [
    Layer("conv", Op.CONV, c=32, k=64, h=28, w=28, s=3, r=3, pad=(1, 1, 1, 1)),
    Layer("fc", Op.FC, c=512, k=256, h=1, w=1),
    Layer("dw", Op.CONV, c=32, k=32, h=14, w=14, s=3, r=3, pad=(1, 1, 1, 1), groups=32),
]


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
def test_close_to_the_exhaustive_optimum(layer):
    kapla = KaplaIntraSolver().solve(layer, 8, ARCH)
    best = ExhaustiveIntraSolver().solve(layer, 8, ARCH)
    assert kapla.cost.valid and evaluate(kapla.scheme, ARCH).valid
    assert best.cost.total_energy <= kapla.cost.total_energy * (1 + 1e-9)
    assert kapla.cost.total_energy <= best.cost.total_energy * 1.05


def test_a_dram_bound_layer_on_the_whole_chip_is_close_to_the_optimum():
    # a large-fmap layer whose DRAM traffic dominates: the ranking must see it
    arch = load_arch("multinode_4x4")
    layer = Layer("big", Op.CONV, c=64, k=64, h=56, w=56, s=3, r=3, pad=(1, 1, 1, 1))
    kapla = KaplaIntraSolver().solve(layer, 4, arch)
    best = ExhaustiveIntraSolver().solve(layer, 4, arch)
    assert kapla.cost.total_energy <= best.cost.total_energy * 1.05


@pytest.mark.parametrize("arch_name, region, net, name, batch", [
    ("edge", None, "resnet50", "conv4_br", 1),
    ("multinode", (4, 4), "mobilenet", "conv1_pw", 64),
], ids=["edge-conv4_br", "4x4-conv1_pw"])
def test_pointwise_layers_reach_the_optimum(arch_name, region, net, name, batch):
    # A register block that is cheap on the PE array can force the node
    # buffer to hold a block too large to keep the inputs, and the DRAM level
    # to re-fetch them (12 % and 22 % above the optimum before the register
    # blocks were ranked with that re-fetch).
    arch = load_arch(arch_name)
    arch = arch.with_node_region(*region) if region else arch
    layer = next(x for x in get_network(net, 1) if x.name == name)
    kapla = KaplaIntraSolver().solve(layer, batch, arch)
    best = ExhaustiveIntraSolver().solve(layer, batch, arch)
    assert kapla.cost.total_energy <= best.cost.total_energy * 1.01


@pytest.mark.parametrize("name, bound", [("alexnet/conv1_a", 1.01), ("mobilenet/conv1", 1.05)],
                         ids=["conv1_a", "mobilenet-conv1"])
def test_relaxed_frames_the_estimate_ranks_last_are_descended(name, bound):
    # On a 4x4 block at batch 64 the frame estimate ranks every strip and
    # partial-filter frame behind the first 30 template frames, yet the
    # optimum lies in one: AlexNet conv1_a's a third below the best template
    # frame (KAPLA +33 % when relaxed frames were re-ranked only from within
    # those 30), MobileNet conv1's 9 % below, six register blocks deep into the
    # frame's ranking and tied in both estimates with a frame that holds less.
    arch = load_arch("multinode").with_node_region(4, 4)
    net, layer_name = name.split("/")
    layer = next(x for x in get_network(net, 1) if x.name == layer_name)
    kapla = KaplaIntraSolver().solve(layer, 64, arch)
    best = ExhaustiveIntraSolver().solve(layer, 64, arch)
    assert best.complete
    assert any(sp.relaxed for sp in _frame_of(best.scheme, arch))
    assert kapla.cost.total_energy <= best.cost.total_energy * bound


def _frame_of(scheme, arch):
    from kapla.space.layer.frames import frames

    stacks = [tuple(lv.stacks) for lv in scheme.levels]
    shr = tuple(scheme.levels[-1].shr)
    unit = dict(scheme.unit)
    for f in frames(scheme.layer, scheme.batch, arch):
        if [tuple(sp.stacks) for sp in f.spatial] == stacks and tuple(f.shr) == shr:
            if all(unit.get(d, 1) % n == 0 for d, n in f.spatial[0].unit):
                return f.spatial
    raise AssertionError("no frame holds the scheme")


def test_latency_ties_go_to_the_lower_energy():
    # On one edge node most schemes of this layer take just its compute steps;
    # of those, both solvers must return a cheap one (KAPLA was 3 % above the
    # cheapest when time ties were left to the search order).
    arch = load_arch("edge")
    layer = next(x for x in get_network("alexnet", 1) if x.name == "conv2_a")
    kapla = KaplaIntraSolver().solve(layer, 1, arch, "latency")
    fastest = ExhaustiveIntraSolver().solve(layer, 1, arch, "latency")
    cheapest = ExhaustiveIntraSolver().solve(layer, 1, arch, "energy")
    assert kapla.cost.time == fastest.cost.time == cheapest.cost.time
    assert fastest.cost.total_energy == pytest.approx(cheapest.cost.total_energy, rel=1e-12)
    assert kapla.cost.total_energy <= fastest.cost.total_energy * 1.01


def test_same_inputs_give_the_same_scheme():
    layer = LAYERS[0]
    a = KaplaIntraSolver().solve(layer, 8, ARCH)
    b = KaplaIntraSolver().solve(layer, 8, ARCH)
    assert a.scheme == b.scheme
    assert a.cost.total_energy == b.cost.total_energy


@pytest.mark.parametrize("feed", [Feed(ifm_hops=2.0), Feed(to_dram=False), Feed(pinned=True),
                                  Feed(ifm_hops=1.0, to_dram=False, pinned=True)],
                         ids=["forwarded", "onchip-out", "pinned", "all"])
def test_a_feed_is_honoured_and_costed(feed):
    layer = Layer("conv", Op.CONV, c=16, k=32, h=14, w=14, s=3, r=3, pad=(1, 1, 1, 1))
    plain = KaplaIntraSolver().solve(layer, 4, ARCH)
    fed = KaplaIntraSolver().solve(layer, 4, ARCH, feed=feed)
    check = evaluate(fed.scheme, ARCH, feed)
    assert check.valid, check.validity
    assert fed.cost.total_energy == pytest.approx(check.total_energy, rel=1e-12)
    # keeping data on chip saves DRAM accesses
    dram = ARCH.levels[-1].name
    assert fed.cost.level_accesses(dram) < plain.cost.level_accesses(dram)
    assert fed.cost.total_energy < plain.cost.total_energy


def test_an_impossible_feed_raises_naming_the_layer():
    # every input channel's window must stay on chip, but the input far outgrows the node buffers
    layer = Layer("huge", Op.CONV, c=256, k=512, h=56, w=56, s=3, r=3, pad=(1, 1, 1, 1))
    arch = load_arch("multinode").with_node_region(1, 1)
    with pytest.raises(NoSchemeError, match="huge"):
        KaplaIntraSolver().solve(layer, 16, arch, feed=Feed(ifm_hops=1.0, to_dram=False, pinned=True))


def test_ifm_name_is_carried_into_the_scheme():
    result = KaplaIntraSolver().solve(LAYERS[1], 8, ARCH, ifm_name="prev")
    assert result.scheme.ifm_name == "prev"
    assert result.cost.valid


def test_mirror_frames_are_descended_once_and_others_get_their_turn():
    """On a square layer, node stacks over Y or X (or the same stacks in the
    other order) give frames alike in both estimates: KAPLA descends one of
    each such kind, so the frames it descends differ. On the documented L2
    design this reaches the exhaustive optimum of MobileNet's conv5_pw, where
    descending three mirror images of one frame left it 6 % above."""
    from pathlib import Path

    import numpy as np

    from kapla.search.layer.kapla import estimates, levels
    from kapla.space.layer.layer_space import LayerSpace
    from kapla.space.problem import Problem

    arch = load_arch(str(Path(__file__).resolve().parents[4] / "examples" / "four_level_l2.yaml"))
    layer = Layer("pw", Op.CONV, c=256, k=256, h=28, w=28, s=1, r=1)
    space = LayerSpace(Problem(layer, 1, arch))
    head, rest, _, arr = levels._rank(space, 4, levels.REFINE, 3, levels.REFINE_REGF)
    assert all(states is None for _, states in rest)
    descended = [i for i, _ in head]
    values = estimates.on_chip(arr, arch) + estimates.dram(arr, arch)
    _, refined, _ = levels._register_blocks(space, descended, arr, 3)
    keys = [(float(values[i]), float(r)) for i, r in zip(descended, refined, strict=True)]
    assert len(set(keys)) == len(keys)
    assert len({np.round(v, 15) for v, _ in keys}) < len(space)  # the layer does have mirror frames
    kapla = KaplaIntraSolver().solve(layer, 1, arch)
    best = ExhaustiveIntraSolver().solve(layer, 1, arch)
    assert kapla.cost.total_energy <= best.cost.total_energy * (1 + 1e-9)


def _four_level_example():
    from pathlib import Path

    return load_arch(str(Path(__file__).resolve().parents[4] / "examples" / "four_level.yaml"))


# Each case: a layer at batch 16 on the four-level example, the switch of one
# of KAPLA's mechanisms for a hierarchy with a level between the registers
# and the node buffer, KAPLA's energy with it off, and the best energy the
# exhaustive search found (docs/benchmarks/exhaustive_branch_and_bound.txt).
#
# * _SHARED_SIBLINGS: MobileNet conv12_pw. Sharing the weights among the
#   nodes frees node-buffer room for the local buffer to keep its partial
#   sums across the whole reduction, which the estimates (blind to the level
#   between) miss; each frame descended brings its most-shared sibling.
#   Proven optimum 3.1491 mJ; without the siblings 3.572 (+13 %).
# * _BEST_SIBLING: MobileNet conv7_pw. The best descent is in a strip frame
#   without sharing (5.887 mJ); its sibling sharing inputs and weights gets
#   5.542, within 3 % of the best found (5.3954, capped).
# * _RELAXED_SEED: AlexNet conv2. The best strip frame's descent ends at
#   7.17 mJ, behind the template frames' 6.54; refining it reaches 6.00
#   (best found 5.7107, capped: within 5.1 %).
FOUR_LEVEL_CASES = [
    ("mobilenet", "conv12_pw", "_SHARED_SIBLINGS", 3.572e-3, 3.1491e-3),
    ("mobilenet", "conv7_pw", "_BEST_SIBLING", 5.887e-3, 5.3954e-3),
    ("alexnet", "conv2_a", "_RELAXED_SEED", 6.54e-3, 5.7107e-3),
]


@pytest.mark.parametrize("net, name, switch, without, best", FOUR_LEVEL_CASES,
                         ids=[c[2] for c in FOUR_LEVEL_CASES])
def test_the_four_level_mechanisms_each_bring_a_layer_near_the_best_known(monkeypatch, net, name, switch,
                                                                          without, best):
    from kapla.search.layer.kapla import levels

    arch = _four_level_example()
    layer = next(x for x in get_network(net, 1) if x.name == name)
    found = KaplaIntraSolver().solve(layer, 16, arch)
    assert evaluate(found.scheme, arch).valid
    assert found.cost.total_energy <= best * 1.051
    monkeypatch.setattr(levels, switch, False)
    off = KaplaIntraSolver().solve(layer, 16, arch).cost.total_energy
    assert off == pytest.approx(without, rel=1e-3)
    assert found.cost.total_energy < 0.95 * off


def test_the_frame_of_the_best_scheme_brings_its_most_shared_sibling_on_a_classic_hierarchy(monkeypatch):
    # VGG-16 conv1_2 on a 4x4 block of multinode at batch 64: a strip frame
    # sharing the weights among all 16 nodes holds a scheme 11 % below the best
    # of the frames ranked first (497.8 mJ); the exhaustive search found
    # 438.19 mJ in 120 s (docs/solvers.md).
    from kapla.search.layer.kapla import levels

    arch = load_arch("multinode").with_node_region(4, 4)
    layer = next(x for x in get_network("vgg16", 1) if x.name == "conv1_2")
    found = KaplaIntraSolver().solve(layer, 64, arch).cost.total_energy
    assert found <= 438.19e-3 * 1.05
    monkeypatch.setattr(levels, "_BEST_SIBLING", False)
    assert KaplaIntraSolver().solve(layer, 64, arch).cost.total_energy > 1.1 * found


def test_under_a_feed_each_frame_brings_its_sibling_sharing_nothing_kept_on_chip(monkeypatch):
    # MLP-S fc3 at the end of a spatial pipeline on multinode_nndataflow (16x1 nodes beside fc2's 16x4):
    # its input forwarded from fc2, its weights pinned. Sharing the input and the weights among nodes
    # saves no DRAM fetch (they never come from DRAM), yet the estimates, which do not see the feed,
    # rank such frames first; the frames without that sharing come closer to the optimum (+14 %; +27 %
    # without them).
    from kapla.dataflow.segment import Region
    from kapla.model.segment import dram_distance, region_arch
    from kapla.search.layer.kapla import levels
    from kapla.space.problem import Problem

    chip = load_arch("multinode_nndataflow")
    fc2, fc3 = Region((0, 11), (16, 4)), Region((0, 15), (16, 1))
    feed = Feed(ifm_hops=fc3.distance(fc2), pinned=True, dram_hops=dram_distance(chip, fc3))
    assert feed.kept == {Kind.IFM, Kind.WGT}
    problem = Problem(Layer("fc3", Op.FC, 250, 10, 1, 1), 64, region_arch(chip, fc3), feed=feed)
    best = ExhaustiveIntraSolver().run(problem).cost.total_energy
    found = KaplaIntraSolver().run(problem).cost.total_energy
    assert found <= 1.15 * best
    monkeypatch.setattr(levels, "_FED_SIBLINGS", False)
    assert KaplaIntraSolver().run(problem).cost.total_energy > 1.1 * found


def test_register_blocks_are_costed_under_the_feed(monkeypatch):
    # MLP-L fc1 on the folded region of 92 nodes the exhaustive search picks on multinode_nndataflow,
    # its input from DRAM, its weights pinned, its output kept for fc2. Splitting the input channels
    # along the stripe is best: the partial sums are combined on chip. Costed without the feed, the
    # register blocks of those frames send them through DRAM (nn_dataflow's counting) and rank 2x
    # too high, and KAPLA lands 35 % above the optimum.
    from kapla.dataflow.segment import FoldedRegion
    from kapla.model.segment import dram_distance, region_arch
    from kapla.search.layer.kapla import levels
    from kapla.space.problem import Problem

    chip = load_arch("multinode_nndataflow")
    region = FoldedRegion(0, 4, 16, 0, 23)
    feed = Feed(to_dram=False, pinned=True, dram_hops=dram_distance(chip, region))
    problem = Problem(Layer("fc1", Op.FC, 784, 1500, 1, 1), 64, region_arch(chip, region), feed=feed)
    best = ExhaustiveIntraSolver().run(problem).cost.total_energy
    assert KaplaIntraSolver().run(problem).cost.total_energy == pytest.approx(best, rel=1e-6)
    monkeypatch.setattr(levels, "_FEED_COSTS", False)
    assert KaplaIntraSolver().run(problem).cost.total_energy > 1.2 * best


def _ranked_spaces(arch_name):
    """A conv and an FC layer's spaces on ``arch_name`` (4x4 nodes of ``multinode``), each
    with the frames KAPLA ranks first and their register blocks."""
    from kapla.search.layer.kapla import levels
    from kapla.space.layer.layer_space import LayerSpace
    from kapla.space.problem import Problem

    arch = load_arch(arch_name)
    arch = arch.with_node_region(4, 4) if arch_name == "multinode" else arch
    for layer in (Layer("c", Op.CONV, c=64, k=96, h=28, w=28, s=3, r=3, pad=(1, 1, 1, 1)),
                  Layer("fc", Op.FC, c=1024, k=512, h=1, w=1)):
        space = LayerSpace(Problem(layer, 8, arch))
        yield space, levels._rank(space, 4, levels.REFINE, 3, levels.REFINE_REGF)[0]


@pytest.mark.parametrize("arch_name", ["multinode", "edge"])
def test_the_top_levels_of_several_frames_searched_together_are_searched_as_alone(arch_name):
    # one model call per stage for every frame: the same candidates and the same costs, bit for bit
    import numpy as np

    from kapla.search.layer.kapla import levels

    merged = 0
    for space, head in _ranked_spaces(arch_name):
        jobs = [(i, states[g:g + 3]) for i, states in head for g in range(0, len(states), 3)]
        merged += len(jobs) >= 2
        together = levels._tops(space, jobs)
        for (i, states), got in zip(jobs, together, strict=True):
            alone = levels._tops(space, [(i, states)])[0]
            assert (got is None) == (alone is None)
            if got is None:
                continue
            (b, costs), (b0, costs0) = got, alone
            assert np.array_equal(b.rows, b0.rows)
            assert all(np.array_equal(x, y) for x, y in zip(b.orders, b0.orders, strict=True))
            assert np.array_equal(costs.total, costs0.total) and np.array_equal(costs.time, costs0.time)
            assert np.array_equal(costs.valid, costs0.valid)
    if arch_name == "multinode":
        assert merged == 2  # both layers had several frames searched together (edge: a frame alone)


@pytest.mark.parametrize("arch_name", ["multinode", "edge"])
def test_refinements_run_together_end_where_each_alone_does(arch_name):
    # the neighbours of every refinement's step are costed in one model call: each
    # refinement still reaches the same blocking, with the same key and count
    from kapla.search.layer.kapla import levels

    stepped = 0
    for space, head in _ranked_spaces(arch_name):
        tops = levels._tops(space, [(i, states[:3]) for i, states in head])
        jobs = []
        for objective in ("energy", "latency"):
            under = space.under(objective)
            for (i, _), top in zip(head, tops, strict=True):
                if top is not None:
                    jobs += [(under, i, point, key) for key, point in levels._points(*top, objective, 2)]
        assert len(jobs) >= 4
        together = levels._refine_all(space, jobs)
        for job, (found, count) in zip(jobs, together, strict=True):
            found0, count0 = levels._refine_all(space, [job])[0]
            assert count == count0 and (found is None) == (found0 is None)
            if found is not None:
                stepped += 1
                assert found.key == found0.key and found.scheme == found0.scheme
    assert stepped  # some refinement took a step


def test_the_schemes_a_layer_service_keeps_are_those_of_run_each():
    # schemes_each leaves out costing the results (the service's callers cost them where
    # they run): the same schemes, None where run_each says why there is none
    from kapla.space.problem import NoSchemeError, Problem

    arch = load_arch("edge")
    fc = Layer("fc", Op.FC, 4096, 4096, 1, 1)
    conv = Layer("c", Op.CONV, c=64, k=96, h=28, w=28, s=3, r=3, pad=(1, 1, 1, 1))
    problems = [Problem(conv, 4, arch), Problem(fc, 16, arch, feed=Feed(to_dram=False)),
                Problem(fc, 16, arch, feed=Feed(ifm_hops=1.0, to_dram=False, pinned=True))]
    nones = 0
    for problem in problems:
        objectives = ("energy", "latency", "edp")
        each = KaplaIntraSolver().run_each(problem, objectives)
        kept = KaplaIntraSolver().schemes_each(problem, objectives)
        for outcome, (scheme, complete, _) in zip(each, kept, strict=True):
            nones += scheme is None
            assert scheme == (None if isinstance(outcome, NoSchemeError) else outcome.scheme) and complete
    assert nones == 3  # the last problem has none
