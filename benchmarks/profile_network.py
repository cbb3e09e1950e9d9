"""Where a whole-network schedule spends its time: layer solves, segment costing and the rest.

Run: python benchmarks/profile_network.py [--nets alexnet,mobilenet] [--arch multinode] [--batch 64]
                                          [--modes inference,training] [--jobs 1|N|default] [--top N]

For each network and mode, schedules it with KAPLA (in this process with
--jobs 1, the default, so every second is seen here) and prints: the wall
time; the layer solves the layer service ran and how many distinct problems
they were; the seconds spent waiting for layer solves (with --jobs 1: solving
them) and the rounds they came in (jobs per round: the layers alone first,
then each round of KAPLA's refinement); the layer evaluations that costing the
segments ran (evaluate_segment) and their seconds; and this process's CPU
seconds. --top N adds cProfile's N most expensive functions (cumulative) of
this process.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import kapla
import kapla.model.segment as segment_model
from kapla.scheduling.layers import LayerService


class Counters:
    """Wraps the layer service's solve and the segment evaluator's layer evaluations, counting and timing them."""

    def __init__(self) -> None:
        self.rounds: list[tuple[int, float]] = []
        self.problems: set = set()
        self.jobs = 0
        self.evaluations = 0
        self.evaluate_s = 0.0
        self.segments_s = 0.0
        self._solve = LayerService.solve
        self._evaluate = segment_model.evaluate
        self._evaluate_segment = segment_model.evaluate_segment

    def __enter__(self) -> Counters:
        counters, solve, evaluate = self, self._solve, self._evaluate

        def counted_solve(service, jobs, *args, **kwargs):
            start = time.perf_counter()
            solve(service, jobs, *args, **kwargs)
            counters.rounds.append((len(jobs), time.perf_counter() - start))
            counters.jobs += len(jobs)
            counters.problems.update(problem for problem, _ in jobs.values())

        def counted_evaluate(*args, **kwargs):
            start = time.perf_counter()
            try:
                return evaluate(*args, **kwargs)
            finally:
                counters.evaluations += 1
                counters.evaluate_s += time.perf_counter() - start

        LayerService.solve = counted_solve  # type: ignore[method-assign]
        segment_model.evaluate = counted_evaluate  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        LayerService.solve = self._solve  # type: ignore[method-assign]
        segment_model.evaluate = self._evaluate


def profile(net: str, arch: str, batch: int, training: bool, jobs: int | None, top: int) -> None:
    profiler = cProfile.Profile() if top else None
    with Counters() as counters:
        cpu, start = time.process_time(), time.perf_counter()
        if profiler is not None:
            profiler.enable()
        result = kapla.schedule(net, arch, batch=batch, training=training, jobs=jobs)
        if profiler is not None:
            profiler.disable()
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    solving = sum(s for _, s in counters.rounds)
    mode = "training" if training else "inference"
    workers = "default workers" if jobs is None else f"jobs {jobs}"
    print(f"{net} {mode} on {arch}, batch {batch}, {workers}: {wall:.2f} s wall, energy {result.energy_j * 1e3:.4f} mJ")
    print(f"  layer solves: {counters.jobs} jobs, {len(counters.problems)} distinct problems, "
          f"{solving:.2f} s waiting for them ({solving / wall:.0%}); rounds (jobs, s): "
          + ", ".join(f"({n}, {s:.2f})" for n, s in counters.rounds))
    print(f"  segment costing: {counters.evaluations} layer evaluations, {counters.evaluate_s:.2f} s")
    print(f"  this process: {cpu:.2f} CPU s; outside the layer solves {wall - solving:.2f} s wall")
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nets", default="alexnet,mobilenet")
    parser.add_argument("--arch", default="multinode")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--modes", default="inference,training")
    parser.add_argument("--jobs", default="1", help="a number, or 'default' (kapla's default workers)")
    parser.add_argument("--top", type=int, default=0, help="also print cProfile's top N functions")
    args = parser.parse_args()
    jobs = None if args.jobs == "default" else int(args.jobs)
    for net in args.nets.split(","):
        for mode in args.modes.split(","):
            profile(net, args.arch, args.batch, mode == "training", jobs, args.top)


if __name__ == "__main__":
    main()
