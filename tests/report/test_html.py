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
    with pytest.raises(KaplaError, match="not a kapla schedule, comparison or exploration result"):
        render({"format": "kapla-stats"})
    with pytest.raises(KaplaError):
        render(json.loads("[1, 2]"))


def test_a_folded_region_is_drawn_node_by_node(result):
    """A region given by its nodes (folded across the array) is one group: its nodes filled, one outline
    around them, its path; the layers table names it folded."""
    from kapla.dataflow.segment import FoldedRegion

    doc = json.loads(json.dumps(result))
    name = doc["layers"][0]["name"]
    region = FoldedRegion(0, 1, 4, 2, 5)  # a 1-high stripe of 5 nodes: 2 on row 0, 3 back along row 1
    doc["layers"][0]["region"] = {"origin": list(region.origin), "shape": list(region.shape),
                                  "nodes": [list(c) for c in region.cells()]}
    html = render(doc)
    page = parse(html)
    groups = [a for t, a in page.tags if t == "g" and a.get("class") == "region folded"]
    assert [(a["data-label"], a["data-nodes"]) for a in groups] == [(name, "5")]
    rects = [a for t, a in page.tags if t == "rect" and a.get("class") == "region"]
    assert name not in {a["data-label"] for a in rects}
    assert f"1x5 folded@{region.origin[0]},{region.origin[1]}" in html
    fill = next(a["d"] for t, a in page.tags if t == "path" and a.get("class") == "fill")
    assert fill.count("M") == 2  # one piece per row of the fold
    outline = next(a["d"] for t, a in page.tags if t == "path" and a.get("class") == "outline")
    assert outline.count("M") == 10  # the unit edges around 2 nodes over 3: the perimeter of the step shape
