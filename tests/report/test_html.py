"""The HTML report: self-contained, and its numbers are the JSON result's."""

import json
import re
from html.parser import HTMLParser

import pytest

from kapla.errors import KaplaError
from kapla.report import render


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


@pytest.fixture(scope="module")
def result():
    import kapla

    return kapla.schedule("examples/tiny_cnn.yaml", "multinode_4x4", batch=4, jobs=1).to_dict()


def parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    return parser


def test_the_page_needs_nothing_from_outside(result):
    page = parse(render(result))
    assert not [t for t, a in page.tags if t in ("script", "link", "img", "iframe")]
    assert not [a for _, a in page.tags for k, v in a.items() if k in ("src", "href") and v]


def test_the_numbers_are_the_results(result):
    page = parse(render(result))
    by_id = {a["id"]: a for _, a in page.tags if "id" in a}
    assert float(by_id["total-energy"]["data-value"]) == pytest.approx(result["energy_j"], rel=1e-8)
    assert int(by_id["total-time"]["data-value"]) == result["time_cycles"]
    bars = [a for t, a in page.tags if t == "rect" and a.get("class") == "bar"]
    for layer in result["layers"]:
        drawn = sum(float(a["data-value"]) for a in bars if a["data-label"] == layer["name"])
        assert drawn == pytest.approx(layer["energy_j"] * 1e3, rel=1e-5)
    spans = [a for t, a in page.tags if t == "rect" and a.get("class") == "span"]
    assert len(spans) == len(result["layers"])
    assert max(float(a["data-end"]) for a in spans) == pytest.approx(result["time_cycles"], abs=1)
    regions = [a for t, a in page.tags if t == "rect" and a.get("class") == "region"]
    assert sorted(a["data-label"] for a in regions) == sorted(lr["name"] for lr in result["layers"])


def test_a_comparison_page_shows_each_run(result):
    import kapla.explore.compare

    doc = kapla.explore.compare.compare("mlp_s", "edge", ["exhaustive", "kapla"], batch=1, jobs=1).to_dict()
    page = render(doc)
    values = [float(v) for v in re.findall(r'class="energy" data-value="([^"]+)"', page)]
    assert values == pytest.approx([doc["results"][s]["energy_j"] for s in ("exhaustive", "kapla")], rel=1e-8)
    assert 'id="energy-solvers"' in page


def test_something_else_is_one_error():
    with pytest.raises(KaplaError, match="not a kapla schedule or comparison result"):
        render({"format": "kapla-stats"})
    with pytest.raises(KaplaError):
        render(json.loads("[1, 2]"))
