import json

import pytest

from kapla.dataflow.examples import kapla_example, row_stationary_example
from kapla.dataflow.serialize import scheme_from_dict, scheme_to_dict
from kapla.errors import SpecError


@pytest.mark.parametrize("which", [0, 1, 2])
def test_schemes_round_trip_through_json(which):
    net, conv, dw = kapla_example()
    scheme = (row_stationary_example(), conv, dw)[which]
    layers = {layer.name: layer for layer in net} | {scheme.layer.name: scheme.layer}
    data = json.loads(json.dumps(scheme_to_dict(scheme)))
    assert scheme_from_dict(data, layers) == scheme
    assert data["directives"].startswith(f"layer {scheme.layer.name} batch=")


def test_bad_scheme_data():
    net, conv, _ = kapla_example()
    data = scheme_to_dict(conv)
    with pytest.raises(SpecError, match="missing or unknown 'nope'"):
        scheme_from_dict(dict(data, layer="nope"), {layer.name: layer for layer in net})
    data["levels"][0]["updates"][0] = ["K", "many"]
    with pytest.raises(SpecError, match="scheme data for layer 'conv'"):
        scheme_from_dict(data, {layer.name: layer for layer in net})
