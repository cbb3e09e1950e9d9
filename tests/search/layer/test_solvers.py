"""Intra-layer solvers: the exhaustive optimum is checked by brute force; every
scheme any solver returns passes the evaluator's validity check."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.dataflow.tensors import DIMS
from kapla.errors import KaplaError
from kapla.model import evaluate
from kapla.model.cost import evaluate_nests
from kapla.model.nests import from_schemes
from kapla.search.base import NoSchemeError
from kapla.search.layer.exhaustive.solver import ExhaustiveIntraSolver
from kapla.search.layer.kapla.solver import KaplaIntraSolver
from kapla.space.layer.classic_view import skeletons
from kapla.space.layer.layer_space import LayerSpace
from kapla.space.layer.skeletons import BLOCK_DIMS, Blocking, build_scheme, divisors
from kapla.space.problem import Problem
from kapla.workload.layer import Layer, Op
from tests.conftest import small_layers  # noqa: F401  (imported from here by other tests)

SMALL_ARCH = load_arch("multinode").with_node_region(2, 2).with_level("GBUF", capacity=4096)


def brute_force(layer, batch, arch, objective="energy"):
    """Every skeleton, every factor split and *every* loop order (not just innermost
    choices): the least (objective, energy) of a valid scheme. Each skeleton's
    schemes are costed in one batch by the cost model, with its validity rules."""
    best = None
    for skel in skeletons(layer, batch, arch):
        rest = skel.rest
        dims = [d for d in BLOCK_DIMS if rest[d] > 1]
        schemes = []
        for unit in itertools.product(*(divisors(rest[d]) for d in dims)):
            for mid in itertools.product(*(divisors(rest[d] // u) for d, u in zip(dims, unit, strict=True))):
                top = [rest[d] // (u * m) for d, u, m in zip(dims, unit, mid, strict=True)]
                for o1 in itertools.permutations(range(len(dims))):
                    for o2 in itertools.permutations(range(len(dims))):
                        blocking = Blocking(tuple(zip(dims, unit, strict=True)),
                                            tuple((dims[i], mid[i]) for i in o1),
                                            tuple((dims[i], top[i]) for i in o2))
                        schemes.append(build_scheme(skel, blocking))
        costs = evaluate_nests(from_schemes(schemes), arch)
        value = costs.value(objective)
        for i in np.flatnonzero(np.isfinite(value)):
            key = (float(value[i]), float(costs.total[i]))
            best = key if best is None or key < best else best
    return best


SMALL_LAYERS = [
    Layer("c", Op.CONV, c=4, k=4, h=5, w=5, s=3, r=3, pad=(1, 1, 1, 1)),
    Layer("f", Op.FC, c=12, k=8, h=1, w=1),
    Layer("d", Op.CONV, c=4, k=4, h=6, w=6, s=3, r=3, pad=(1, 1, 1, 1), groups=4),
]


@pytest.mark.parametrize("layer", SMALL_LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("objective", ["energy", "latency"])
def test_exhaustive_finds_the_brute_force_optimum(layer, objective):
    result = ExhaustiveIntraSolver().solve(layer, 4, SMALL_ARCH, objective)
    assert result.cost.valid
    value, energy = brute_force(layer, 4, SMALL_ARCH, objective)
    assert result.cost.objective(objective) == pytest.approx(value, rel=1e-12)
    # under latency, of the fastest schemes the one with the least energy
    assert result.cost.total_energy == pytest.approx(energy, rel=1e-9)


@pytest.mark.parametrize("layer", SMALL_LAYERS, ids=lambda layer: layer.name)
def test_the_frame_bound_never_exceeds_a_real_scheme(layer):
    """Every frame's bound stays below its plainest scheme (everything looping at
    the top), valid or not as it comes (:mod:`tests.space.layer.test_bound`
    checks every blocking on every kind of hierarchy)."""
    space = LayerSpace(Problem(layer, 4, SMALL_ARCH))
    for frame in range(len(space)):
        rest = space.frames[frame].rest
        top = {DIMS[j]: n for j, n in enumerate(rest) if n > 1}
        levels = len(space.frames[frame].spatial)
        b = space.assignment(frame, {}, [{}] * (levels - 1) + [top])
        cost = evaluate(space.evaluator(frame).scheme(b, 0), SMALL_ARCH)
        if cost.valid:
            assert space.bound(frame).energy <= cost.total_energy * (1 + 1e-12)


def solve_valid(solver, layer, batch, arch):
    """The solver's result, checked by the evaluator; None if the layer fits nowhere."""
    try:
        result = solver.solve(layer, batch, arch)
    except NoSchemeError as exc:
        assert "does not fit" in str(exc)
        return None
    assert result.cost.valid, result.cost.validity
    assert evaluate(result.scheme, arch).valid
    return result


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_layers(), st.integers(1, 8), st.sampled_from(["multinode_4x4", "edge", "eyeriss"]))
def test_kapla_returns_valid_schemes(layer, batch, arch_name):
    result = solve_valid(KaplaIntraSolver(), layer, batch, load_arch(arch_name))
    if result is not None:
        assert result.cost.ops == layer.loop_ops * batch


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_layers(), st.integers(1, 8), st.sampled_from(["multinode_4x4", "edge"]))
def test_exhaustive_returns_valid_optima_kapla_cannot_beat(layer, batch, arch_name):
    arch = load_arch(arch_name)
    best = solve_valid(ExhaustiveIntraSolver(), layer, batch, arch)
    if best is not None:
        fast = solve_valid(KaplaIntraSolver(), layer, batch, arch)
        assert fast.cost.total_energy >= best.cost.total_energy * (1 - 1e-9)


def test_buffer_sharing_lowers_energy_when_the_shared_tensor_outgrows_a_node():
    # 4x4 nodes split the 256 output channels; every node needs the whole input,
    # 256 channels x 15 x 15 x 4 samples = 230 400 words: far more than a 16 K-word GBUF.
    layer = Layer("big", Op.CONV, c=256, k=256, h=15, w=15, s=3, r=3, pad=(1, 1, 1, 1))
    arch = load_arch("multinode_4x4")
    shared = KaplaIntraSolver().solve(layer, 4, arch)
    private = KaplaIntraSolver().solve(layer, 4, arch.with_options(buffer_sharing=False))
    assert shared.cost.valid and private.cost.valid
    assert any(n > 1 for lvl in shared.scheme.levels for _, n in lvl.shr)
    assert shared.cost.total_energy < private.cost.total_energy


def test_a_layer_that_cannot_fit_names_the_layer_and_the_buffer():
    tiny = load_arch("eyeriss").with_level("REGF", capacity=4)
    layer = Layer("wide", Op.CONV, c=3, k=8, h=32, w=32, s=11, r=11)
    with pytest.raises(KaplaError, match=r"layer 'wide' does not fit: its smallest block needs \d+ B of REGF "
                                         r"but REGF holds 4 B"):
        KaplaIntraSolver().solve(layer, 1, tiny)


@pytest.mark.parametrize("solver", ["kapla", "exhaustive", "layerwise"])
def test_a_classic_hierarchy_with_energies_from_a_size_table_schedules(solver):
    """The solvers' estimates read energies from the model's resolved view
    (model.hardware.word_energy), so a three-level design whose energies come
    from a size table (no access_pj), as a hardware sweep makes, is scheduled,
    not refused with a traceback."""
    from kapla.api import schedule
    from kapla.arch import load_arch
    from kapla.explore.variants import vary
    from kapla.space.layer.classic_view import classic

    table = {f"{lvl}.{field}": value for lvl in ("REGF", "GBUF")
             for field, value in (("access_pj", None), ("energy_table", "interstellar"))}
    arch = vary(load_arch("edge"), table)
    assert classic(arch)
    result = schedule("mlp_s", arch, batch=1, solver=solver, jobs=1)
    assert result.valid and result.energy_j > 0
