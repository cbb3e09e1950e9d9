"""The layer-by-layer network scheduler: the network's layers in a
topological order, each on the whole node array with its data through DRAM,
its scheme from the layer service for the objective asked for."""

from __future__ import annotations

import time

from kapla.dataflow.segment import Region, SegmentScheme
from kapla.model.segment import evaluate_segment
from kapla.search.base import LayerService, NetworkScheduler, NetworkTask
from kapla.search.result import ScheduleResult, Step, from_steps
from kapla.space.layer.diagnose import no_scheme
from kapla.space.network.inter import InterScheme, feed_of, placements, scheme_in_segment
from kapla.space.network.segments import schedule_order
from kapla.space.problem import Problem


class LayerwiseScheduler(NetworkScheduler):
    """Each layer alone on the whole array, one after another."""

    name = "layerwise"

    def schedule(self, task: NetworkTask, layers: LayerService) -> ScheduleResult:
        net, arch, objective = task.net, task.arch, task.objective.name
        whole = (Region((0, 0), arch.node_array),)
        singles = [InterScheme((name,), ((name,),), whole) for name in schedule_order(net)]
        places = [placements(net, arch, inter)[inter.layers[0]] for inter in singles]
        jobs = {}
        keys = []
        for inter, place in zip(singles, places, strict=True):
            layer = net[place.layer]
            problem = Problem(layer, net.batch, arch, objective, feed_of(inter, place, arch))
            keys.append(problem.key)
            if problem.key not in jobs and not layers.known(problem.key, objective):
                jobs[problem.key] = (problem, (objective,))
        progress = task.progress

        def solved(done: int, total: int) -> None:
            if progress is not None:
                progress("solving layers", done, total)

        layers.solve(jobs, solved)
        steps: list[Step] = []
        for inter, place, key in zip(singles, places, keys, strict=True):
            layer = net[place.layer]
            generic = layers.get(key, objective)
            if generic is None:
                raise no_scheme(layer, net.batch, arch)
            segment = SegmentScheme(inter.slots, {layer.name: place},
                                    {layer.name: scheme_in_segment(net, layer.name, generic)})
            steps.append((inter.layers, segment, evaluate_segment(segment, arch)))
        n = len(steps)
        extra = {"inter_layer_schemes": {"considered": n, "valid": n, "pareto": n, "solved": n},
                 "strategy": self.name, "hardware": arch.to_dict()}
        return from_steps(net, arch, steps, solver=layers.solver.name, objective=objective, scheduler=self.name,
                          seconds=time.perf_counter() - task.start, extra=extra)


__all__ = ["LayerwiseScheduler"]
