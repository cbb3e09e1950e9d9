"""CoSA's MIP: its optimum checked by brute force against an independent
reading of its objective, every scheme valid, deterministic, bounded by its
time limit, and reachable by name."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.dataflow.tensors import RELEVANT, as_block, footprints
from kapla.errors import KaplaError
from kapla.model.feed import FROM_DRAM
from kapla.search.layer.cosa.formulation import Formulation, Weights
from kapla.search.layer.cosa.mip import OPTIMAL, solve
from kapla.search.layer.cosa.solver import CosaSolver
from kapla.space.layer.factors import FactorSpace
from kapla.space.problem import Problem
from kapla.workload.layer import Layer, Op
from tests.conftest import small_layers


def proxy(form: Formulation, indices, w: Weights | None = None) -> float | None:
    """CoSA's objective of one placement of the factors, read off the placement
    with kapla's footprint rule (None: it breaks a buffer or a fan-out)."""
    w = w or Weights()
    placement = [form.slots[s] for s in indices]
    hw, n, layer, p = form.hw, form.n, form.layer, form.perm
    tiles = []
    for level in range(n):
        tile = {d: 1 for d in "NGCKYXSR"}
        for f, s in zip(form.factors, placement, strict=True):
            if s.kind == "unit" or s.level < level:
                tile[f.dim] *= f.prime
        tiles.append(footprints(as_block(tile), layer))
    for level in range(n):
        held = [k for k in form.kinds if level in hw.holders(k)]
        lvl = hw.levels[level]
        bits = {k: tiles[level][k] * form.copies[k] * hw.bits[k] for k in held}
        if lvl.split_bits and any(b > lvl.split_bits.get(k, math.inf) for k, b in bits.items()):
            return None
        if not lvl.split_bits and lvl.capacity_bits is not None and sum(bits.values()) > lvl.capacity_bits:
            return None
        for axis in (0, 1):
            used = math.prod(f.prime for f, s in zip(form.factors, placement, strict=True)
                             if s.kind == "spatial" and s.level == level and s.axis == axis)
            if used > lvl.array[axis]:
                return None
    log = math.log2
    util = sum(log(tiles[level][k] * form.copies[k]) for level in range(n - 1 if n >= 2 else n)
               for k in form.kinds if level in hw.holders(k))
    comp = sum(f.log for f, s in zip(form.factors, placement, strict=True) if s.kind != "spatial")
    traffic = 0.0
    ranked = sorted((s.rank, f) for f, s in zip(form.factors, placement, strict=True) if s.kind == "rank")
    for k in form.kinds:
        traffic += log(tiles[p][k] * form.copies[k])
        traffic += sum(f.log for f, s in zip(form.factors, placement, strict=True)
                       if s.kind == "spatial" and s.level == p and f.dim in RELEVANT[k])
        inner = [z for z, f in ranked if f.dim in RELEVANT[k]]
        traffic += sum(f.log for z, f in ranked if inner and z >= min(inner))
        outer = max(hw.holders(k), default=-1)
        traffic += sum(f.log for f, s in zip(form.factors, placement, strict=True) if s.kind == "temporal"
                       and (s.level == n - 1 > p or max(outer, 0) <= s.level < p))
    return -w.utilisation * util + w.compute * comp + w.traffic * traffic


def placements(form: Formulation):
    """Every placement: each factor in a slot of a level, those of the permuted
    level in every order."""
    plain = [s for s, slot in enumerate(form.slots) if slot.kind != "rank"]
    ranks = [s for s, slot in enumerate(form.slots) if slot.kind == "rank"]
    F = len(form.factors)
    for choice in itertools.product(range(len(plain) + 1), repeat=F):
        if any(c < len(plain) and (i, plain[c]) not in form.x for i, c in enumerate(choice)):
            continue
        ranked = [i for i, c in enumerate(choice) if c == len(plain)]
        for order in itertools.permutations(ranked):
            out = [plain[c] if c < len(plain) else None for c in choice]
            for z, i in enumerate(order):
                out[i] = ranks[z]
            yield out


TINY = [
    ("fc", Layer("f", Op.FC, c=4, k=6, h=1, w=1), 1),
    ("window", Layer("w", Op.CONV, c=2, k=1, h=3, w=3, s=2, r=2), 1),
    ("batch", Layer("b", Op.FC, c=2, k=3, h=1, w=1), 4),
]


@pytest.mark.parametrize("name, layer, batch", TINY, ids=[t[0] for t in TINY])
@pytest.mark.parametrize("arch_name", ["simba", "interstellar"])
def test_the_mip_finds_the_brute_force_optimum_of_its_own_objective(name, layer, batch, arch_name):
    form = Formulation(FactorSpace(Problem(layer, batch, load_arch(arch_name), "energy", FROM_DRAM, None)))
    answer = solve(form.p, time_limit=60, gap=0.0)
    assert answer.status == OPTIMAL
    values = [v for v in (proxy(form, pl) for pl in placements(form)) if v is not None]
    assert answer.objective == pytest.approx(min(values), rel=1e-7, abs=1e-6)
    # and the placement it returns is worth what it says
    assert proxy(form, form.placement(answer.values)) == pytest.approx(answer.objective, rel=1e-7, abs=1e-6)


def test_the_objective_weights_change_the_optimum():
    layer = Layer("f", Op.FC, c=16, k=16, h=1, w=1)
    problem = Problem(layer, 4, load_arch("simba"), "energy", FROM_DRAM, None)
    default = CosaSolver(time_limit=30).run(problem)
    traffic_only = CosaSolver(time_limit=30, w_util=0.0, w_compute=0.0, w_traffic=1.0).run(problem)
    assert default.details["mip_terms"]["compute"] < traffic_only.details["mip_terms"]["compute"]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_layers(c=16, h=(1, 8), k=16, s=3), st.integers(1, 4), st.sampled_from(["simba", "edge", "multinode_4x4"]))
def test_every_scheme_cosa_returns_passes_the_evaluators_check(layer, batch, arch_name):
    result = CosaSolver(time_limit=20).solve(layer, batch, load_arch(arch_name))
    assert result.cost.valid, result.cost.validity
    assert result.details["mip_status"] in ("optimal", "time limit")
    assert math.isfinite(result.details["mip_objective"])


def test_the_same_layer_gives_the_same_schedule():
    layer = Layer("c", Op.CONV, c=8, k=12, h=6, w=6, s=3, r=3, pad=(1, 1, 1, 1))
    a = CosaSolver(time_limit=30).solve(layer, 2, load_arch("simba"))
    b = CosaSolver(time_limit=30).solve(layer, 2, load_arch("simba"))
    assert a.scheme == b.scheme


def test_a_time_limit_returns_the_best_schedule_found_with_its_status():
    layer = Layer("c", Op.CONV, c=64, k=96, h=28, w=28, s=3, r=3, pad=(1, 1, 1, 1))
    result = CosaSolver(time_limit=0.5).solve(layer, 8, load_arch("simba"))
    assert result.cost.valid
    assert result.details["mip_status"] in ("optimal", "time limit")
    assert result.details["solve_seconds"] < 5


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="time_limit"):
        CosaSolver(time_limit=0)
    with pytest.raises(ValueError, match="gap"):
        CosaSolver(gap=1.5)
    with pytest.raises(ValueError, match="w_traffic must be a finite number"):
        CosaSolver(w_traffic=float("nan"))


def test_without_highs_the_solver_says_what_to_install(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_highs(name, *args, **kwargs):
        if name == "highspy":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_highs)
    with pytest.raises(KaplaError, match=r"pip install 'kapla\[mip\]'"):
        CosaSolver()


def test_a_whole_network_with_cosa_gives_each_layer_its_mip_status_in_the_json(tmp_path):
    import json

    from click.testing import CliRunner

    from kapla.cli.main import app

    out = tmp_path / "mlp_s.json"
    result = CliRunner().invoke(app, ["schedule", "mlp_s", "--arch", "simba", "--batch", "1", "--solver", "cosa",
                                      "--no-pipelining", "--jobs", "1", "-O", "time_limit=10", "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())  # and the schema fixture checked it
    assert doc["valid"] and doc["solver"] == "cosa"
    for layer in doc["layers"]:
        details = layer["solver_details"]
        assert details["mip_status"] == "optimal" and details["solve_seconds"] > 0
        assert set(details["mip_terms"]) == {"utilisation", "compute", "traffic"}
