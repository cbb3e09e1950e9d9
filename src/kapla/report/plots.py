"""PNG/SVG plots of results with matplotlib (``pip install kapla[plot]``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kapla.arch.describe import show_value
from kapla.errors import KaplaError


def check_plot_target(path: str | Path) -> Path:
    """``path`` as a plot's file: it must end in .png or .svg (KaplaError otherwise)."""
    target = Path(path)
    if target.suffix.lower() not in (".png", ".svg"):
        raise KaplaError(f"--plot {path}: the file must end in .png or .svg")
    return target


def stacked_bar_plot(labels: Sequence[str], series: Mapping[str, Sequence[float]], ylabel: str, title: str,
                     path: str | Path, notes: Mapping[int, str] | None = None) -> None:
    """Bars stacked by series, to a PNG or SVG file (by its suffix); ``notes`` writes text over some bars."""
    target = check_plot_target(path)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(3.5, 2.5 + 0.45 * len(labels)), 3.8))
    bottom = [0.0] * len(labels)
    for name, heights in series.items():
        ax.bar(labels, heights, bottom=bottom, label=name, width=0.6)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    for i, text in (notes or {}).items():
        ax.text(i, 0.05, text, ha="center", va="bottom", rotation=90)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    if len(labels) > 6:
        ax.tick_params(axis="x", labelrotation=60, labelsize="small")
    ax.legend(fontsize="small", ncols=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _save(fig, plt, target, path)


def plot_schedule(doc: dict[str, Any], path: str | Path) -> None:
    """A schedule's energy per layer, stacked by component (mJ)."""
    layers = doc["layers"]
    parts = list(doc["breakdown"])
    mode = "training" if doc["training"] else "inference"
    stacked_bar_plot([lr["name"] for lr in layers],
                     {p: [lr["breakdown"].get(p, 0.0) * 1e3 for lr in layers] for p in parts}, "energy (mJ)",
                     f"{doc['network']} on {doc['arch']} ({mode}, batch {doc['batch']}): "
                     f"{doc['energy_j'] * 1e3:.3f} mJ", path)


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise KaplaError("--plot needs matplotlib: pip install 'kapla[plot]'") from None
    return plt


def sweep_plot(doc: dict[str, Any], path: str | Path) -> None:
    """A hardware sweep (``kapla explore --json``): energy against its field (a
    line), or a heatmap over two fields, beside the Pareto front of energy
    against on-chip capacity; points that did not finish are left blank."""
    target = check_plot_target(path)
    plt = _pyplot()
    fields = list(doc["fields"])
    points = doc["points"]
    done = [p for p in points if p["status"] == "ok"]
    labels = doc.get("labels") or {f: [show_value(v) for v in doc["fields"][f]] for f in fields}
    if fields == ["dataflow"]:
        _dataflow_plot(doc, labels["dataflow"], target, plt)
        return
    # every point with the same on-chip capacity (a sweep of anything but sizes): no front to draw
    front_panel = len({p["onchip_bytes"] for p in done}) > 1
    panels = (2 if len(fields) <= 2 else 1) if front_panel else 1
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4.0), squeeze=False)
    title = f"{doc['network']} on {doc['arch']} variants (batch {doc['batch']})"
    if len(fields) == 1:
        ax = axes[0][0]
        name = fields[0]
        values = doc["fields"][name]
        energy = {show_value(p["vary"][name]): p["energy_j"] * 1e3 for p in done}
        ax.plot(range(len(values)), [energy.get(show_value(v), float("nan")) for v in values], marker="o")
        ax.set_xticks(range(len(values)), labels[name], rotation=45 if len(values) > 6 else 0)
        ax.set_xlabel(name)
        ax.set_ylabel("energy (mJ)")
    elif len(fields) == 2:
        ax = axes[0][0]
        (rows_name, rows_values), (cols_name, cols_values) = [(f, doc["fields"][f]) for f in fields]
        cell = {(show_value(p["vary"][rows_name]), show_value(p["vary"][cols_name])): p["energy_j"] * 1e3 for p in done}
        grid = [[cell.get((show_value(r), show_value(c)), float("nan")) for c in cols_values] for r in rows_values]
        image = ax.imshow(grid, cmap="viridis_r", aspect="auto")
        finished = [v for row in grid for v in row if v == v]
        least, most = (min(finished), max(finished)) if finished else (None, None)
        for r, row in enumerate(grid):
            for c, value in enumerate(row):
                # each cell's energy over the best point's; a blank cell did not finish
                text = f"{value / least:.2f}" if least and value == value else "-"
                dark = (least is not None and most is not None and value == value and most != least
                        and (value - least) / (most - least) > 0.5)
                ax.text(c, r, text, ha="center", va="center", fontsize="x-small", color="white" if dark else "black")
        ax.set_xticks(range(len(cols_values)), labels[cols_name], rotation=45)
        ax.set_yticks(range(len(rows_values)), labels[rows_name])
        ax.set_xlabel(cols_name)
        ax.set_ylabel(rows_name)
        fig.colorbar(image, ax=ax, label="energy (mJ)")
    if not front_panel:
        _save(fig, plt, target, path, title)
        return
    ax = axes[0][-1]
    front = [points[i] for i in doc["pareto"]]
    ax.scatter([p["onchip_bytes"] / 1024 for p in done], [p["energy_j"] * 1e3 for p in done], s=14,
               color="0.6", label="points")
    ax.plot([p["onchip_bytes"] / 1024 for p in front], [p["energy_j"] * 1e3 for p in front], marker="o",
            color="C3", label="Pareto front")
    ax.set_xscale("log")
    ax.set_xlabel("on-chip capacity (KiB)")
    ax.set_ylabel("energy (mJ)")
    ax.legend(fontsize="small")
    _save(fig, plt, target, path, title)


def _dataflow_plot(doc: dict[str, Any], names: list[str], target: Path, plt: Any) -> None:
    """Interstellar's Fig. 8/9 for one network: each dataflow's energy over the
    best (bars, best first) and its PE utilisation (dots, right axis)."""
    rows = [(name, p) for name, p in zip(names, doc["points"], strict=True) if p["status"] == "ok"]
    rows.sort(key=lambda r: r[1]["energy_j"])
    best = rows[0][1]["energy_j"] if rows else 1.0
    fig, ax = plt.subplots(figsize=(max(5.0, 1.5 + 0.38 * len(rows)), 4.0))
    xs = range(len(rows))
    ax.bar(xs, [p["energy_j"] / best for _, p in rows], color="C0", label="energy / best")
    ax.set_ylim(0, max([p["energy_j"] / best for _, p in rows] + [1.0]) * 1.15)
    ax.set_ylabel("energy / best")
    ax.set_xticks(list(xs), [n for n, _ in rows], rotation=60, fontsize="small")
    util = ax.twinx()
    util.plot(list(xs), [p["utilisation"] * 100 for _, p in rows], "o", color="C3", label="PE utilisation")
    util.set_ylim(0, 105)
    util.set_ylabel("PE utilisation (%)")
    handles = ax.get_legend_handles_labels()[0] + util.get_legend_handles_labels()[0]
    ax.legend(handles, ["energy / best", "PE utilisation"], fontsize="small", loc="lower right")
    _save(fig, plt, target, str(target), f"{doc['network']} on {doc['arch']}: dataflows (batch {doc['batch']})")


def _save(fig: Any, plt: Any, target: Path, path: str | Path, title: str | None = None) -> None:
    if title is not None:
        fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    try:
        fig.savefig(target, bbox_inches="tight")
    except OSError as exc:
        raise KaplaError(f"cannot write the plot to {path}: {exc.strerror}") from None
    finally:
        plt.close(fig)


__all__ = ["check_plot_target", "plot_schedule", "stacked_bar_plot", "sweep_plot"]
