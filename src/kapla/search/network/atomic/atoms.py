"""Atoms: each layer cut into sub-tensors that fit one engine (Atomic Dataflow, Sec. IV-A).

An atom of a layer is one sample's block of ``k`` output channels by ``rows``
output rows (all columns, and all the input channels it reads: no atom
leaves partial sums for another to finish). Its size follows the engine's
dataflow, as the paper's atoms are multiples of the PE array in the
unrolled dimensions: under KC-Partition (``C|K``) ``k`` is a multiple of the
array's columns, under YX-Partition (``Y|X``) ``rows`` a multiple of its rows;
and its data (the input rows it reads, its weights, its output) take at most
half an engine's buffer, the other half keeping outputs for later atoms.

Which size, per layer: Algorithm 1, simulated annealing over one *unified*
number of cycles that every atom should take; each layer takes the size
whose estimated cycles come closest to it, and the annealing minimises the
variance (of the logarithm) of the atoms' cycles over the layers, so atoms
that run side by side in a round take about as long.

The dependencies: an atom reads, from each atom of a producer layer of the
same sample, the rows and channels of that atom's output its own input
window covers (a convolution's halo included, a concatenation's channel
offsets followed, an FC layer reading all of them). Where no atom reading all
of a layer's input channels fits, a block's atoms each read a share of them
and leave a partial sum; they run independently, and the last adds up the
others' (the block's output is that atom's).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from kapla.arch.spec import ArchSpec
from kapla.errors import KaplaError
from kapla.workload.layer import Layer, Merge, Op, Operand
from kapla.workload.network import Network

#: Layer kinds cut into atoms (the paper's workloads: CNNs).
SUPPORTED = (Op.CONV, Op.FC, Op.POOL, Op.ELTWISE, Op.MATMUL)


@dataclass(frozen=True)
class Tiling:
    """A layer's atoms: ``k`` output channels by ``rows`` output rows (per sample),
    reading ``c`` input channels (0: all; fewer only where no atom reading all fits)."""

    k: int
    rows: int
    c: int = 0


@dataclass(frozen=True)
class AtomSpec:
    """One atom before it is costed: which layer, sample and block of its output."""

    layer: str
    sample: int
    k: tuple[int, int]  # output channels [lo, hi)
    rows: tuple[int, int]  # output rows [lo, hi)
    c: tuple[int, int] | None = None  # input channels [lo, hi) of a partial sum (None: all it reads)

    @property
    def name(self) -> str:
        part = f":c{self.c[0]}" if self.c is not None else ""
        return f"{self.layer}#{self.sample}:{self.k[0]}:{self.rows[0]}{part}"

    c_total: int = 0  # the layer's input channels (for a partial sum)

    @property
    def final(self) -> bool:
        """It leaves the finished output of its block (not a partial sum another atom adds to)."""
        return self.c is None or self.c[1] >= self.c_total


def _words(layer: Layer, k: int, rows: int, c: int = 0) -> tuple[int, int, int]:
    """Input, weight and output words of an atom of ``k`` channels by ``rows`` rows
    (reading ``c`` input channels, 0: all; a partial sum also reads the one before it)."""
    in_rows = min(layer.h, (rows - 1) * layer.stride[0] + (layer.s - 1) * layer.dilation[0] + 1)
    lo, hi = input_channels(layer, (0, k))
    share = c / layer.c if c else 1.0
    inputs = round((hi - lo) * share) * in_rows * layer.w * max(layer.n_inputs, 1)
    if layer.operand == Operand.FMAP:  # a scaling's vector; a product's second fmap (its channels' share)
        inputs += k if layer.is_scale else round(k * (layer.c // max(layer.groups, 1)) * share)
    weights = round(layer.weight_elems * k / layer.k * share) if layer.weight_elems else 0
    out = k * rows * layer.xo
    return inputs + (out if c else 0), weights, out


def atom_words(layer: Layer, tiling: Tiling) -> int:
    return sum(_words(layer, tiling.k, tiling.rows, tiling.c))


def _steps(total: int, unit: int) -> list[int]:
    """Block sizes along a dimension of ``total``: the multiples of ``unit`` below it, and ``total``."""
    if unit <= 1:
        sizes = {1, total}
        size = 2
        while size < total:
            sizes.add(size)
            size *= 2
        return sorted(sizes)
    return sorted({m * unit for m in range(1, math.ceil(total / unit))} | {total})


def tilings(layer: Layer, arch: ArchSpec, dataflow: str) -> list[Tiling]:
    """Every atom size of ``layer`` the engine's dataflow allows whose data take at
    most half a buffer (the smallest one if none does)."""
    half = (arch.capacity_words(arch.node_level.name) or 0) // 2 if arch.node_level is not None else 0
    # the same for layers alike but for their names (a transformer's blocks): worked out once
    key = (replace(layer, name="_", forward=None), tuple(arch.pe_array), half, dataflow)
    got = _TILINGS.get(key)
    if got is None:
        if len(_TILINGS) > 4096:
            _TILINGS.clear()
        got = _TILINGS[key] = tuple(_tilings(layer, tuple(arch.pe_array), half, dataflow))
    return list(got)


_TILINGS: dict[tuple, tuple[Tiling, ...]] = {}


def _tilings(layer: Layer, pe_array: tuple[int, ...], half: int, dataflow: str) -> list[Tiling]:
    rows_pe, cols_pe = pe_array
    kc = dataflow.startswith("C|K")
    k_unit = max(cols_pe, layer.k // layer.groups) if kc and layer.groups > 1 else (cols_pe if kc else 1)
    ks = _steps(layer.k, min(k_unit, layer.k))
    rs = _steps(layer.yo, 1 if kc else min(rows_pe, layer.yo))
    every = [Tiling(k, r) for k in ks for r in rs]
    fit = [t for t in every if half <= 0 or atom_words(layer, t) <= half]
    if fit or layer.op not in (Op.CONV, Op.FC, Op.MATMUL) or layer.groups > 1:
        return fit or [min(every, key=lambda t: (atom_words(layer, t), -t.k))]
    # no atom reading every input channel fits: partial sums over blocks of them
    unit = rows_pe if kc and layer.c > rows_pe else 1
    cs = [c for c in _steps(layer.c, unit) if c < layer.c]
    split = [Tiling(k, r, c) for k in ks for r in rs for c in cs]
    fit = [t for t in split if atom_words(layer, t) <= half]
    return fit or [min(split or every, key=lambda t: (atom_words(layer, t), -t.k))]


def estimate_cycles(layer: Layer, tiling: Tiling, arch: ArchSpec, dataflow: str) -> float:
    """An atom's cycles on one engine (the annealing's estimate): its compute with
    every PE it can use busy, or the time its data take to cross the bus into the
    PE array once each, whichever is longer."""
    bus = atom_words(layer, tiling) / max(arch.bus_width_words, 1)
    return max(_compute(layer, tiling, arch, dataflow), bus)


def ideal_cycles(layer: Layer, tiling: Tiling, arch: ArchSpec) -> float:
    """An atom's compute with every PE of the engine busy."""
    rows_pe, cols_pe = arch.pe_array
    return max(_atom_ops(layer, tiling) / (rows_pe * cols_pe), 1.0)


def _atom_ops(layer: Layer, tiling: Tiling) -> float:
    """An atom's share of its layer's operations (per sample)."""
    return layer.ops * tiling.k * tiling.rows / max(layer.k * layer.yo, 1) * (tiling.c / layer.c if tiling.c else 1)


def _compute(layer: Layer, tiling: Tiling, arch: ArchSpec, dataflow: str) -> float:
    rows_pe, cols_pe = arch.pe_array
    ops = _atom_ops(layer, tiling)
    if layer.op not in (Op.CONV, Op.FC):
        return ops / (rows_pe * cols_pe)
    if dataflow.startswith("C|K"):
        cg = tiling.c or layer.c // layer.groups
        kg = min(tiling.k, max(layer.k // layer.groups, 1))
        used = (cg / (math.ceil(cg / rows_pe) * rows_pe)) * (kg / (math.ceil(kg / cols_pe) * cols_pe))
    else:
        used = (tiling.rows / (math.ceil(tiling.rows / rows_pe) * rows_pe)) * (
            layer.xo / (math.ceil(layer.xo / cols_pe) * cols_pe))
    return ops / (rows_pe * cols_pe * used)


def anneal(layers: Sequence[Layer], arch: ArchSpec, dataflow: str, seed: int = 0, steps: int = 400,
           scale: dict[str, float] | None = None, samples: int = 1, budget: int = 0
           ) -> tuple[dict[str, Tiling], float]:
    """Algorithm 1: each layer's atom size, and the variance of the logarithm of
    the atoms' estimated cycles it reaches (seeded: the same for the same inputs).
    ``scale``: per layer, how much longer its atoms took than estimated (the
    evaluator's cycles over the estimate), to correct the estimates by. No layer
    is cut into more than :data:`FINEST` rounds' worth of atoms (or layer-sequential's
    cut), and the ``samples`` of a batch into no more than ``budget`` in all (0:
    :data:`ATOM_BUDGET`) where coarser atoms can keep them below it."""
    options: dict[str, tuple[list[Tiling], np.ndarray, np.ndarray]] = {}
    for layer in layers:
        # larger atoms first: among equally good sizes the first (largest) is taken
        sizes = sorted(tilings(layer, arch, dataflow), key=lambda t: (-t.k, -t.rows, -t.c))
        logs, waste = [], []
        for t in sizes:
            cycles = max(estimate_cycles(layer, t, arch, dataflow) * (scale or {}).get(layer.name, 1.0), 1.0)
            logs.append(math.log(cycles))
            # how far it is from keeping every PE busy, in the same (log) units as the cycles
            waste.append(max(math.log(cycles / ideal_cycles(layer, t, arch)), 0.0)
                         if layer.op in (Op.CONV, Op.FC) else 0.0)
        options[layer.name] = (sizes, np.array(logs), np.array(waste))

    def choose(target: float) -> dict[str, tuple[float, Tiling]]:
        # the size closest to the target, an atom that keeps its PEs less busy counting as further
        out = {}
        for name, (sizes, logs, waste) in options.items():
            best = int(np.argmin(np.abs(logs - target) + waste))
            out[name] = (float(logs[best]), sizes[best])
        return out

    def variance(chosen: dict[str, tuple[float, Tiling]]) -> float:
        logs = [c for c, _ in chosen.values()]
        mean = sum(logs) / len(logs)
        return sum((v - mean) ** 2 for v in logs) / len(logs)

    if not layers:
        return {}, 0.0
    rng = random.Random(seed)
    lows = [float(logs.min()) for _, logs, _ in options.values()]
    highs = [float(logs.max()) for _, logs, _ in options.values()]
    lo, hi = min(lows), max(highs)
    # atoms no smaller than a layer spread evenly over the engines, on (geometric) average: smaller
    # ones would balance the rounds no better and multiply the atoms to schedule and move
    engines = arch.num_nodes
    even = sum(math.log(max(estimate_cycles(layer, Tiling(layer.k, layer.yo), arch, dataflow) / engines, 1.0))
               for layer in layers) / len(layers)
    lo = min(max(lo, even), hi)
    state = (max(lows) + min(highs)) / 2 if max(lows) <= min(highs) else (lo + hi) / 2
    energy = variance(choose(state))
    best, best_energy = state, energy
    temperature = max(energy, 1e-3)
    for _ in range(steps):
        candidate = min(hi, max(lo, state + rng.gauss(0.0, (hi - lo) / 8 + 1e-9)))
        e = variance(choose(candidate))
        if e <= energy or rng.random() < math.exp(-(e - energy) / max(temperature, 1e-12)):
            state, energy = candidate, e
            if e < best_energy or (e == best_energy and candidate > best):
                best, best_energy = candidate, e
        temperature *= 0.99
    chosen = {name: t for name, (_, t) in choose(best).items()}
    counts = {layer.name: np.array([_count(layer, t) for t in options[layer.name][0]]) for layer in layers}

    def at_most(caps: dict[str, int]) -> None:
        # where a layer has more atoms than its cap: the size closest to the target among those with fewer
        for layer in layers:
            sizes, logs, waste = options[layer.name]
            n = counts[layer.name]
            cap = max(caps[layer.name], int(n.min()))
            if _count(layer, chosen[layer.name]) > cap:
                chosen[layer.name] = sizes[int(np.argmin(np.where(n <= cap, np.abs(logs - best) + waste, np.inf)))]

    # no layer cut finer than FINEST rounds of the whole chip (or than layer-sequential's cut, where
    # that must be finer)
    at_most({layer.name: max(FINEST * engines, _count(layer, _even_of(layer, options[layer.name][0], engines)))
             for layer in layers})
    # and no more than ATOM_BUDGET atoms in all: the largest cuts made coarser, halving the cap
    cap = max(_count(layer, t) for layer in layers for t in [chosen[layer.name]])
    budget = budget or ATOM_BUDGET
    while samples * sum(_count(layer, chosen[layer.name]) for layer in layers) > budget and cap > 1:
        cap //= 2
        at_most({layer.name: cap for layer in layers})
    return chosen, best_energy


#: The most atoms a layer is cut into by the annealing, in rounds of the whole chip (unless
#: layer-sequential's cut has more): finer atoms balance the rounds no better, and multiply the
#: atoms to schedule, their transfers and their weight fetches (a transformer's projections,
#: beside its small vector layers, were cut into 16 times more atoms than that)
FINEST = 10
#: The most atoms of a whole run (every sample of the batch) where coarser atoms can keep them below
#: it: the round plans, mapping, write-backs and the round model's check take time linear in the atoms
#: and their inputs, and a batch of a deep network cut as finely as one sample is (1,338 layers of
#: ResNet-1001 by 64 engines by 20 samples: 1.3 million atoms) would take them many minutes
ATOM_BUDGET = 600_000


def _even_of(layer: Layer, sizes: Sequence[Tiling], engines: int) -> Tiling:
    """Layer-sequential's cut of ``layer`` among ``sizes``: about as many atoms as ``engines``
    (at least that many where it can be), the most even such."""
    counted = [(_count(layer, t), t) for t in sizes]
    pool = [c for c in counted if c[0] >= engines] or counted
    return min(pool, key=lambda c: (abs(math.log(c[0] / engines)), -c[1].k, -c[1].rows))[1]


def even(layers: Sequence[Layer], arch: ArchSpec, dataflow: str, engines: int | Mapping[str, int] | None = None,
         samples: int = 1, budget: int = 0) -> dict[str, Tiling]:
    """Layer-sequential sizes: each layer cut into about as many atoms as the
    chip has engines (or ``engines``, per layer if a mapping; at least that many
    where it can be), the most even such cut that fits the buffers. Where the
    ``samples`` of a batch would have more than ``budget`` atoms in all (0: :data:`ATOM_BUDGET`), the
    samples side by side fill the engines: each layer cut for half as many engines,
    and half again, until they fit the budget (or no layer can be cut coarser)."""
    options = {layer.name: tilings(layer, arch, dataflow) for layer in layers}
    budget = budget or ATOM_BUDGET
    target = {layer.name: (engines[layer.name] if isinstance(engines, Mapping) else engines or arch.num_nodes)
              for layer in layers}
    while True:
        out = {layer.name: _even_of(layer, options[layer.name], target[layer.name]) for layer in layers}
        if samples * sum(_count(layer, out[layer.name]) for layer in layers) <= budget or all(
                t <= 1 for t in target.values()):
            return out
        target = {name: max(1, t // 2) for name, t in target.items()}


def _count(layer: Layer, t: Tiling) -> int:
    """Atoms per sample of ``layer`` cut by ``t``."""
    return math.ceil(layer.k / t.k) * math.ceil(layer.yo / t.rows) * (math.ceil(layer.c / t.c) if t.c else 1)


def atoms_of(net: Network, sizes: dict[str, Tiling]) -> list[AtomSpec]:
    """Every atom of every layer, sample by sample, in the network's layer order."""
    out = []
    for sample in range(net.batch):
        for layer in net:
            t = sizes[layer.name]
            # row blocks outermost: a layer's first rows are whole first, so its consumers can start;
            # a row block's partial sums side by side, then the atoms that add them up (so that the
            # atoms ready at any time come first in the layer's order)
            for r0 in range(0, layer.yo, t.rows):
                rows = (r0, min(layer.yo, r0 + t.rows))
                blocks = [(k0, min(layer.k, k0 + t.k)) for k0 in range(0, layer.k, t.k)]
                if not t.c:
                    out += [AtomSpec(layer.name, sample, k, rows) for k in blocks]
                    continue
                parts = [(c0, min(layer.c, c0 + t.c)) for c0 in range(0, layer.c, t.c)]
                out += [AtomSpec(layer.name, sample, k, rows, c, layer.c) for k in blocks for c in parts[:-1]]
                out += [AtomSpec(layer.name, sample, k, rows, parts[-1], layer.c) for k in blocks]
    return out


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def input_window(layer: Layer, rows: tuple[int, int]) -> tuple[int, int]:
    """The input rows an atom's output rows read (its halo included, padding excluded)."""
    if layer.op == Op.FC or layer.yo == 1 and layer.h > 1:
        return (0, layer.h)
    top = layer.pad[0]
    lo = rows[0] * layer.stride[0] - top
    hi = (rows[1] - 1) * layer.stride[0] - top + (layer.s - 1) * layer.dilation[0] + 1
    return (max(lo, 0), min(hi, layer.h))


def input_channels(layer: Layer, k: tuple[int, int]) -> tuple[int, int]:
    """The input channels an atom's output channels read (its own, a group's, or all)."""
    if layer.op in (Op.POOL, Op.ELTWISE):
        return k
    if layer.groups == 1 or layer.op == Op.FC:
        return (0, layer.c)
    per_k, per_c = layer.k // layer.groups, layer.c // layer.groups
    return (k[0] // per_k * per_c, math.ceil(k[1] / per_k) * per_c)


def _blocks(span: tuple[int, int], size: int, total: int) -> range:
    """The starts of the blocks of ``size`` (over ``[0, total)``) that ``span`` overlaps."""
    if span[1] <= span[0]:
        return range(0)
    return range(span[0] // size * size, min(span[1], total), size)


def reads(net: Network, atoms: Iterable[AtomSpec], sizes: dict[str, Tiling]
          ) -> dict[str, list[tuple[str | None, int]]]:
    """What each atom reads: (producer atom of the same sample, or None for a network input, words)."""
    out: dict[str, list[tuple[str | None, int]]] = {}
    plans: dict[tuple[str, int, int, int], list[tuple[str | None, int, int, int]]] = {}
    for a in atoms:
        key = (a.layer, a.k[0], a.rows[0], a.c[0] if a.c else -1)
        if key not in plans:  # the same for every sample
            plans[key] = _plan(net, sizes, a)
        got: list[tuple[str | None, int]] = [
            (None, words) if src is None else (_final_name(src, a.sample, k0, r0, sizes, net), words)
            for src, k0, r0, words in plans[key]]
        if a.c is not None and a.final:  # the block's last partial sum adds up the others
            part = (a.k[1] - a.k[0]) * (a.rows[1] - a.rows[0]) * net[a.layer].xo
            for c0 in range(0, a.c[0], sizes[a.layer].c):
                other = AtomSpec(a.layer, a.sample, a.k, a.rows, (c0, c0 + sizes[a.layer].c), a.c_total)
                got.append((other.name, part))
        out[a.name] = got
    return out


def _final_name(layer: str, sample: int, k0: int, r0: int, sizes: dict[str, Tiling], net: Network) -> str:
    """The atom that leaves a producer block's finished output (its last partial sum, if it has them)."""
    t = sizes[layer]
    if not t.c:
        return f"{layer}#{sample}:{k0}:{r0}"
    c_total = net[layer].c
    return f"{layer}#{sample}:{k0}:{r0}:c{(c_total - 1) // t.c * t.c}"


def _plan(net: Network, sizes: dict[str, Tiling], a: AtomSpec) -> list[tuple[str | None, int, int, int]]:
    """What atom ``a`` reads, as (producer layer or None, its atom's first channel and row, words)."""
    layer = net[a.layer]
    each = bool(layer.ports) and layer.ports[0].merge == Merge.EACH
    rows, chans = input_window(layer, a.rows), input_channels(layer, a.k)
    if a.c is not None:  # a partial sum reads its block of input channels
        chans = (max(chans[0], a.c[0]), min(chans[1], a.c[1]))
    got: list[tuple[str | None, int, int, int]] = []
    offset = 0
    for e in net.in_edges(a.layer):
        shape = net.output_shape(e.src)
        assert shape is not None
        if layer.op == Op.MATMUL and e.port == "b":
            continue  # below, all of port b at once
        lo, hi = e.channels if e.channels is not None else (0, shape.c)
        # an FC layer reads its producers flattened: each channel is h x w of its input features
        per = shape.h * shape.w if layer.op == Op.FC and layer.h * layer.w == 1 else 1
        width = (hi - lo) * per
        # the producer's channels [lo, hi) are the layer's [offset, offset + width) (every
        # operand of an element-wise layer delivers all of them, as a scaling's vector does: offset 0)
        whole = each or (layer.is_scale and e.port == "b")
        span = (0, width) if whole else (offset, offset + width)
        if not whole:
            offset += width
        need = _overlap(chans, span)
        if need <= 0:
            continue
        first = max(chans[0], span[0]) - span[0]
        wanted = (lo + first // per, lo + -(-(first + need) // per))
        prow = rows if shape.h == layer.h and per == 1 else (0, shape.h)
        if e.src in net.inputs:
            got.append((None, 0, 0, need * _overlap(prow, (0, shape.h)) * shape.w))
            continue
        t = sizes[e.src]
        if layer.op == Op.MATMUL and shape.h * shape.w != layer.h * layer.w:
            # a product whose rows fold several heads of its input (grouped-query attention):
            # which producer rows and channels an atom needs is not tracked, so it waits for
            # all of them, its words spread over them
            blocks = [(k0, r0) for r0 in range(0, shape.h, t.rows) for k0 in range(0, shape.c, t.k)]
            total = need * _overlap(prow, (0, shape.h)) * shape.w
            got += [(e.src, k0, r0, w) for (k0, r0), w in zip(blocks, _spread(total, len(blocks)), strict=True)
                    if w]
            continue
        got += _from_blocks(e.src, t, shape, wanted, prow)
    if layer.op == Op.MATMUL:
        got += _operand(net, sizes, layer, a)
    return got


def _from_blocks(src: str, t: Tiling, shape, chans: tuple[int, int], rows: tuple[int, int]
                 ) -> list[tuple[str | None, int, int, int]]:
    """The atoms of producer ``src`` (cut by ``t``, its output ``shape``) whose blocks
    hold channels ``chans`` of rows ``rows``, with the words of each: (producer, its
    atom's first channel and row, words)."""
    # a block's words are its rows' overlap times its channels' (each worked out once per row or channel block)
    row_parts = [(r0, _overlap(rows, (r0, min(shape.h, r0 + t.rows))) * shape.w)
                 for r0 in _blocks(rows, t.rows, shape.h)]
    chan_parts = [(k0, _overlap(chans, (k0, min(shape.c, k0 + t.k)))) for k0 in _blocks(chans, t.k, shape.c)]
    return [(src, k0, r0, rw * cw) for r0, rw in row_parts if rw for k0, cw in chan_parts if cw]


def _spread(total: int, n: int) -> list[int]:
    """``total`` words over ``n`` parts, as evenly as whole words go."""
    return [total // n + (j < total % n) for j in range(n)]


def _operand(net: Network, sizes: dict[str, Tiling], layer: Layer, a: AtomSpec
             ) -> list[tuple[str | None, int, int, int]]:
    """What an atom of a product of two fmaps reads of the second (port ``b``; its
    producers' outputs stacked along their rows in edge order, as a KV cache and
    the new token's key are), as :func:`_plan`'s (producer, its atom's first
    channel and row, words).

    ``out[g, k, y] += a[g, c, y] * b[g, k, c]`` per group ``g`` (a head): the
    atom's output channels are pairs (head, ``k``). ``b`` is held either with
    the heads' ``c`` as its channels and ``k`` as its rows (K for Q x K^T: the
    keys' features by tokens) or with the heads' ``k`` as its channels and
    ``c`` as its rows (V for scores x V); when its shape fits neither, the
    atom reads all of it."""
    edges = [e for e in net.in_edges(layer.name) if e.port == "b"]
    if not edges:
        return []
    shapes = []
    for e in edges:
        shape = net.output_shape(e.src)
        assert shape is not None
        shapes.append(shape)
    chans = {sh.c for sh in shapes}
    rows = sum(sh.h * sh.w for sh in shapes)
    g = max(layer.groups, 1)
    kin, nout = layer.c // g, layer.k // g
    need: list[tuple[tuple[int, int], tuple[int, int]]] = []  # (channels, stacked rows) of b
    if chans == {layer.c} and rows == nout:
        for h in range(a.k[0] // nout, (a.k[1] - 1) // nout + 1):
            lo, hi = max(a.k[0], h * nout) - h * nout, min(a.k[1], (h + 1) * nout) - h * nout
            c = (h * kin, (h + 1) * kin) if a.c is None else (max(h * kin, a.c[0]), min((h + 1) * kin, a.c[1]))
            need.append((c, (lo, hi)))
    elif chans == {layer.k} and rows == kin:
        need.append((a.k, (0, rows)))
    else:
        need.append(((0, max(chans)), (0, rows)))
    got: list[tuple[str | None, int, int, int]] = []
    start = 0
    for e, sh in zip(edges, shapes, strict=True):
        mine = (start, start + sh.h * sh.w)
        start = mine[1]
        for c, r in need:
            # this edge's part of the stacked rows, as its own rows (an fmap of width w: whole rows)
            lo, hi = max(r[0], mine[0]) - mine[0], min(r[1], mine[1]) - mine[0]
            if hi <= lo or c[1] <= c[0]:
                continue
            if e.src in net.inputs:
                got.append((None, 0, 0, (c[1] - c[0]) * (hi - lo)))
            else:
                got += _from_blocks(e.src, sizes[e.src], sh, c, (lo // sh.w, -(-hi // sh.w)))
    return got


def check_supported(net: Network) -> None:
    """The atomic scheduler cuts CNN layers (inference): one error naming what it cannot."""
    if net.training:
        raise KaplaError("the atomic scheduler schedules inference only (Atomic Dataflow); drop --training")
    for layer in net:
        if layer.op not in SUPPORTED:
            raise KaplaError(f"the atomic scheduler cannot cut layer '{layer.name}' ({layer.op.value}) into atoms "
                             f"yet: it cuts {', '.join(o.value for o in SUPPORTED)} layers")


__all__ = ["ATOM_BUDGET", "FINEST", "AtomSpec", "SUPPORTED", "Tiling", "anneal", "even", "atom_words", "atoms_of",
           "check_supported", "estimate_cycles", "ideal_cycles", "input_channels", "input_window", "reads", "tilings"]
