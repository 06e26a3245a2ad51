"""What every figure shares (``gc2po.reporting.figures``, ``gc2po.reporting.training_figures``):
the bounds a quantity's seed band is clipped to, the mean-and-band line, labels and line styles
of ``(base, run)`` series, and saving (PNG + PDF) with the legend outside the axes.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from gc2po.reporting.names import RunNames, method_name  # noqa: E402
from gc2po.reporting.stats import seed_interval  # noqa: E402

LINE_STYLES = ["-", "--", ":", "-."]
# what a quantity can be: its seed band is clipped to it (a Student t interval over few seeds of a
# gradient norm or a length can reach below 0)
Bounds = tuple[float | None, float | None]  # (lowest, highest) value of a quantity; None: none
NON_NEGATIVE = (0.0, None)
PERCENT = (0.0, 100.0)
UNBOUNDED = (None, None)
Series = dict[tuple[str, str], list[Path]]  # (base, run) -> one file per seed


def read_metrics(path: str | Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def run_label(base: str, run: str, bases: list[str], names: RunNames) -> str:
    return method_name(run, names) if len(bases) == 1 else f"{base}: {method_name(run, names)}"


def series_bases(series) -> list[str]:
    return list(dict.fromkeys(key[0] for key in series))  # keys start with the base model


def legend_overlaps_axes(fig, ax) -> bool:
    """Whether the drawn legend's box intersects the axes' box (where the data is)."""
    legend = ax.get_legend()
    if legend is None:
        return False
    fig.canvas.draw()
    return legend.get_window_extent().overlaps(ax.get_window_extent())


def save_figure(fig, ax, out_png: str | Path):
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False)
        if legend_overlaps_axes(fig, ax):
            raise RuntimeError(f"{out_png}: the legend would cover the plot")
    out_png = Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=150, bbox_inches="tight")
    fig.savefig(out_png.with_suffix(".pdf"), bbox_inches="tight")
    plt.close(fig)


def interval_within(values, bounds: Bounds) -> tuple[float, float, float]:
    """``seed_interval`` (mean, low, high) with low and high clipped to ``bounds`` (None: no
    bound); NaN (no interval) stays NaN."""
    mean, *edges = seed_interval(values)
    edges = np.asarray(edges, dtype=float)
    if bounds[0] is not None:
        edges = np.maximum(edges, bounds[0])
    if bounds[1] is not None:
        edges = np.minimum(edges, bounds[1])
    return mean, float(edges[0]), float(edges[1])


def draw_band(ax, xs, per_x_values, *, colour, style, label, bounds):
    """Mean line with a 95% band over seeds, kept within the quantity's ``bounds``."""
    stats = np.array([interval_within(v, bounds) for v in per_x_values])  # [X, 3]
    ax.plot(xs, stats[:, 0], marker="o", markersize=3, color=colour, linestyle=style, label=label)
    if np.isfinite(stats[:, 1]).any():
        ax.fill_between(xs, stats[:, 1], stats[:, 2], color=colour, alpha=0.2, linewidth=0)
