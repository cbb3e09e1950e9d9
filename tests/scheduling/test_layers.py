"""The layer service: jobs that are one problem under several keys are solved
once, and every key gets the answer a solve of its own would give."""

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from kapla.arch import load_arch
from kapla.scheduling.layers import LayerService
from kapla.scheduling.workers import worker_pool
from kapla.search.layer.kapla.solver import KaplaIntraSolver
from kapla.space.problem import Problem
from kapla.workload.layer import Layer, Op, shape_key

ARCH = load_arch("multinode").with_node_region(2, 2)
OBJECTIVES = ("energy", "latency")


class CountingSolver(KaplaIntraSolver):
    """KAPLA's layer solver, counting its solves (in this process)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def schemes_each(self, problem, objectives):
        self.calls += 1
        return super().schemes_each(problem, objectives)


def problems():
    """Jobs as a network scheduler keys them: "a" and "b" differ (say, in the
    reserve of another tensor that leaves this layer the same buffer), their problems do not."""
    conv = Layer("conv", Op.CONV, 16, 32, 14, 3)
    fc = Layer("fc", Op.FC, 256, 64, 1, 1)
    return {"a": Problem(conv, 4, ARCH), "b": Problem(replace(conv), 4, ARCH), "c": Problem(fc, 4, ARCH)}


def direct(problem):
    return [r.scheme for r in KaplaIntraSolver().run_each(problem, OBJECTIVES)]


def test_one_problem_under_several_keys_is_solved_once():
    solver = CountingSolver()
    service = LayerService(solver, ARCH)
    p = problems()
    assert p["a"] == p["b"] and p["a"] is not p["b"]
    service.solve({key: (problem, OBJECTIVES) for key, problem in p.items()})
    assert solver.calls == 2 and service.shared == 1
    service.solve({"d": (p["a"], OBJECTIVES)})  # a later call: answered from the first
    assert solver.calls == 2 and service.shared == 2
    for key, problem in [*p.items(), ("d", p["a"])]:
        assert [service.get(key, objective) for objective in OBJECTIVES] == direct(problem)
    assert service.new == 4 * len(OBJECTIVES)  # every key recorded for the run (and a store, if open)


def test_the_pool_solves_one_problem_once_too():
    p = problems()
    with worker_pool(2) as pool:
        service = LayerService(KaplaIntraSolver(), ARCH, pool)
        service.solve({key: (problem, OBJECTIVES) for key, problem in p.items()})
    assert service.shared == 1
    for key, problem in p.items():
        assert [service.get(key, objective) for objective in OBJECTIVES] == direct(problem)


def test_while_the_workers_start_the_jobs_are_solved_here_and_answer_the_same():
    p = problems()
    jobs = {key: (problem, OBJECTIVES) for key, problem in p.items()}
    with worker_pool(2) as pool:
        assert pool is not None
        pool.ready = lambda: False  # workers that never come up: every solve is made in this process
        here = CountingSolver()
        service = LayerService(here, ARCH, pool)
        service.solve(jobs)
        assert here.calls == 2 and service.shared == 1
        for key, problem in p.items():
            assert [service.get(key, objective) for objective in OBJECTIVES] == direct(problem)
        del pool.ready
        while not pool.ready():  # once they are up, the workers solve
            time.sleep(0.05)
        there = CountingSolver()
        service = LayerService(there, ARCH, pool)
        service.solve(jobs)
        assert there.calls == 0
        for key, problem in p.items():
            assert [service.get(key, objective) for objective in OBJECTIVES] == direct(problem)


class RecordingPool(ThreadPoolExecutor):
    """A pool of one thread that records the problems in the order it is handed them."""

    def __init__(self) -> None:
        super().__init__(1)
        self.order: list[str] = []

    def submit(self, fn, *args, **kwargs):
        self.order.append(args[1].layer.name)  # _timed(solve, problem, objectives)
        return super().submit(fn, *args, **kwargs)


def test_the_pool_gets_the_longest_solves_first_and_learns_how_long_each_took():
    fc = Layer("fc", Op.FC, 256, 64, 1, 1)
    small = Layer("small", Op.FC, 16, 8, 1, 1)
    conv = Layer("conv", Op.CONV, 16, 32, 14, 3)
    jobs = {name: (Problem(layer, 4, ARCH), OBJECTIVES) for name, layer in
            (("small", small), ("fc", fc), ("conv", conv))}
    with RecordingPool() as pool:
        service = LayerService(KaplaIntraSolver(), ARCH, pool)
        service.seconds = {(shape_key(small), 4): 0.01, (shape_key(fc), 4): 0.5}  # conv: never seen
        service.solve(jobs)
    assert pool.order == ["conv", "fc", "small"]  # unknown first, then by what each took before
    assert set(service.seconds) == {(shape_key(layer), 4) for layer in (small, fc, conv)}
    assert service.seconds[(shape_key(fc), 4)] != 0.5 and all(s > 0 for s in service.seconds.values())  # measured
    for name, (problem, _) in jobs.items():
        assert [service.get(name, objective) for objective in OBJECTIVES] == direct(problem)


def test_each_key_is_passed_to_done_once_its_answers_are_recorded():
    # a scheduler works on what a solve gives while the workers make the others
    p = problems()
    for pooled in (False, True):
        seen = []
        with worker_pool(2 if pooled else 1) as pool:
            service = LayerService(KaplaIntraSolver(), ARCH, pool)
            service.solve({"a": (p["a"], OBJECTIVES)})  # answered before: passed on too

            def done(key, service=service, seen=seen):
                seen.append((key, all(service.known(key, objective) for objective in OBJECTIVES)))

            service.solve({key: (problem, OBJECTIVES) for key, problem in p.items()}, done=done)
        assert sorted(seen) == [("a", True), ("b", True), ("c", True)]


def test_the_solves_done_are_taken_as_they_finish_the_first_awaited_the_rest_not():
    import queue
    import threading
    from concurrent.futures import Future

    from kapla.scheduling.layers import _finished

    finishing: queue.SimpleQueue = queue.SimpleQueue()
    futures = [Future() for _ in range(4)]
    for f in futures:
        f.add_done_callback(finishing.put)
    assert _finished(finishing, 0.01) == []  # none done: the time runs out
    futures[2].set_result(2)
    futures[0].set_result(0)
    assert _finished(finishing, 0.01) == [futures[2], futures[0]]  # in the order they finished
    threading.Timer(0.05, futures[1].set_result, (1,)).start()
    start = time.perf_counter()
    assert _finished(finishing, 5.0) == [futures[1]]  # waits for the first to come
    assert time.perf_counter() - start < 4.0
    futures[3].set_exception(RuntimeError("worker gone"))
    assert _finished(finishing, 0.01) == [futures[3]]  # a failed one too, for its caller to raise
