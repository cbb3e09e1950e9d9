"""Readable results: self-contained HTML reports with charts, from kapla's JSON results."""

from kapla.report.html import render

__all__ = ["render"]
