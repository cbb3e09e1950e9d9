"""The report in a real headless browser (Debian's Chromium, driven by
Playwright): it opens with no console error, draws its charts, and shows the
JSON's numbers. Skipped where no browser is installed, unless
KAPLA_REQUIRE_BROWSER is set (CI sets it and installs Chromium)."""

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from kapla.cli.main import app

REQUIRED = bool(os.environ.get("KAPLA_REQUIRE_BROWSER"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
try:
    from playwright.sync_api import sync_playwright
except ImportError:
    if REQUIRED:
        raise
    pytest.skip("Playwright is not installed", allow_module_level=True)
if CHROMIUM is None and not REQUIRED:
    pytest.skip("no Chromium installed", allow_module_level=True)


def test_alexnet_report_opens_draws_and_matches_its_json(tmp_path):
    page_path, json_path = tmp_path / "r.html", tmp_path / "r.json"
    result = CliRunner().invoke(app, ["schedule", "alexnet", "--jobs", "1", "--report", str(page_path), "--json",
                                      str(json_path)])
    assert result.exit_code == 0, result.output
    doc = json.loads(json_path.read_text())
    assert CHROMIUM is not None, "KAPLA_REQUIRE_BROWSER is set but no Chromium is installed"
    with sync_playwright() as p:
        browser, page = _opened(p, page_path)
        for chart in ("#energy-total", "#energy-layers", "#timeline"):
            box = page.locator(chart).bounding_box()
            assert box is not None and box["width"] > 100 and box["height"] > 100, chart
        assert page.locator("svg.placement").count() == len(doc["segment_details"])
        assert page.locator("#timeline rect.span").count() == len(doc["layers"])
        shown = page.locator("#total-energy").inner_text()
        assert shown == f"{doc['energy_j'] * 1e3:.3f} mJ"
        assert page.locator("#total-time").inner_text() == f"{doc['time_cycles']:,} cycles"
        rows = page.locator("table.layers tr")
        assert rows.count() == len(doc["layers"]) + 1
        first = rows.nth(1).locator("td")
        assert first.nth(0).inner_text() == doc["layers"][0]["name"]
        assert first.nth(3).inner_text() == f"{doc['layers'][0]['energy_j'] * 1e3:.3f}"
        browser.close()


def test_folded_regions_are_drawn_where_the_json_puts_them(tmp_path):
    """MLP-L on multinode_nndataflow runs on folded regions; each is drawn as one group covering its nodes."""
    page_path, json_path = tmp_path / "r.html", tmp_path / "r.json"
    result = CliRunner().invoke(app, ["schedule", "mlp_l", "--arch", "multinode_nndataflow", "--jobs", "1",
                                      "--report", str(page_path), "--json", str(json_path)])
    assert result.exit_code == 0, result.output
    doc = json.loads(json_path.read_text())
    folded = {lr["name"]: lr["region"]["nodes"] for lr in doc["layers"] if "nodes" in lr["region"]}
    stripe = {lr["name"]: lr["region"]["shape"][0] for lr in doc["layers"]}
    assert folded
    assert CHROMIUM is not None, "KAPLA_REQUIRE_BROWSER is set but no Chromium is installed"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_path.as_uri())
        assert errors == []
        chart = page.locator("#placement-0").bounding_box()
        cols = 16
        groups = page.locator("g.region.folded")
        assert groups.count() == len(folded)
        for i in range(groups.count()):
            group = groups.nth(i)
            nodes = folded[group.get_attribute("data-label")]
            assert int(group.get_attribute("data-nodes")) == len(nodes)
            box = group.locator("path.fill").bounding_box()
            assert chart is not None and box is not None
            # the fill spans exactly the rows and columns its nodes do, on a square grid
            span_r = max(r for r, _ in nodes) - min(r for r, _ in nodes) + 1
            span_c = max(c for _, c in nodes) - min(c for _, c in nodes) + 1
            assert box["height"] / box["width"] == pytest.approx(span_r / span_c, rel=0.02)
            assert box["width"] <= chart["width"] * span_c / cols + 1
            assert span_r > stripe[group.get_attribute("data-label")]  # it turns: more rows than its stripe
        browser.close()


def _opened(p, page_path):
    """Chromium with the page open, having logged no error and fetched nothing from outside."""
    browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: errors.append(f"fetched {r.url}") if not r.url.startswith("file:") else None)
    page.goto(page_path.as_uri())
    assert errors == []
    return browser, page


def test_a_sweep_report_shows_the_grid_as_a_heatmap_and_the_pareto_front(tmp_path):
    page_path, json_path = tmp_path / "x.html", tmp_path / "x.json"
    result = CliRunner().invoke(app, ["explore", "mlp_s", "--arch", "interstellar", "--batch", "2", "--jobs", "1",
                                      "--vary", "REGF.capacity=16B,64B", "--vary", "GBUF.capacity=32KiB..128KiB*2",
                                      "--report", str(page_path), "--json", str(json_path)])
    assert result.exit_code == 0, result.output
    doc = json.loads(json_path.read_text())
    assert CHROMIUM is not None, "KAPLA_REQUIRE_BROWSER is set but no Chromium is installed"
    with sync_playwright() as p:
        browser, page = _opened(p, page_path)
        for chart in ("#grid", "#pareto"):
            box = page.locator(chart).bounding_box()
            assert box is not None and box["width"] > 100 and box["height"] > 100, chart
        cells = page.locator("#grid rect.cell")
        assert cells.count() == 6
        # every cell is its point: the energy drawn is the JSON's
        for i in range(6):
            point = doc["points"][i]
            cell = cells.nth(i)
            assert cell.get_attribute("data-row") == doc["labels"]["REGF.capacity"][i // 3]
            assert cell.get_attribute("data-col") == doc["labels"]["GBUF.capacity"][i % 3]
            assert float(cell.get_attribute("data-value")) == pytest.approx(point["energy_j"] * 1e3, rel=1e-8)
        assert page.locator("#pareto circle.point").count() == 6
        assert page.locator("#pareto circle.front").count() == len(doc["pareto"]) >= 1
        assert page.locator("#best-energy").inner_text() == f"{doc['best']['energy_j'] * 1e3:.3f} mJ"
        assert page.locator("table.points tr").count() == 7
        browser.close()
