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
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: errors.append(f"fetched {r.url}") if not r.url.startswith("file:") else None)
        page.goto(page_path.as_uri())
        assert errors == []
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
