"""Ctrl-C during KAPLA's network search: once each layer alone is solved, the
search returns the best schedule of what it solved, marked as interrupted;
before that there is no whole schedule, and the interrupt goes on.

The interrupt is raised where a real Ctrl-C lands, in the layer service's
wait for its solves, after it has made some of the round's solves: on a run
alone (AlexNet on ``edge``) and on the runs with and without pinned weights
stepped side by side (the small CNN example)."""

from pathlib import Path

import pytest

from kapla.api import schedule
from kapla.scheduling.layers import LayerService

ROOT = Path(__file__).resolve().parents[4]
CASES = {"alone": ("alexnet", "edge"), "side by side": (str(ROOT / "examples" / "tiny_cnn.yaml"), "edge")}


def _interrupted_at(monkeypatch, call: int, share: float):
    """Make the layer service's ``call``-th request solve ``share`` of its jobs, then raise Ctrl-C."""
    solve = LayerService.solve
    calls = [0]

    def solving(self, jobs, *args, **kwargs):
        calls[0] += 1
        if calls[0] != call:
            return solve(self, jobs, *args, **kwargs)
        keys = list(jobs)[:int(len(jobs) * share)]
        solve(self, {key: jobs[key] for key in keys}, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(LayerService, "solve", solving)
    return calls


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_interrupted_search_returns_the_best_of_what_it_solved(case, monkeypatch):
    net, arch = CASES[case]
    whole = schedule(net, arch, batch=1, jobs=1)
    assert whole.stopped is None
    results = []
    for share in (0.0, 0.5):  # at the first round's start, then halfway through the second
        with monkeypatch.context() as patch:
            calls = _interrupted_at(patch, 2 if share == 0.0 else 3, share)
            result = schedule(net, arch, batch=1, jobs=1)
        assert calls[0] == (2 if share == 0.0 else 3)  # the interrupt came, and no request after it
        assert result.stopped is not None and result.stopped.by == "interrupt"
        assert result.stopped.reason.startswith("interrupted; the best schedule of the")
        assert result.valid
        assert sorted(lr.name for lr in result.layers) == sorted(lr.name for lr in whole.layers)
        results.append(result)
    # more solved, never worse; the search that went on to the end, never worse still
    layerwise, halfway = results
    assert whole.energy_j <= halfway.energy_j <= layerwise.energy_j


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_interrupt_before_each_layer_alone_is_solved_goes_on(case, monkeypatch):
    net, arch = CASES[case]
    _interrupted_at(monkeypatch, 1, 0.5)
    with pytest.raises(KeyboardInterrupt):
        schedule(net, arch, batch=1, jobs=1)
