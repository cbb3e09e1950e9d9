"""Charts as inline SVG: a report opens anywhere, with no script or network access.

Each function returns one ``<svg>`` element as text. Every drawn value also
carries its number (a ``<title>`` tooltip and a ``data-value`` attribute), so
a reader can hover for it and a test can read it back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac")


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _text(x: float, y: float, text: str, anchor: str = "start", size: int = 11, extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" {extra}>'
            f"{escape(text)}</text>")


def stacked_bars(labels: Sequence[str], series: Mapping[str, Sequence[float]], unit: str, title: str,
                 chart_id: str) -> str:
    """One bar per label, stacked by series (e.g. energy per layer by component), with a legend."""
    n = len(labels)
    width = max(360, 80 + 26 * n + 150)
    height, top, bottom, left = 300, 30, 90, 60
    plot_h = height - top - bottom
    totals = [sum(values[i] for values in series.values()) for i in range(n)]
    peak = max(totals, default=0.0) or 1.0
    step = (width - left - 160) / max(n, 1)
    parts = [f'<svg id="{chart_id}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" role="img" aria-label="{escape(title)}">',
             _text(left, 16, title, size=13, extra='font-weight="bold"'),
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#333"/>',
             f'<line x1="{left}" y1="{top + plot_h}" x2="{left + step * n}" y2="{top + plot_h}" stroke="#333"/>',
             _text(left - 6, top + 4, f"{peak:.3g}", anchor="end", size=10),
             _text(left - 6, top + plot_h, "0", anchor="end", size=10),
             _text(12, top + plot_h / 2, unit, size=10, extra=f'transform="rotate(-90 12 {top + plot_h / 2:.0f})"')]
    for i, label in enumerate(labels):
        x = left + i * step + step * 0.15
        y = float(top + plot_h)
        for k, (name, values) in enumerate(series.items()):
            h = values[i] / peak * plot_h
            if h <= 0:
                continue
            y -= h
            parts.append(f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{step * 0.7:.1f}" height="{h:.1f}" '
                         f'fill="{colour(k)}" data-label="{escape(label)}" data-series="{escape(name)}" '
                         f'data-value="{values[i]:.6g}"><title>{escape(label)} {escape(name)}: '
                         f"{values[i]:.4g} {escape(unit)}</title></rect>")
        parts.append(_text(x + step * 0.35, top + plot_h + 12, label, anchor="end", size=10,
                           extra=f'transform="rotate(-45 {x + step * 0.35:.1f} {top + plot_h + 12})"'))
    for k, name in enumerate(series):
        ly = top + 14 * k
        lx = left + step * n + 20
        parts.append(f'<rect x="{lx:.1f}" y="{ly:.1f}" width="10" height="10" fill="{colour(k)}"/>')
        parts.append(_text(lx + 14, ly + 9, name, size=10))
    parts.append("</svg>")
    return "".join(parts)


def gantt(rows: Sequence[str], bars: Sequence[tuple[int, float, float, str, int]], total: float, title: str,
          chart_id: str) -> str:
    """A timeline: ``bars`` of (row, start, end, label, colour index) over ``total`` cycles."""
    width, left, row_h, top = 860, 130, 18, 30
    height = top + row_h * len(rows) + 30
    scale = (width - left - 20) / (total or 1.0)
    parts = [f'<svg id="{chart_id}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" role="img" aria-label="{escape(title)}">',
             _text(left, 16, title, size=13, extra='font-weight="bold"')]
    for r, name in enumerate(rows):
        parts.append(_text(left - 6, top + r * row_h + 12, name, anchor="end", size=10))
    for row, start, end, label, c in bars:
        x, w = left + start * scale, max((end - start) * scale, 1.0)
        parts.append(f'<rect class="span" x="{x:.1f}" y="{top + row * row_h + 2}" width="{w:.1f}" '
                     f'height="{row_h - 4}" fill="{colour(c)}" data-label="{escape(label)}" '
                     f'data-start="{start:.0f}" data-end="{end:.0f}"><title>{escape(label)}: cycles '
                     f"{start:,.0f} to {end:,.0f}</title></rect>")
    axis_y = top + row_h * len(rows) + 4
    parts.append(f'<line x1="{left}" y1="{axis_y}" x2="{width - 20}" y2="{axis_y}" stroke="#333"/>')
    parts.append(_text(left, axis_y + 14, "0", size=10))
    parts.append(_text(width - 20, axis_y + 14, f"{total:,.0f} cycles", anchor="end", size=10))
    parts.append("</svg>")
    return "".join(parts)


def heatmap(rows: Sequence[str], cols: Sequence[str], values: Sequence[Sequence[float | None]], row_name: str,
            col_name: str, unit: str, title: str, chart_id: str) -> str:
    """A grid of cells shaded from the lowest value (light) to the highest (dark),
    each cell also written as its ratio to the lowest; None: a blank cell (the point did not finish)."""
    cell_w, cell_h, left, top = 74, 30, 110, 52
    width = left + cell_w * len(cols) + 20
    height = top + cell_h * len(rows) + 40
    finished = [v for row in values for v in row if v is not None]
    low, high = (min(finished), max(finished)) if finished else (0.0, 0.0)
    parts = [f'<svg id="{chart_id}" class="chart heatmap" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" role="img" aria-label="{escape(title)}">',
             _text(8, 16, title, size=13, extra='font-weight="bold"'),
             _text(left + cell_w * len(cols) / 2, top - 22, col_name, anchor="middle", size=11),
             _text(8, top - 6, row_name, size=11)]
    for c, name in enumerate(cols):
        parts.append(_text(left + cell_w * c + cell_w / 2, top - 6, name, anchor="middle", size=10))
    for r, name in enumerate(rows):
        y = top + cell_h * r
        parts.append(_text(left - 6, y + cell_h / 2 + 4, name, anchor="end", size=10))
        for c, value in enumerate(values[r]):
            x = left + cell_w * c
            if value is None:
                parts.append(f'<rect class="cell blank" x="{x}" y="{y}" width="{cell_w - 2}" height="{cell_h - 2}" '
                             f'fill="#eee" data-row="{escape(name)}" data-col="{escape(cols[c])}"><title>'
                             f"{escape(name)}, {escape(cols[c])}: did not finish</title></rect>")
                parts.append(_text(x + cell_w / 2, y + cell_h / 2 + 4, "-", anchor="middle", size=10))
                continue
            t = (value - low) / (high - low) if high > low else 0.0
            shade = f"rgb({int(250 - 190 * t)},{int(240 - 170 * t)},{int(200 - 60 * t)})"
            parts.append(f'<rect class="cell" x="{x}" y="{y}" width="{cell_w - 2}" height="{cell_h - 2}" '
                         f'fill="{shade}" data-row="{escape(name)}" data-col="{escape(cols[c])}" '
                         f'data-value="{value:.9g}"><title>{escape(name)}, {escape(cols[c])}: {value:.4g} '
                         f"{escape(unit)}</title></rect>")
            parts.append(_text(x + cell_w / 2, y + cell_h / 2 + 4, f"{value / low:.2f}x" if low > 0 else "",
                               anchor="middle", size=10, extra=f'fill="{"#fff" if t > 0.5 else "#000"}"'))
    parts.append(_text(left, height - 10, f"each cell: {unit}, as a ratio to the lowest", size=10))
    parts.append("</svg>")
    return "".join(parts)


def scatter(points: Sequence[tuple[float, float, str]], line: Sequence[int], x_name: str, y_name: str, title: str,
            chart_id: str) -> str:
    """Points (x, y, label) on a log-x plane, those of ``line`` (indices) joined in order and marked."""
    import math

    width, height, left, top, bottom = 520, 320, 70, 30, 50
    plot_w, plot_h = width - left - 20, height - top - bottom
    xs = [math.log(max(x, 1e-300)) for x, _, _ in points]
    ys = [y for _, y, _ in points]
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y0, y1 = (min(ys), max(ys)) if ys else (0.0, 1.0)
    x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + abs(y0) * 0.1 + 1e-12)

    def at(i: int) -> tuple[float, float]:
        return (left + (xs[i] - x0) / (x1 - x0) * plot_w, top + plot_h - (ys[i] - y0) / (y1 - y0) * plot_h)

    parts = [f'<svg id="{chart_id}" class="chart scatter" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" role="img" aria-label="{escape(title)}">',
             _text(left, 16, title, size=13, extra='font-weight="bold"'),
             f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#333"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#333"/>',
             _text(left + plot_w / 2, height - 10, x_name + " (log scale)", anchor="middle", size=10),
             _text(12, top + plot_h / 2, y_name, size=10, extra=f'transform="rotate(-90 12 {top + plot_h / 2:.0f})"'),
             _text(left - 4, top + 4, f"{y1:.4g}", anchor="end", size=10),
             _text(left - 4, top + plot_h, f"{y0:.4g}", anchor="end", size=10)]
    if line:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (at(i) for i in line))
        parts.append(f'<polyline class="front" points="{path}" fill="none" stroke="{colour(2)}" stroke-width="1.5"/>')
    on_line = set(line)
    for i, (x, y, label) in enumerate(points):
        px, py = at(i)
        cls = "point front" if i in on_line else "point"
        parts.append(f'<circle class="{cls}" cx="{px:.1f}" cy="{py:.1f}" r="{4 if i in on_line else 3}" '
                     f'fill="{colour(2) if i in on_line else "#999"}" data-x="{x:.9g}" data-y="{y:.9g}">'
                     f"<title>{escape(label)}: {y:.4g}, {x:,.0f}</title></circle>")
    parts.append("</svg>")
    return "".join(parts)


Cell = tuple[int, int]


#: A layer's block of nodes as drawn: name, origin, shape, colour index, and a folded region's nodes (else empty).
Placed = tuple[str, tuple[int, int], tuple[int, int], int, Sequence[Cell]]


def placement(array: tuple[int, int], regions: Sequence[Placed], title: str, chart_id: str) -> str:
    """The node array with each layer's block of nodes: (name, origin, shape, colour index, nodes).

    A rectangle is one ``rect.region``; a folded region (given its ``nodes``
    on the array) is a ``g.region.folded``: its nodes filled piece by piece,
    one outline around them all, and a line along its zig-zag path from its
    first node to its last.
    """
    rows, cols = array
    cell = max(4, min(16, 200 // max(rows, cols)))
    width, height, top = max(cols * cell + 20, 160), rows * cell + 40, 28
    parts = [f'<svg id="{chart_id}" class="chart placement" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" role="img" aria-label="{escape(title)}">',
             _text(10, 16, title, size=12, extra='font-weight="bold"'),
             f'<rect x="10" y="{top}" width="{cols * cell}" height="{rows * cell}" fill="#f4f4f4" stroke="#999"/>']
    for name, (r0, c0), (h, w), c, given in regions:
        nodes = [(int(r), int(col)) for r, col in given]
        if not nodes:
            parts.append(f'<rect class="region" x="{10 + c0 * cell}" y="{top + r0 * cell}" width="{w * cell}" '
                         f'height="{h * cell}" fill="{colour(c)}" fill-opacity="0.75" stroke="#222" '
                         f'data-label="{escape(name)}"><title>{escape(name)}: {h}x{w} nodes at {r0},{c0}</title>'
                         "</rect>")
            continue
        fill = "".join(f"M{10 + x * cell} {top + y * cell}h{pw * cell}v{ph * cell}h{-pw * cell}z"
                       for y, x, ph, pw in _pieces(nodes))
        outline = "".join(f"M{10 + x0 * cell} {top + y0 * cell}L{10 + x1 * cell} {top + y1 * cell}"
                          for (y0, x0), (y1, x1) in _border(nodes))
        # the path through the nodes of its first row, in the order the layer's columns run
        first = [n for i, n in enumerate(nodes) if i % h == 0]
        trail = "".join(f"{'M' if i == 0 else 'L'}{10 + (x + 0.5) * cell:g} {top + (y + 0.5) * cell:g}"
                        for i, (y, x) in enumerate(first))
        parts.append(f'<g class="region folded" data-label="{escape(name)}" data-nodes="{len(nodes)}">'
                     f"<title>{escape(name)}: {len(nodes)} nodes, a stripe {h} high and {w} long folded across "
                     f"the array from {r0},{c0}</title>"
                     f'<path class="fill" d="{fill}" fill="{colour(c)}" fill-opacity="0.75" stroke="none"/>'
                     f'<path class="outline" d="{outline}" fill="none" stroke="#222"/>'
                     f'<path class="fold" d="{trail}" fill="none" stroke="#222" stroke-opacity="0.5" '
                     'stroke-dasharray="2 2"/></g>')
    parts.append("</svg>")
    return "".join(parts)


def _pieces(nodes: Sequence[Cell]) -> list[tuple[int, int, int, int]]:
    """The nodes as rectangles (row, column, rows, columns): runs of each row, merged down while they repeat."""
    runs: dict[int, list[tuple[int, int]]] = {}
    for r in sorted({r for r, _ in nodes}):
        columns = sorted(c for rr, c in nodes if rr == r)
        row_runs: list[tuple[int, int]] = []
        for c in columns:
            if row_runs and row_runs[-1][0] + row_runs[-1][1] == c:
                row_runs[-1] = (row_runs[-1][0], row_runs[-1][1] + 1)
            else:
                row_runs.append((c, 1))
        runs[r] = row_runs
    out: list[tuple[int, int, int, int]] = []
    open_: dict[tuple[int, int], int] = {}  # run -> index in out, while it continues down
    for r in sorted(runs):
        still = {}
        for run in runs[r]:
            i = open_.get(run)
            if i is not None and out[i][0] + out[i][2] == r:
                out[i] = (out[i][0], out[i][1], out[i][2] + 1, out[i][3])
            else:
                out.append((r, run[0], 1, run[1]))
                i = len(out) - 1
            still[run] = i
        open_ = still
    return out


def _border(nodes: Sequence[Cell]) -> list[tuple[Cell, Cell]]:
    """The unit edges (corner to corner, row then column) between a node of the set and one outside it."""
    inside = set(nodes)
    edges = []
    for r, c in sorted(inside):
        if (r - 1, c) not in inside:
            edges.append(((r, c), (r, c + 1)))
        if (r + 1, c) not in inside:
            edges.append(((r + 1, c), (r + 1, c + 1)))
        if (r, c - 1) not in inside:
            edges.append(((r, c), (r + 1, c)))
        if (r, c + 1) not in inside:
            edges.append(((r, c + 1), (r + 1, c + 1)))
    return edges


__all__ = ["PALETTE", "Placed", "colour", "gantt", "placement", "stacked_bars"]
