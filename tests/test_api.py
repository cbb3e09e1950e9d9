"""The Python API validates as the command line does."""

import inspect

import pytest

import kapla


@pytest.mark.parametrize("kwargs, message", [
    ({"batch": 0}, r"batch must be a positive integer \(got 0\)"),
    ({"jobs": 0}, r"jobs must be a whole number of at least 1 \(got 0\)"),
    ({"solver": "exhaustive", "time_budget": -1}, "option 'time_budget' must be a positive number of seconds"),
    ({"time_budget": 5}, "solver 'kapla' takes no time budget"),
    ({"objective": "speed"}, "unknown objective 'speed'"),
])
def test_bad_arguments_are_kapla_errors(kwargs, message):
    with pytest.raises(kapla.KaplaError, match=message):
        kapla.schedule("mlp_s", **kwargs)


def test_an_unknown_layer_is_a_kapla_error_naming_the_layers():
    result = kapla.schedule("mlp_s", "edge", batch=1, jobs=1)
    with pytest.raises(kapla.KaplaError, match=r"no layer 'nope' in the schedule of 'mlp_s' \(layers: fc1, fc2, fc3\)"):
        result.layer("nope")
    with pytest.raises(KeyError):  # still what a lookup raises
        result.layer("nope")


def test_help_shows_the_real_signature():
    params = inspect.signature(kapla.schedule).parameters
    assert {"network", "arch", "batch", "solver", "objective", "jobs", "store"} <= set(params)
