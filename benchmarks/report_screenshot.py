"""The README's picture of a report: `kapla schedule alexnet --report`, opened in headless Chromium.

Run: python benchmarks/report_screenshot.py [--out docs/report.png]
(needs `pip install -e ".[test]"` for Playwright and Debian's chromium package)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "report.png"))
    args = parser.parse_args()
    chromium = shutil.which("chromium") or sys.exit("error: install Debian's chromium package first")
    with tempfile.TemporaryDirectory() as tmp:
        page_path = Path(tmp) / "report.html"
        subprocess.run([sys.executable, "-m", "kapla.cli.main", "schedule", "alexnet", "--report", str(page_path)],
                       check=True, stdout=subprocess.DEVNULL)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1150, "height": 1250})
            page.goto(page_path.as_uri())
            page.screenshot(path=args.out)
            browser.close()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
