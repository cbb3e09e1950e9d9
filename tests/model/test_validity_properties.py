"""Property: the validity check accepts a scheme exactly when brute force says it is valid.

For random small layers, hardware and schemes, this test recomputes from
scratch, by enumeration rather than algebra:

* coverage: every loop iteration of every dimension is visited exactly once,
  no loop iteration (and no unit block) lies wholly outside the layer;
* capacity: the distinct elements one unit's block touches, per level;
* parallelism: the units the stacks occupy.

Accepted schemes must pass all three; rejected ones must fail one, and the
check must name it.
"""

import itertools
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kapla.arch import load_arch
from kapla.dataflow.directives import LayerScheme, LevelScheme, Loop, Stack
from kapla.dataflow.tensors import DIMS, Kind
from kapla.model import check_scheme, evaluate
from kapla.model.cost import evaluate_nests
from kapla.model.nests import from_schemes
from kapla.workload.layer import Layer, Op

BASE = load_arch("multinode")


@st.composite
def layers(draw):
    depthwise = draw(st.booleans())
    c = draw(st.integers(1, 5))
    k = c if depthwise else draw(st.integers(1, 5))
    s = draw(st.integers(1, 3))
    pad = draw(st.integers(0, s // 2))
    h = draw(st.integers(s, 7))
    stride = draw(st.integers(1, 2))
    return Layer("L", Op.CONV, c=c, k=k, h=h, w=h, s=s, r=s, stride=(stride, stride),
                 pad=(pad,) * 4, groups=c if depthwise else 1)


@st.composite
def archs(draw):
    pe = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    nodes = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    regf = 2 * draw(st.integers(3, 256))
    gbuf = 2 * draw(st.integers(64, 8192))
    return (BASE.with_level("REGF", capacity=regf, array=pe)
            .with_level("GBUF", capacity=gbuf, array=nodes))


def _split(draw, extent):
    """Counts for (unit, REGF stack, REGF update, GBUF stack, GBUF update), built
    bottom-up so they usually cover ``extent``; now and then one is broken."""
    counts = []
    block = 1
    for slot in range(4):
        rest = -(-extent // block)
        # stacks: few and small, so most schemes fit the small random arrays
        cap = rest if slot in (0, 2) else (3 if draw(st.integers(0, 3)) == 0 else 1)
        c = draw(st.integers(1, max(1, min(rest, cap))))
        counts.append(c)
        block *= c
    counts.append(-(-extent // block))  # the GBUF update takes what is left
    if draw(st.integers(0, 7)) == 0:
        i = draw(st.integers(0, 4))
        counts[i] = max(1, counts[i] + draw(st.sampled_from([-1, 1, 2])))
    return tuple(counts)


@st.composite
def schemes(draw):
    layer = draw(layers())
    arch = draw(archs())
    batch = draw(st.integers(1, 3))
    extents = {"N": batch, **layer.loops}
    unit, stacks, updates = {}, ([], []), ([], [])
    for dim in DIMS:
        u, rs, ru, gs, gu = _split(draw, extents[dim])
        unit[dim] = u
        for level, (stack, update) in enumerate(((rs, ru), (gs, gu))):
            if stack > 1:
                rows = draw(st.sampled_from([d for d in range(1, stack + 1) if stack % d == 0]))
                stacks[level].append(Stack(dim, rows, stack // rows))
            if update > 1:
                updates[level].append(Loop(dim, update))
    levels = []
    for level, name in enumerate(("REGF", "GBUF")):
        order = draw(st.permutations(updates[level]))
        shr = ()
        if level == 1 and draw(st.booleans()):
            shr = ((draw(st.sampled_from(list(Kind))), draw(st.integers(1, 4))),)
        levels.append(LevelScheme(name, tuple(stacks[level]), tuple(order), shr))
    return LayerScheme(layer, batch, unit, tuple(levels)), arch.with_options(buffer_sharing=True)


# ----------------------------------------------------------------- brute force


def loops_of(scheme, dim):
    """(count) of every loop over ``dim``, innermost first, read straight off the directives."""
    out = []
    for lvl in scheme.levels:
        out += [s.count for s in lvl.stacks if s.dim == dim]
        out += [u.count for u in reversed(lvl.updates) if u.dim == dim]
    return out


def coverage_ok(scheme):
    for dim in DIMS:
        full = scheme.dims[dim]
        unit = dict(scheme.unit).get(dim, 1)
        counts = loops_of(scheme, dim)
        hits = np.zeros(full, dtype=int)
        used = [set() for _ in counts]
        for idx in itertools.product(*(range(c) for c in counts)):
            offset, block = 0, unit
            for i, c in zip(idx, counts, strict=True):
                offset += i * block
                block *= c
            lo, hi = offset, min(offset + unit, full)
            if lo < full:
                hits[lo:hi] += 1
                for j, i in enumerate(idx):
                    used[j].add(i)
        if (hits != 1).any() or unit > full or any(len(u) < c for u, c in zip(used, counts, strict=True)):
            return False
    return True


def block_of(scheme, level):
    block = dict(scheme.unit)
    for lvl in scheme.levels[:level]:
        for s in lvl.stacks:
            block[s.dim] = block.get(s.dim, 1) * s.count
        for u in lvl.updates:
            block[u.dim] = block.get(u.dim, 1) * u.count
    return {d: min(block.get(d, 1), scheme.dims[d]) for d in DIMS}


def distinct_elements(layer, block):
    n, g, c, k, y, x, s, r = np.meshgrid(*(np.arange(block[d]) for d in DIMS), indexing="ij")
    sy, sx = layer.stride
    iy, ix = y * sy + s, x * sx + r
    count = {
        Kind.IFM: len(np.unique(np.stack([n, g, c, iy, ix]).reshape(5, -1), axis=1).T),
        Kind.WGT: len(np.unique(np.stack([g, k, c, s, r]).reshape(5, -1), axis=1).T),
        Kind.OFM: len(np.unique(np.stack([n, g, k, y, x]).reshape(5, -1), axis=1).T),
    }
    return count


def capacity_ok(scheme, arch):
    for level, lvl in enumerate(scheme.levels):
        elems = distinct_elements(scheme.layer, block_of(scheme, level))
        words = sum(-(-elems[kind] // lvl.sharing(kind)) for kind in (Kind.IFM, Kind.WGT, Kind.OFM))
        if words * arch.word_bytes > arch.levels[level].capacity:
            return False
    return True


def grid_ok(scheme, arch):
    for lvl, hw in zip(scheme.levels, arch.levels[:-1], strict=True):
        rows = math.prod(s.rows for s in lvl.stacks)
        cols = math.prod(s.cols for s in lvl.stacks)
        if rows > hw.array[0] or cols > hw.array[1]:
            return False
    return True


def sharing_ok(scheme):
    for lvl in scheme.levels:
        for kind, shr in lvl.shr:
            relevant = {Kind.IFM: "NGCYXSR", Kind.WGT: "GKCSR", Kind.OFM: "NGKYX"}[kind]
            holders = math.prod(s.count for s in lvl.stacks if s.dim not in relevant)
            if holders % shr:
                return False
    return True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemes())
def test_validity_agrees_with_brute_force(case):
    scheme, arch = case
    verdict = check_scheme(scheme, arch)
    covered = coverage_ok(scheme)
    grid = grid_ok(scheme, arch)
    shared = sharing_ok(scheme)
    # Capacity is only meaningful (and cheap) once the blocks are real blocks of the layer.
    fits = capacity_ok(scheme, arch) if covered else True
    assert verdict.ok == (covered and grid and shared and fits), (verdict, covered, grid, shared, fits)
    text = str(verdict)
    if not covered:
        assert "work" in text or "idle iterations" in text
    if not grid:
        assert "units but only" in text
    if not shared:
        assert "units hold the same" in text
    if covered and not fits:
        assert "B per unit but holds" in text
    cost = evaluate(scheme, arch)
    # evaluate's verdict is check_scheme's (its model call leaves the rules to it), and its
    # energy the model's on the scheme's own nest
    assert cost.valid == verdict.ok
    if verdict.ok:
        assert math.isclose(cost.total_energy, float(evaluate_nests(from_schemes([scheme]), arch).total[0]),
                            rel_tol=1e-12)
        assert cost.valid and cost.total_energy > 0 and cost.time > 0
        # the evaluator counts every MAC of the layer, once
        assert cost.ops == scheme.layer.macs * scheme.batch
