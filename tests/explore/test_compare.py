"""``kapla.explore.compare``: every budgeted solver stops within the budget it is given."""

import kapla.explore.compare as cmp

BUDGET = 2.0


def test_each_solver_takes_no_more_than_its_budget():
    result = cmp.compare("alexnet", "multinode_4x4", ["exhaustive", "random", "ml"], budget=BUDGET,
                         options={"random": {"p": 0.5}}, jobs=2)
    statuses = {run.solver: run.status for run in result.runs}
    assert statuses["exhaustive"] == cmp.BUDGET and statuses["ml"] == cmp.BUDGET  # they need minutes here
    for run in result.runs:
        assert run.seconds <= BUDGET, f"{run.solver} took {run.seconds:.2f} s of a {BUDGET:g} s budget"
        assert (run.result is None) == (run.status != cmp.OK)


def test_one_job_keeps_the_budget_too():
    # a layer solve in progress is stopped, not waited for: one job solves in one worker
    result = cmp.compare("alexnet", "multinode_4x4", ["exhaustive", "ml"], budget=1.5, jobs=1)
    for run in result.runs:
        assert run.status == cmp.BUDGET and "ran out of its 1.5 s budget" in run.message
        assert run.seconds <= 1.5
