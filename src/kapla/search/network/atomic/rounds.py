"""Which atoms run in which round, on which engine, and what is written back
(Atomic Dataflow, Sec. IV-B to IV-D: Algorithms 2 and 3, the snake mapping).

**Rounds (Algorithm 2).** A dynamic program over rounds: a state is what has
run (per layer and sample, how many of its atoms, taken in their order) and
the cycles it took; from a state, each of a few ways to fill the next round
with ready atoms (those whose inputs have all run) gives a next state. The
fills follow the paper's four priorities, most urgent first: (1) atoms of the
layers the last round ran, (2) of other layers at the same depth, (3) of
layers of the same sample whose inputs are done, (4) of the next samples;
one fill takes them in that order by depth, one by the cycles of the last
round's atoms (balancing the round), one by the work left behind each layer
(the critical path first). States with the same atoms run are merged (the
cheaper kept) and only the ``beam`` cheapest by cycles so far plus a bound on
the rest (the work left over every engine) go on: the pruning that lets it
finish on networks of hundreds of thousands of atoms.

**Mapping.** Engines are taken in snake order over the mesh (row by row,
every other row reversed), so consecutive engines are neighbours; a round's
atoms go to consecutive engines layer by layer, in the order of the layers
(and from the start on the snake) that costs least: the word-hops from the
engines holding their inputs, and the weights an engine must fetch again
because its last atom had other weights.

**Buffering (Algorithm 3).** An engine keeps the outputs it made until their
last reader has run. Where what it keeps and the atom it runs next would not
fit its buffer, the kept output used furthest in the future is written back
to DRAM after the round before (its readers then read it from there).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from kapla.model.rounds import Atom, Chip, Round

#: Ways to fill a round (see the module).
FILLS = ("depth", "balance", "critical")


@dataclass
class _State:
    ptr: np.ndarray  # per group, the index of its next atom (what has run: every group's atoms before it)
    cycles: float
    last: frozenset[int]  # layers the last round ran
    path: tuple | None  # the rounds so far, last first: (its atoms, the path before it), None for none
    work: float = 0.0  # cycles of the atoms run so far, all engines
    count: int = 0  # atoms run so far


class RoundPlanner:
    """Algorithm 2 over ``atoms`` (grouped by layer and sample, each group's atoms
    in the order they are taken): ``layer_of``/``sample_of``/``depth`` per group."""

    def __init__(self, atoms: Sequence[Atom], groups: Sequence[tuple[int, int]], group_layer: Sequence[int],
                 group_sample: Sequence[int], layer_depth: Sequence[int], engines: int, beam: int = 4) -> None:
        self.atoms = atoms
        self.engines = engines
        self.beam = beam
        index = {a.name: i for i, a in enumerate(atoms)}
        self.start = np.array([s for s, _ in groups], dtype=np.int64)
        self.end = np.array([e for _, e in groups], dtype=np.int64)
        self.group_layer = np.asarray(group_layer, dtype=np.int64)
        self.group_sample = np.asarray(group_sample, dtype=np.int64)
        self.depth = np.asarray(layer_depth, dtype=np.int64)[self.group_layer]
        self.group_of = np.empty(len(atoms), dtype=np.int64)
        for g, (s, e) in enumerate(groups):
            self.group_of[s:e] = g
        self.cycles = np.array([a.cycles for a in atoms], dtype=np.float64)
        producers = [sorted({index[p] for p in a.reads}) for a in atoms]
        self.prod_ptr = np.zeros(len(atoms) + 1, dtype=np.int64)
        self.prod_ptr[1:] = np.cumsum([len(p) for p in producers])
        self.prod_idx = np.array([p for ps in producers for p in ps], dtype=np.int64)
        self.prod_group = self.group_of[self.prod_idx] if len(self.prod_idx) else self.prod_idx
        # the work behind each group: its own and that of the layers after it (critical path, per sample)
        work = np.zeros(len(groups))
        for g, (s, e) in enumerate(groups):
            work[g] = self.cycles[s:e].sum()
        self.work_left = work
        self.total = float(self.cycles.sum())

    def _ready(self, st: _State, atoms: np.ndarray) -> np.ndarray:
        """Which of ``atoms`` have every producer run (a producer has run when its
        group's pointer is past it)."""
        lo, hi = self.prod_ptr[atoms], self.prod_ptr[atoms + 1]
        counts = hi - lo
        if counts.sum() == 0:
            return np.ones(len(atoms), dtype=bool)
        at = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        done = st.ptr[self.prod_group[at]] > self.prod_idx[at]
        # per atom: all of its producers done (an atom with none is ready)
        bad = np.zeros(len(atoms), dtype=np.int64)
        np.add.at(bad, np.repeat(np.arange(len(atoms)), counts), ~done)
        return bad == 0

    def _ready_groups(self, st: _State) -> np.ndarray:
        live = np.flatnonzero(st.ptr < self.end)
        return live[self._ready(st, st.ptr[live])]

    def _take(self, st: _State, order: Sequence[int]) -> list[int]:
        """Up to one atom per engine from the groups in ``order``, each group's ready atoms in its order."""
        chosen: list[int] = []
        for g in order:
            i, end = int(st.ptr[g]), int(self.end[g])
            span = np.arange(i, min(end, i + self.engines - len(chosen)))
            ready = self._ready(st, span)
            # the group's atoms up to its first one not ready
            stop = int(np.argmin(ready)) if not ready.all() else len(span)
            chosen += span[:stop].tolist()
            if len(chosen) == self.engines:
                break
        return chosen

    def _fills(self, st: _State) -> list[list[int]]:
        ready = self._ready_groups(st)
        if len(ready) == 0:
            return []
        layers = self.group_layer[ready]
        in_last = np.isin(layers, list(st.last)) if st.last else np.zeros(len(ready), dtype=bool)
        depths_last = set(self.depth[ready[in_last]].tolist())
        same_depth = np.isin(self.depth[ready], list(depths_last)) & ~in_last
        low_sample = int(self.group_sample[ready].min())
        same_sample = (self.group_sample[ready] == low_sample) & ~in_last & ~same_depth
        priority = np.where(in_last, 0, np.where(same_depth, 1, np.where(same_sample, 2, 3)))
        heads = st.ptr[ready]
        last_cycles = float(np.mean(self.cycles[list(st.path[0])])) if st.path else float(
            np.median(self.cycles[heads]))
        keys = {
            "depth": np.lexsort((ready, self.depth[ready], self.group_sample[ready], priority)),
            "balance": np.lexsort((ready, np.abs(np.log(self.cycles[heads] + 1) - np.log(last_cycles + 1)),
                                   priority)),
            "critical": np.lexsort((ready, -self.work_left[ready], self.group_sample[ready], priority)),
        }
        fills = []
        seen = set()
        for name in FILLS:
            chosen = self._take(st, ready[keys[name]].tolist())
            key = tuple(sorted(chosen))
            if chosen and key not in seen:
                seen.add(key)
                fills.append(chosen)
        return fills

    def _step(self, st: _State, chosen: list[int]) -> _State:
        ptr = st.ptr.copy()
        picked = np.asarray(chosen, dtype=np.int64)
        # a group's pointer moves past the last of its atoms the round took (they are its next ones)
        np.maximum.at(ptr, self.group_of[picked], picked + 1)
        took = self.cycles[picked]
        return _State(ptr, st.cycles + float(took.max()),
                      frozenset(self.group_layer[self.group_of[chosen]].tolist()), (tuple(chosen), st.path),
                      st.work + float(took.sum()), st.count + len(chosen))

    def plan(self, progress: Callable[[int, int], None] | None = None) -> list[tuple[int, ...]]:
        """The rounds (atom indices each), the cheapest the pruned program finds."""
        states = [_State(self.start.copy(), 0.0, frozenset(), None)]
        total = len(self.atoms)
        while True:
            finished = [s for s in states if bool(np.all(s.ptr >= self.end))]
            if finished:
                rounds: list[tuple[int, ...]] = []
                node = min(finished, key=lambda s: s.cycles).path
                while node is not None:
                    rounds.append(node[0])
                    node = node[1]
                return rounds[::-1]
            merged: dict[bytes, _State] = {}
            for st in states:
                for chosen in self._fills(st):
                    nxt = self._step(st, chosen)
                    key = nxt.ptr.tobytes()
                    if key not in merged or nxt.cycles < merged[key].cycles:
                        merged[key] = nxt
            if not merged:
                raise RuntimeError("no atom is ready, yet some have not run: the atoms' dependencies loop")
            # cycles so far and a bound on the rest: the work left spread over every engine
            states = heapq.nsmallest(self.beam, merged.values(),
                                     key=lambda s: (s.cycles + (self.total - s.work) / self.engines, -s.count))
            if progress is not None:
                progress(max(s.count for s in states), total)


def layer_by_layer(atoms: Sequence[Atom], groups: Sequence[tuple[int, int]], group_layer: Sequence[int],
                   engines: int) -> list[tuple[int, ...]]:
    """Layer-sequential rounds: one layer at a time (its atoms of every sample,
    the samples side by side), ``engines`` atoms a round, in the layers' order;
    a layer's partial sums before the atoms that add them up."""
    by_layer: dict[int, list[int]] = {}
    for (start, end), layer in zip(groups, group_layer, strict=True):
        by_layer.setdefault(layer, []).extend(range(start, end))
    rounds = []
    for layer in sorted(by_layer):
        mine = by_layer[layer]
        names = {atoms[i].name for i in mine}
        first = [i for i in mine if not any(p in names for p in atoms[i].reads)]
        then = [i for i in mine if any(p in names for p in atoms[i].reads)]
        for stage in (first, then):
            rounds += [tuple(stage[i:i + engines]) for i in range(0, len(stage), engines)]
    return rounds


def in_order(atoms: Sequence[Atom], engines: int) -> list[tuple[int, ...]]:
    """A list schedule: each round the first ``engines`` atoms, in their order,
    whose producers ran in an earlier round (the ablation without the DP)."""
    index = {a.name: i for i, a in enumerate(atoms)}
    producers = [[index[p] for p in a.reads] for a in atoms]
    done = [False] * len(atoms)
    pending = list(range(len(atoms)))
    rounds: list[tuple[int, ...]] = []
    while pending:
        chosen: list[int] = []
        waiting: list[int] = []
        at = len(pending)
        for j, i in enumerate(pending):
            if all(done[p] for p in producers[i]):
                chosen.append(i)
                if len(chosen) == engines:
                    at = j + 1
                    break
            else:
                waiting.append(i)
        if not chosen:
            raise ValueError("atoms whose producers never run")
        for i in chosen:
            done[i] = True
        # only the front was scanned: the rest keeps its order untouched
        pending = waiting + pending[at:]
        rounds.append(tuple(chosen))
    return rounds


def snake(mesh: tuple[int, int]) -> list[int]:
    """The engines in snake order: row by row, every other row reversed."""
    rows, cols = mesh
    order = []
    for r in range(rows):
        line = [r * cols + c for c in range(cols)]
        order += line if r % 2 == 0 else line[::-1]
    return order


def place(rounds: Sequence[Sequence[int]], atoms: Sequence[Atom], layer_of: Sequence[int], chip: Chip,
          orders: int = 24) -> list[list[tuple[int, int]]]:
    """Each round's atoms on engines (see the module): (atom index, engine)."""
    path = snake(chip.mesh)
    index = {a.name: i for i, a in enumerate(atoms)}
    hops = np.array(chip.hop_table, dtype=np.int64)
    feeds = [[(index[p], words) for p, words in a.inputs if p is not None] for a in atoms]
    where: dict[int, int] = {}
    holds: dict[int, str | None] = {}  # the weights each engine ran with in the round before
    out = []
    n = len(path)
    for chosen in rounds:
        by_layer: dict[int, list[int]] = {}
        for i in chosen:
            by_layer.setdefault(layer_of[i], []).append(i)
        layers = list(by_layer)
        # per atom, the word-hops from the engines holding its inputs to each engine (exact integers)
        to: dict[int, list[int]] = {}
        for i in chosen:
            if feeds[i]:
                at = np.fromiter((where[p] for p, _ in feeds[i]), dtype=np.int64, count=len(feeds[i]))
                words = np.fromiter((w for _, w in feeds[i]), dtype=np.int64, count=len(feeds[i]))
                to[i] = (hops[:, at] @ words).tolist()
        perms = itertools.islice(itertools.permutations(layers), orders) if len(layers) > 1 else [tuple(layers)]
        best: tuple[float, list[tuple[int, int]]] | None = None
        for perm in perms:
            seq = [i for layer in perm for i in by_layer[layer]]
            for offset in range(0, n, max(n // 4, 1)):
                assign = _assign(seq, atoms, path, offset, holds)
                cost = 0.0
                for i, engine in assign:
                    cost += (to[i][engine] if i in to else 0) * chip.hop_j
                    if atoms[i].weight_block is None or holds.get(engine) != atoms[i].weight_block:
                        cost += atoms[i].weight_words * chip.dram_j
                if best is None or cost < best[0]:
                    best = (cost, assign)
        assert best is not None
        holds = {}
        for i, engine in best[1]:
            where[i] = engine
            holds[engine] = atoms[i].weight_block
        out.append(best[1])
    return out


def _next_use(rounds: Sequence[int], now: int) -> int:
    """The first of the (sorted) ``rounds`` at or after ``now`` (far in the future if none)."""
    at = bisect.bisect_left(rounds, now)
    return rounds[at] if at < len(rounds) else 10 ** 9


def _assign(seq: Sequence[int], atoms: Sequence[Atom], path: Sequence[int], offset: int,
            holds: dict[int, str | None]) -> list[tuple[int, int]]:
    """Atoms ``seq`` on engines: each on a free engine that holds its weights if there
    is one, the others on the free engines in snake order from ``offset``."""
    free = [path[(offset + k) % len(path)] for k in range(len(path))]
    holders: dict[str | None, list[int]] = {}
    for engine in free:
        holders.setdefault(holds.get(engine), []).append(engine)
    taken: set[int] = set()
    placed: dict[int, int] = {}
    for i in seq:
        block = atoms[i].weight_block
        for engine in holders.get(block, []) if block is not None else []:
            if engine not in taken:
                placed[i] = engine
                taken.add(engine)
                break
    rest = iter(e for e in free if e not in taken)
    return [(i, placed[i] if i in placed else next(rest)) for i in seq]


def buffer(placed: Sequence[Sequence[tuple[int, int]]], atoms: Sequence[Atom], chip: Chip,
           through_dram: frozenset[int] = frozenset()) -> list[Round]:
    """The rounds with Algorithm 3's write-backs: no engine over its buffer
    (and the outputs of ``through_dram`` written back right after their round)."""
    index = {a.name: i for i, a in enumerate(atoms)}
    ran = {i: r for r, runs in enumerate(placed) for i, _ in runs}
    uses: dict[int, list[int]] = {}
    for i, a in enumerate(atoms):
        for p in a.reads:
            uses.setdefault(index[p], []).append(ran[i])
    last = {p: max(rs) for p, rs in uses.items()}
    for rs in uses.values():
        rs.sort()
    evict: list[list[int]] = [[] for _ in placed]
    kept: dict[int, dict[int, int]] = {}  # engine -> atom -> its last round in the buffer
    words: dict[int, int] = {}  # engine -> the words its kept outputs take
    leave: dict[int, list[tuple[int, int]]] = {}  # round -> (engine, atom) kept up to the round before
    for r, runs in enumerate(placed):
        for engine, j in leave.pop(r, ()):
            held = kept[engine]
            if j in held:  # not written back already
                del held[j]
                words[engine] -= atoms[j].out_words
        for i, engine in runs:
            held = kept.setdefault(engine, {})
            need = max(atoms[i].work_words, atoms[i].out_words)
            while held and words.get(engine, 0) + need > chip.buffer_words:
                # furthest next use: the kept output whose next reader comes last
                victim = max(held, key=lambda j: (_next_use(uses.get(j, []), r), j))
                evict[r - 1].append(victim)  # r > 0: round 0 keeps nothing yet
                del held[victim]
                words[engine] -= atoms[victim].out_words
        for i, engine in runs:
            if i in through_dram:
                evict[r].append(i)
            elif i in last and last[i] > r:
                kept.setdefault(engine, {})[i] = last[i]
                words[engine] = words.get(engine, 0) + atoms[i].out_words
                leave.setdefault(last[i] + 1, []).append((engine, i))
    return [Round(tuple((atoms[i].name, engine) for i, engine in runs), tuple(atoms[j].name for j in evict[r]))
            for r, runs in enumerate(placed)]


__all__ = ["FILLS", "RoundPlanner", "buffer", "in_order", "layer_by_layer", "place", "snake"]
