"""ML-guided search, AutoTVM-style (KAPLA Sec. V-A, baseline M).

A layer's space (:class:`~kapla.space.layer.layer_space.LayerSpace`) is indexed
as configurations ``(frame, factor split, combination of loop orders)``.
Each round measures a batch of configurations with the cost model, fits a
learned cost model (XGBoost's gradient-boosted trees on features of the
configurations: log loop counts per level, loop positions, the frame's
unrolling) to everything measured so far, and runs simulated annealing on
that model's predictions to choose the next batch among the configurations
not measured yet. The best valid configuration measured wins.

The paper tunes 1024 rounds of 128 configurations per layer; the default
here is 6 rounds of 48 so a network finishes in minutes (options
``rounds`` and ``batch``). Everything is seeded from ``seed`` and the layer
solve itself, so a run repeats exactly.
"""

from __future__ import annotations

import math
import time

import numpy as np

from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.tensors import DIMS
from kapla.errors import KaplaError
from kapla.model.evaluate import evaluate
from kapla.search.base import IntraResult, IntraSolver
from kapla.search.sampling import check_seed, generator
from kapla.space.layer.diagnose import no_scheme
from kapla.space.layer.frames import Blockings, factor_combos
from kapla.space.layer.layer_space import LayerSpace
from kapla.space.layer.skeletons import OrderTable, class_table, looping_mask, order_counts, orders_of
from kapla.space.problem import NoSchemeError, Problem

ND = len(DIMS)
SA_STEPS = 40  # annealing steps per round, as AutoTVM's default order of magnitude
SA_POPULATION = 64  # walkers per annealing run
TREES = 60  # boosting rounds of the learned cost model
INVALID_PENALTY = 4.0  # an invalid configuration's cost, as a multiple of the worst valid one, for the model


class _Configs:
    """The configurations of a layer's space as integer triples ``(frame,
    split, order combination)``, with their features, costs and schemes.
    The splits of all frames are kept in flat arrays (``offset`` gives each
    frame's first), so drawing, moving and featurising are array operations."""

    def __init__(self, space: LayerSpace) -> None:
        self.space = space
        self.table: OrderTable = class_table(space.problem.layer, DIMS)
        self.levels = len(space.frames[0].spatial) if space.frames else 0
        frames, units, counts, stacks = [], [], [], []
        for f in range(len(space)):
            ev = space.evaluator(f)
            unit, cnt = factor_combos(ev)
            if unit.shape[0] == 0:
                continue
            frames.append(f)
            units.append(unit)
            counts.append(cnt)
            stacks.append(np.repeat(np.concatenate([np.log2(x) for x in ev.spatial])[None, :], len(unit), axis=0))
        self.frames = np.array(frames, dtype=np.int64)
        sizes = np.array([len(u) for u in units], dtype=np.int64)
        self.n_rows = sizes
        self.offset = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        if not frames:
            return
        self.unit = np.concatenate(units)
        self.counts = [np.concatenate([c[lvl] for c in counts]) for lvl in range(self.levels)]
        self.masks = [looping_mask(c) for c in self.counts]
        self.n_orders = [order_counts(self.table, m) for m in self.masks]
        self.combos = np.prod(np.stack(self.n_orders), axis=0)
        self.static = np.concatenate([np.log2(self.unit)] + [np.log2(c) for c in self.counts]
                                     + [np.concatenate(stacks)], axis=1)

    def __bool__(self) -> bool:
        return len(self.frames) > 0

    def _flat(self, configs: np.ndarray) -> np.ndarray:
        return self.offset[configs[:, 0]] + configs[:, 1]

    def random(self, rng: np.random.Generator, k: int) -> np.ndarray:
        """``(k, 3)`` configurations drawn uniformly: a frame, a split, an order combination."""
        f = rng.integers(0, len(self.frames), k)
        r = (rng.random(k) * self.n_rows[f]).astype(np.int64)
        c = (rng.random(k) * self.combos[self.offset[f] + r]).astype(np.int64)
        return np.stack([f, r, c], axis=1)

    def neighbours(self, rng: np.random.Generator, configs: np.ndarray) -> np.ndarray:
        """Each configuration changed in one choice: mostly its order
        combination or its split within the frame, sometimes its frame."""
        k = len(configs)
        move, u1, u2 = rng.random(k), rng.random(k), rng.random(k)
        fresh = self.random(rng, k)
        f = configs[:, 0]
        rows = np.where(move < 0.4, configs[:, 1], (u1 * self.n_rows[f]).astype(np.int64))
        combos = (u2 * self.combos[self.offset[f] + rows]).astype(np.int64)
        out = np.stack([f, rows, combos], axis=1)
        return np.where((move >= 0.85)[:, None], fresh, out)

    def _orders(self, flat: np.ndarray, combos: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per level, each configuration's loop order."""
        return orders_of([self.table] * self.levels, [m[flat] for m in self.masks],
                         [n[flat] for n in self.n_orders], combos)

    def features(self, configs: np.ndarray) -> np.ndarray:
        """``(k, D)`` features: log2 of the register block and of each level's
        loop counts, the frame's unrolling per level and dim, and each dim's
        position in each level's order."""
        flat = self._flat(configs)
        parts = [self.static[flat]]
        for perms in self._orders(flat, configs[:, 2]):
            position = np.empty(perms.shape)
            np.put_along_axis(position, perms, np.broadcast_to(np.arange(ND) / ND, perms.shape), axis=1)
            parts.append(position)
        return np.concatenate(parts, axis=1)

    def blockings(self, configs: np.ndarray) -> Blockings:
        """Configurations of one frame as blockings."""
        flat = self._flat(configs)
        return Blockings(self.unit[flat], tuple(c[flat] for c in self.counts),
                         np.arange(len(flat), dtype=np.int64), tuple(self._orders(flat, configs[:, 2])))

    def measure(self, configs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each configuration's objective under the cost model (inf: invalid), and its energy."""
        values = np.full(len(configs), np.inf)
        energy = np.full(len(configs), np.inf)
        for f in np.unique(configs[:, 0]):
            pick = np.flatnonzero(configs[:, 0] == f)
            costs = self.space.score(int(self.frames[f]), self.blockings(configs[pick]))
            values[pick] = costs.value(self.space.objective)
            energy[pick] = costs.total
        return values, energy

    def scheme(self, config: np.ndarray) -> LayerScheme:
        b = self.blockings(config[None, :])
        return self.space.evaluator(int(self.frames[config[0]])).scheme(b, 0, self.space.problem.ifm_name)


def _xgboost():
    try:
        import xgboost
    except ImportError:
        raise KaplaError("the ml solver needs XGBoost: pip install 'kapla[ml]'") from None
    return xgboost


class MlIntraSolver(IntraSolver):
    """Simulated annealing over a layer's space, guided by a learned cost model."""

    name = "ml"

    def __init__(self, rounds: int = 6, batch: int = 48, seed: int = 0, time_budget: float | None = None) -> None:
        for key, value in (("rounds", rounds), ("batch", batch)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key} must be a whole number of at least 1, got {value!r}")
        self.rounds, self.batch = rounds, batch
        self.seed = check_seed(seed)
        self.time_budget = time_budget

    def run(self, problem: Problem) -> IntraResult:
        xgb = _xgboost()
        start = time.perf_counter()
        space = LayerSpace(problem)
        configs = _Configs(space)
        if not configs:
            raise no_scheme(problem.layer, problem.batch, problem.arch)
        rng = generator(self.seed, problem.key)
        seen: set[tuple[int, int, int]] = set()
        measured: list[np.ndarray] = []
        values: list[float] = []
        best: tuple[tuple[float, float], np.ndarray] | None = None
        batch = configs.random(rng, self.batch)
        cut = False
        for round_ in range(self.rounds):
            batch = np.array([c for c in dict.fromkeys(map(tuple, batch)) if c not in seen], dtype=np.int64)
            if len(batch):
                value, energy = configs.measure(batch)
                for c, v, e in zip(batch, value, energy, strict=True):
                    seen.add(tuple(c))
                    if math.isfinite(v) and (best is None or (v, e) < best[0]):
                        best = ((float(v), float(e)), c)
                measured.append(batch)
                values += list(value)
            if round_ == self.rounds - 1:
                break
            if self.time_budget is not None and time.perf_counter() - start > self.time_budget:
                cut = True
                break
            batch = self._propose(xgb, configs, rng, np.concatenate(measured), np.array(values), seen)
        if best is None:
            raise NoSchemeError(f"ML-guided search ({self.rounds} rounds of {self.batch}, seed {self.seed}) found "
                                f"no valid scheme for layer '{problem.layer.name}' among the {len(seen)} it "
                                "measured; give it more rounds")
        scheme = configs.scheme(best[1])
        cost = evaluate(scheme, problem.arch, problem.feed)
        return IntraResult(scheme, cost, len(seen), time.perf_counter() - start, complete=not cut)

    def _propose(self, xgb, configs: _Configs, rng: np.random.Generator, measured: np.ndarray,
                 values: np.ndarray, seen: set[tuple[int, int, int]]) -> np.ndarray:
        """The next batch: the unmeasured configurations that simulated
        annealing on the learned model's predictions ranks best."""
        finite = np.isfinite(values)
        if not finite.any():  # nothing valid to learn from yet: explore
            return configs.random(rng, self.batch)
        # an invalid configuration is learnt as much worse than any valid one
        target = np.log(np.where(finite, values, values[finite].max() * INVALID_PENALTY))
        # one thread everywhere, the matrices too: a search runs beside others (worker
        # processes, other jobs), and OpenMP threads spinning on busy cores made
        # building each small matrix take tens of milliseconds (most of M's time)
        params = {"max_depth": 6, "eta": 0.3, "nthread": 1, "seed": int(rng.integers(0, 2**31 - 1)),
                  "objective": "reg:squarederror"}
        booster = xgb.train(params, xgb.DMatrix(configs.features(measured), label=target, nthread=1),
                            num_boost_round=TREES)

        def predict(points: np.ndarray) -> np.ndarray:
            return booster.predict(xgb.DMatrix(configs.features(points), nthread=1))

        order = np.argsort(values, kind="stable")
        walkers = measured[order[: SA_POPULATION // 2]]
        walkers = np.concatenate([walkers, configs.random(rng, SA_POPULATION - len(walkers))])
        score = predict(walkers)
        pool: dict[tuple[int, int, int], float] = {}
        for step in range(SA_STEPS):
            temperature = 1.0 - step / SA_STEPS
            moved = configs.neighbours(rng, walkers)
            new = predict(moved)
            gain = np.minimum((score - new) / max(temperature, 1e-3), 0.0)  # a better prediction is always taken
            accept = rng.random(len(new)) < np.exp(gain)
            walkers = np.where(accept[:, None], moved, walkers)
            score = np.where(accept, new, score)
            for c, s in zip(map(tuple, walkers), score, strict=True):
                if c not in seen:
                    pool[c] = min(pool.get(c, math.inf), float(s))
        ranked = sorted(pool, key=lambda c: pool[c])[: self.batch]
        out = np.array(ranked, dtype=np.int64).reshape(-1, 3)
        if len(out) < self.batch:
            out = np.concatenate([out, configs.random(rng, self.batch - len(out))])
        return out


__all__ = ["MlIntraSolver"]
