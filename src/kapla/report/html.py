"""A self-contained HTML report of a kapla JSON result (a schedule, a comparison or a hardware sweep).

The report is built from the documented JSON (``docs/result-schema.json``),
not from live objects, so ``kapla report RESULT.json`` renders any result
written before, and the page's numbers are the JSON's. Everything is inline
(CSS and SVG charts, no script, no fonts or files fetched), so the page opens
offline and can be mailed as one file.
"""

from __future__ import annotations

from html import escape
from typing import Any

from kapla.errors import KaplaError
from kapla.report.svg import gantt, heatmap, placement, scatter, stacked_bars

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1100px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
th { background: #f0f0f0; } td.name, th.name { text-align: left; }
.summary td { text-align: left; } .bad { color: #b00; font-weight: bold; }
.placements { display: flex; flex-wrap: wrap; gap: 12px; }
pre { font-size: 0.8em; background: #f8f8f8; padding: 0.5em; overflow-x: auto; }
.note { color: #555; font-size: 0.85em; }
"""


def render(doc: dict[str, Any]) -> str:
    """The HTML page of a JSON result; KaplaError for a document that is not one."""
    kind = doc.get("format") if isinstance(doc, dict) else None
    if kind == "kapla-schedule":
        return _page(f"{doc['network']} on {doc['arch']}", _schedule(doc))
    if kind == "kapla-comparison":
        return _page(f"{doc['network']} on {doc['arch']}: solvers compared", _comparison(doc))
    if kind == "kapla-exploration":
        return _page(f"{doc['network']} on {doc['arch']} variants", _exploration(doc))
    raise KaplaError("not a kapla schedule, comparison or exploration result (its 'format' is "
                     f"{kind!r}; kapla schedule, compare and explore --json write them)")


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>{body}</body></html>\n")


def _rows(cells: list[list[str]], head: list[str], cls: str = "") -> str:
    def row(tag: str, values: list[str]) -> str:
        name = ' class="name"'
        return "<tr>" + "".join(f"<{tag}{name if i == 0 else ''}>{v}</{tag}>" for i, v in enumerate(values)) + "</tr>"
    return (f'<table class="{cls}">' + row("th", head) + "".join(row("td", c) for c in cells) + "</table>")


def _mj(joules: float) -> str:
    return f"{joules * 1e3:.3f}"


def _schedule(doc: dict[str, Any]) -> str:
    hw = doc.get("hardware") or {}
    clock = hw.get("clock_mhz")
    mode = "training" if doc["training"] else "inference"
    summary = [
        ["network", escape(doc["network"])], ["hardware", escape(doc["arch"])],
        ["batch, mode", f"{doc['batch']}, {mode}"], ["solver, objective", f"{doc['solver']}, {doc['objective']}"],
        ["energy", f'<span id="total-energy" data-value="{doc["energy_j"]:.9g}">{_mj(doc["energy_j"])} mJ</span>'],
        ["time", f'<span id="total-time" data-value="{doc["time_cycles"]}">{doc["time_cycles"]:,} cycles</span>'
                 + (f" ({doc['time_cycles'] / clock / 1e3:.3f} ms at {clock:g} MHz)" if clock else "")],
        ["valid", "yes" if doc["valid"] else '<span class="bad">NO</span>'],
        ["complete", "yes" if doc.get("complete", True) else
         f'<span class="bad">no: {escape(doc.get("stopped", {}).get("reason", ""))}</span>'],
        ["solver time", f"{doc['solver_seconds']:.2f} s"],
    ]
    if doc.get("pinned"):
        summary.append(["pinned weights", f"loaded once before the runs: {_mj(doc['pinned_load_j'])} mJ "
                                          "(not in the energy)"])
    out = ['<h2>Summary</h2><table class="summary">'
           + "".join(f'<tr><th class="name">{k}</th><td>{v}</td></tr>' for k, v in summary) + "</table>"]

    layers = doc["layers"]
    parts = list(doc["breakdown"])
    out.append("<h2>Energy by component</h2>")
    out.append(stacked_bars(["total"], {p: [doc["breakdown"][p] * 1e3] for p in parts}, "mJ",
                            "the whole network", "energy-total"))
    out.append(stacked_bars([lr["name"] for lr in layers],
                            {p: [lr["breakdown"].get(p, 0.0) * 1e3 for lr in layers] for p in parts}, "mJ",
                            "per layer", "energy-layers"))

    out.append("<h2>Timeline</h2>")
    out.append(_timeline(doc))
    out.append('<p class="note">Segments run one after another. In a spatial segment every slot runs for the '
               "whole segment on its own nodes (pipelined); in a temporal or single-layer one the layers run one "
               "after another on the whole array, each drawn in proportion to its own cycles.</p>")

    out.append("<h2>Placement on the node array</h2><div class=\"placements\">")
    array = _node_array(hw)
    by_name = {lr["name"]: lr for lr in layers}
    for i, seg in enumerate(doc.get("segment_details", [])):
        regions = [(name, tuple(by_name[name]["region"]["origin"]), tuple(by_name[name]["region"]["shape"]), k,
                    [tuple(n) for n in by_name[name]["region"].get("nodes", ())])
                   for k, slot in enumerate(seg["slots"]) for name in slot if name in by_name]
        out.append(placement(array, regions, f"segment {i} ({seg['layout']})", f"placement-{i}"))
    out.append("</div>")

    out.append("<h2>Layers</h2>")
    order = [lvl.get("name") for lvl in hw.get("levels", [])]  # from the registers out
    levels = sorted({level for lr in layers for level in lr["accesses"]},
                    key=lambda lv: order.index(lv) if lv in order else len(order))
    segment_of = {name: i for i, seg in enumerate(doc["segments"]) for name in seg}
    cells = []
    for lr in layers:
        region = lr["region"]
        cells.append([escape(lr["name"]), str(segment_of.get(lr["name"], "")),
                      f"{region['shape'][0]}x{region['shape'][1]}{' folded' if region.get('nodes') else ''}"
                      f"@{region['origin'][0]},{region['origin'][1]}",
                      _mj(lr["energy_j"]), f"{lr['time_cycles']:,}", f"{lr['macs']:,}",
                      f"{lr['pe_utilisation']:.0%}", f"{lr.get('node_utilisation', 0.0):.0%}",
                      *(f"{lr['accesses'].get(level, 0):,.0f}" for level in levels),
                      f"{lr['noc_hops']:,.0f}", "yes" if lr["valid"] else '<span class="bad">NO</span>'])
    out.append(_rows(cells, ["layer", "segment", "nodes", "energy (mJ)", "cycles", "MACs", "PE util", "node share",
                             *(f"{level} words" for level in levels), "NoC word-hops", "valid"], "layers"))

    out.append("<h2>Directives</h2>")
    for lr in layers:
        out.append(f"<details><summary>{escape(lr['name'])}</summary><pre>{escape(lr['directives'])}</pre>"
                   "</details>")
    return "".join(out)


def _node_array(hw: dict[str, Any]) -> tuple[int, int]:
    """The node array: the outermost level's array when units sit under it too (else one node)."""
    arrays = [lvl["array"] for lvl in hw.get("levels", [])
              if isinstance(lvl, dict) and lvl.get("array") and lvl["array"][0] * lvl["array"][1] > 1]
    if len(arrays) >= 2:
        return int(arrays[-1][0]), int(arrays[-1][1])
    return 1, 1


def _timeline(doc: dict[str, Any]) -> str:
    layers = {lr["name"]: lr for lr in doc["layers"]}
    order = [lr["name"] for lr in doc["layers"]]
    row = {name: i for i, name in enumerate(order)}
    bars = []
    start = 0.0
    for i, seg in enumerate(doc.get("segment_details", [])):
        length = float(seg["time_cycles"])
        if seg["layout"] == "spatial":
            for name in seg["layers"]:
                bars.append((row[name], start, start + length, f"{name} on {_where(layers[name])} (segment {i})", i))
        else:
            own = [max(float(layers[n]["time_cycles"]), 1.0) for n in seg["layers"]]
            t = start
            for name, part in zip(seg["layers"], own, strict=True):
                end = t + length * part / sum(own)
                bars.append((row[name], t, end, f"{name} on {_where(layers[name])} (segment {i})", i))
                t = end
        start += length
    return gantt(order, bars, start, "which layers run when", "timeline")


def _where(layer: dict[str, Any]) -> str:
    (r0, c0), (rows, cols) = layer["region"]["origin"], layer["region"]["shape"]
    if layer["region"].get("nodes"):
        return f"{rows * cols} nodes folded from {r0},{c0}"
    return f"{rows}x{cols} nodes at {r0},{c0}"


def _comparison(doc: dict[str, Any]) -> str:
    results = doc["results"]
    ref = doc.get("normalised_to")
    ref_energy = results[ref]["energy_j"] if ref else None
    cells = []
    for name, run in results.items():
        ok = run["status"] == "ok" and run["energy_j"] is not None
        ratio = f"{run['energy_j'] / ref_energy:.3f}" if ok and ref_energy else "-"
        cells.append([escape(name), escape(run["status"]),
                      f'<span class="energy" data-value="{run["energy_j"]:.9g}">{_mj(run["energy_j"])}</span>'
                      if ok else "-", ratio, f"{run['time_cycles']:,}" if ok else "-",
                      f"{run['solver_seconds']:.2f}"])
    mode = "training" if doc["training"] else "inference"
    out = [f"<p>{escape(mode)}, batch {doc['batch']}, objective {escape(doc['objective'])}; energies normalised "
           f"to {escape(ref or 'none')} (a run that ran out of its budget is never shown as a result).</p>",
           "<h2>Runs</h2>",
           _rows(cells, ["solver", "status", "energy (mJ)", f"x {escape(ref or '-')}", "cycles", "solver s"],
                 "runs")]
    done = {name: run for name, run in results.items() if run["status"] == "ok" and run["breakdown"]}
    if done and ref_energy:
        parts = list(next(iter(done.values()))["breakdown"])
        out.append("<h2>Energy by component, normalised</h2>")
        out.append(stacked_bars(list(done), {p: [run["breakdown"].get(p, 0.0) / ref_energy for run in done.values()]
                                             for p in parts}, f"energy / {ref}", "solvers side by side",
                                "energy-solvers"))
    return "".join(out)


def _exploration(doc: dict[str, Any]) -> str:
    fields = list(doc["fields"])
    labels = doc["labels"]
    points = doc["points"]
    done = [p for p in points if p["status"] == "ok"]
    best = doc["best"]
    front = set(doc["pareto"])

    def shown(point: dict[str, Any], name: str) -> str:
        return labels[name][doc["fields"][name].index(point["vary"][name])]

    def where(point: dict[str, Any]) -> str:
        return ", ".join(f"{name}={shown(point, name)}" for name in fields)

    mode = "training" if doc["training"] else "inference"
    out = [f"<p>{escape(mode)}, batch {doc['batch']}, solver {escape(doc['solver'])}, objective "
           f"{escape(doc['objective'])}; {len(points)} points, {len(done)} scheduled.</p>"]
    if best is not None:
        out.append(f'<p>Best: <span id="best-point">{escape(where(best))}</span>, '
                   f'<span id="best-energy">{_mj(best["energy_j"])} mJ</span>, {best["time_cycles"]:,} cycles.</p>')
    if len(fields) == 2 and done:
        rows_name, cols_name = fields
        cell = {(shown(p, rows_name), shown(p, cols_name)): p["energy_j"] * 1e3 for p in done}
        grid = [[cell.get((r, c)) for c in labels[cols_name]] for r in labels[rows_name]]
        out += ["<h2>Energy over the grid</h2>",
                heatmap(labels[rows_name], labels[cols_name], grid, rows_name, cols_name, "mJ",
                        f"{doc['network']}: energy (mJ)", "grid")]
    elif len(fields) == 1 and done:
        name = fields[0]
        energy = {shown(p, name): p["energy_j"] / best["energy_j"] for p in done} if best else {}
        out += ["<h2>Energy over the field</h2>",
                stacked_bars(labels[name], {"energy": [energy.get(v, 0.0) for v in labels[name]]},
                             "x best", f"energy over {name}, to the best point", "grid")]
    if done:
        order = [i for i, p in enumerate(points) if p["status"] == "ok"]
        out += ["<h2>Pareto front: energy against on-chip capacity</h2>",
                scatter([(points[i]["onchip_bytes"], points[i]["energy_j"] * 1e3, where(points[i])) for i in order],
                        [order.index(i) for i in doc["pareto"]], "on-chip bytes", "energy (mJ)",
                        "every finished point; the front joined", "pareto")]
    cells = []
    for i, p in enumerate(points):
        ok = p["status"] == "ok"
        cells.append([escape(where(p)), escape(p["status"]) + (" *" if i in front else ""),
                      _mj(p["energy_j"]) if ok else "-", f"{p['time_cycles']:,}" if ok else "-",
                      f"{p['utilisation']:.1%}" if ok and p.get("utilisation") is not None else "-",
                      f"{p['onchip_bytes']:,}", escape(p.get("message") or "")])
    out += ["<h2>Every point</h2><p class=\"note\">* on the Pareto front</p>",
            _rows(cells, ["point", "status", "energy (mJ)", "cycles", "PE utilisation", "on-chip bytes", "note"],
                  "points")]
    return "".join(out)


__all__ = ["render"]
