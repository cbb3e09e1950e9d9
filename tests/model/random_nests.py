"""Random loop nests of a small CONV layer for the model's property tests: some
loop twice over a dimension at one level, some have loops that overrun the
layer."""

import numpy as np

from kapla.model.nests import Loops, Nests, Stacks
from kapla.workload.layer import Layer, Op

LAYER = Layer("L", Op.CONV, c=6, k=4, h=6, w=6, s=3, r=3, pad=(1, 1, 1, 1))


def split(rng, n: int, parts: int) -> list[int]:
    """``n`` as a product of ``parts`` random divisors."""
    out = []
    for _ in range(parts - 1):
        divs = [d for d in range(1, n + 1) if n % d == 0]
        d = int(rng.choice(divs))
        out.append(d)
        n //= d
    return out + [n]


def random_nests(seed: int, repeat_dims: bool, levels: int = 2) -> Nests:
    """Nests of :data:`LAYER` at batch 1 over ``levels`` levels, from ``seed``; with
    ``repeat_dims``, every level loops a second time over some dimension."""
    rng = np.random.default_rng(seed)
    F = int(rng.integers(1, 5))
    rows = np.sort(rng.integers(0, F, size=int(rng.integers(F, 4 * F + 1))))
    rows[:F] = np.arange(F)  # every combination used
    M = len(rows)
    full = [1, 1, 6, 4, 6, 6, 3, 3]  # N G C K Y X S R of LAYER at batch 1
    # per combination and dim: unit, then per level a stack and an update count,
    # tiling the layer exactly; now and then one overruns it (idle iterations)
    slots = np.array([[split(rng, n, 1 + 2 * levels) for n in full] for _ in range(F)])  # (F, 8, slots)
    over = rng.random((F, 8, 1 + 2 * levels)) < 0.05
    slots = slots * np.where(over, 2, 1)
    unit = slots[:, :, 0]
    ident = np.broadcast_to(np.arange(8), (F, 8))
    stacks = tuple(Stacks(ident.copy(), slots[:, :, 1 + 2 * i], np.ones((F, 8), np.int64)) for i in range(levels))
    updates = []
    for i in range(levels):
        counts = slots[:, :, 2 + 2 * i]
        dims = np.stack([rng.permutation(8) for _ in range(M)])
        cnt = np.take_along_axis(counts[rows], dims, axis=1)
        if repeat_dims:
            # a second loop over a dim this level already loops over: order now matters
            dims = np.concatenate([dims, rng.integers(0, 8, size=(F, 1))[rows]], axis=1)
            cnt = np.concatenate([cnt, rng.integers(1, 3, size=(F, 1))[rows]], axis=1)  # shared by a combination
            swap = rng.random(M) < 0.5
            dims[swap] = dims[swap][:, ::-1]
            cnt[swap] = cnt[swap][:, ::-1]
        updates.append(Loops(dims, cnt))
    return Nests(LAYER, 1, unit, stacks, tuple(updates), tuple({} for _ in range(levels)), rows)
