"""The estimates of grouped segments scaled by what the grouped segments solved showed."""

from statistics import median

import pytest

from kapla.arch import load_arch
from kapla.dataflow.segment import Region
from kapla.scheduling.run import run_parts
from kapla.search.layer.kapla.solver import KaplaIntraSolver
from kapla.search.network.tangram import scheduler
from kapla.search.network.tangram.groups_calibration import GroupsCalibration
from kapla.search.network.tangram.scheduler import kapla_dp
from kapla.space.network.inter import InterScheme
from kapla.workload.zoo import get_network


def _scheme(name: str, groups: int) -> InterScheme:
    return InterScheme((name,), ((name,),), (Region((0, 0), (1, 1)),), groups)


def test_only_grouped_valid_segments_with_an_estimate_are_learned_from():
    calibration = GroupsCalibration()
    calibration.learn(_scheme("a", 1), (1.0, 1.0), [(5.0, 5.0)])  # ungrouped: the estimate sees it whole
    calibration.learn(_scheme("b", 2), (1.0, 1.0), [])  # invalid once solved
    calibration.learn(_scheme("c", 2), (0.0, 1.0), [(5.0, 5.0)])  # no estimate to compare with
    assert calibration.factors() == {}


def test_the_factors_are_per_number_of_groups_the_medians_of_the_best_variants():
    calibration = GroupsCalibration()
    calibration.learn(_scheme("a", 2), (2.0, 10.0), [(3.0, 30.0), (2.5, 40.0)])  # best energy 2.5, best time 30
    calibration.learn(_scheme("b", 2), (1.0, 10.0), [(1.5, 11.0)])
    calibration.learn(_scheme("c", 2), (1.0, 10.0), [(1.0, 12.0)])
    calibration.learn(_scheme("d", 4), (1.0, 1.0), [(2.0, 3.0)])
    factors = calibration.factors()
    assert factors == {2: (median([1.25, 1.5, 1.0]), median([3.0, 1.1, 1.2])), 4: (2.0, 3.0)}


def test_scalings_are_made_from_the_first_estimate_and_never_compound():
    calibration = GroupsCalibration()
    grouped, alone = _scheme("a", 2), _scheme("b", 1)
    first = (2.0, 8.0)
    once = calibration.scaled(grouped, first, {2: (1.5, 2.0)})
    assert once == (3.0, 16.0)
    # scaled again from what it now shows, it is still its first estimate that is scaled
    assert calibration.scaled(grouped, once, {2: (1.25, 1.0)}) == (2.5, 8.0)
    assert calibration.estimate_of(grouped, once) == first
    # a number of groups not seen solved keeps its estimate
    assert calibration.scaled(alone, first, {2: (1.5, 2.0)}) == first
    assert calibration.estimate_of(alone, first) == first


def test_the_dp_ranks_grouped_estimates_scaled_by_the_median_of_those_solved(monkeypatch):
    # The options each DP run sees: after a round, an unsolved grouped scheme's cost
    # is its first estimate times the median solved-to-estimated ratio of the grouped
    # schemes of as many groups solved so far, worked out here from the options alone.
    seen: list[dict[int, list]] = []
    top = scheduler._top_chains

    def spy(order, options, k, rank, slack=None):
        seen.append({j: list(entries) for j, entries in options.items()})
        return top(order, options, k, rank, slack)

    monkeypatch.setattr(scheduler, "_top_chains", spy)
    net, arch = get_network("alexnet", 16), load_arch("multinode").with_node_region(4, 4)
    result = run_parts(net, arch, kapla_dp(), KaplaIntraSolver(), jobs=1)
    assert result.valid
    ranks = len(scheduler.ALL_OBJECTIVES)
    rounds = [seen[r] for r in range(0, len(seen), ranks)]
    first = {step[0]: cost for entries in rounds[0].values() for _, step, cost in entries if step[1] is None}
    checked = 0
    ratios: dict[int, tuple[list[float], list[float]]] = {}
    for before, after in zip(rounds, rounds[1:], strict=False):
        unsolved_before = {step[0] for entries in before.values() for _, step, _ in entries if step[1] is None}
        solved_after: dict = {}
        for entries in after.values():
            for _, step, cost in entries:
                if step[1] is not None and step[0] in unsolved_before:
                    solved_after.setdefault(step[0], []).append(cost)
        for inter, costs in solved_after.items():
            if inter.groups > 1:
                seen_ratios = ratios.setdefault(inter.groups, ([], []))
                seen_ratios[0].append(min(c[0] for c in costs) / first[inter][0])
                seen_ratios[1].append(min(c[1] for c in costs) / first[inter][1])
        for entries in after.values():
            for _, step, cost in entries:
                if step[1] is None and step[0].groups in ratios:
                    energy, time = ratios[step[0].groups]
                    want = (first[step[0]][0] * median(energy), first[step[0]][1] * median(time))
                    assert cost == pytest.approx(want, rel=1e-12)
                    checked += 1
                elif step[1] is None:
                    assert cost == first[step[0]]
    assert checked > 0, "no grouped scheme was solved and another left: the case does not test the calibration"



def test_a_search_with_no_grouped_segment_is_the_same_as_without_the_calibration(monkeypatch):
    # at a batch of one no segment is grouped: the calibration must leave the search exactly as it was
    net, arch = get_network("mobilenet", 1), load_arch("multinode").with_node_region(4, 4)
    calibrated = run_parts(net, arch, kapla_dp(), KaplaIntraSolver(), jobs=1)
    learned: list = []
    learn = GroupsCalibration.learn

    def spy(self, inter, estimate, solved):
        learned.append(inter.groups)
        return learn(self, inter, estimate, solved)

    monkeypatch.setattr(GroupsCalibration, "learn", spy)
    monkeypatch.setattr(scheduler, "_calibrate", lambda options, grouped: None)
    plain = run_parts(net, arch, kapla_dp(), KaplaIntraSolver(), jobs=1)
    assert learned and set(learned) == {1}  # segments were solved, none of them grouped
    assert calibrated.energy_j == plain.energy_j and calibrated.time == plain.time
    assert [lr.scheme for lr in calibrated.layers] == [lr.scheme for lr in plain.layers]
    assert calibrated.segments == plain.segments
