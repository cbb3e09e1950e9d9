"""PNG/SVG plots of results with matplotlib (``pip install kapla[plot]``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

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
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise KaplaError("--plot needs matplotlib: pip install 'kapla[plot]'") from None
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
    fig.tight_layout()
    try:
        fig.savefig(target, bbox_inches="tight")
    except OSError as exc:
        raise KaplaError(f"cannot write the plot to {path}: {exc.strerror}") from None
    finally:
        plt.close(fig)


def plot_schedule(doc: dict[str, Any], path: str | Path) -> None:
    """A schedule's energy per layer, stacked by component (mJ)."""
    layers = doc["layers"]
    parts = list(doc["breakdown"])
    mode = "training" if doc["training"] else "inference"
    stacked_bar_plot([lr["name"] for lr in layers],
                     {p: [lr["breakdown"].get(p, 0.0) * 1e3 for lr in layers] for p in parts}, "energy (mJ)",
                     f"{doc['network']} on {doc['arch']} ({mode}, batch {doc['batch']}): "
                     f"{doc['energy_j'] * 1e3:.3f} mJ", path)


__all__ = ["check_plot_target", "plot_schedule", "stacked_bar_plot"]
