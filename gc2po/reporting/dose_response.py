"""Dose-response: the mechanism measures (``gc2po.reporting.mechanism``) against a numeric setting
that a config sweeps for one method (``report.dose_response``: e.g. ``lambda_cf`` of ``gc2po``,
``cf_signal_rho`` of the oracle control), as a table and a figure. Each point is the mean over
seeds with its 95% t-interval over seeds; the base model is the reference line; ``markers``
(``{label: value}``, e.g. a signal's audited rho) are drawn as vertical lines on the axis.
"""

from __future__ import annotations

import math
import numbers
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from gc2po.reporting.mechanism import (  # noqa: E402
    Values,
    cell_text,
    column_name,
    percent_interval,
)
from gc2po.reporting.names import (  # noqa: E402
    BASE_COLOUR,
    BASE_NAME,
    RunNames,
    method_colour,
    method_name,
)
from gc2po.reporting.plotting import LINE_STYLES, save_figure  # noqa: E402
from gc2po.testbed.mechanism import Measure  # noqa: E402

MARKER_COLOURS = ["#000000", "#e6550d", "#31a354", "#756bb1"]
COLUMNS = ["block", "run", "value", "split", "measure", "mean", "ci_low", "ci_high", "seeds"]


def swept_runs(runs: dict[str, dict], method: str, key: str) -> dict[str, float]:
    """Run label -> its value of ``key``, for the runs of ``method`` whose own settings set
    ``key`` (the sweep runs; ``runs``: label -> ``{"method", "trainer"}``), by value. A
    non-numeric value fails naming the run."""
    points = {}
    for label, run in runs.items():
        value = (run.get("trainer") or {}).get(key)
        if run["method"] != method or value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"dose response: run {label!r} sets {key} to {value!r}, not a number")
        points[label] = float(value)
    return dict(sorted(points.items(), key=lambda item: item[1]))


def dose_rows(values: Values, points: dict[str, float], measures: list[Measure]) -> pd.DataFrame:
    """One row per (block, run, measure): the base model (value NaN) and every swept run that
    ``values`` holds, with its mean and t-interval over seeds (%)."""
    rows = []
    for block in dict.fromkeys(sorted(block for block, _ in values)):
        runs = {"base": math.nan, **points}
        for run, value in runs.items():
            mine = values.get((block, run))
            if mine is None:
                continue
            for measure in measures:
                seeds = mine.get(measure.key, {})
                mean, low, high = percent_interval(list(seeds.values()), share=True)
                rows.append(
                    {
                        "block": block,
                        "run": run,
                        "value": value,
                        "split": measure.split,
                        "measure": measure.name,
                        "mean": mean,
                        "ci_low": low,
                        "ci_high": high,
                        "seeds": ",".join(map(str, sorted(seeds))),
                    }
                )
    return pd.DataFrame(rows, columns=COLUMNS)


def to_markdown(
    rows: pd.DataFrame,
    measures: list[Measure],
    method: str,
    key: str,
    markers: dict[str, float],
    names: RunNames = None,
) -> str:
    header = ["Base model", key, "Run"] + [column_name(m) for m in measures]
    lines = [
        f"### Dose response: {method_name(method, names)} against {key}",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for (block, run), cells in rows.groupby(["block", "run"], sort=False):
        by_measure = {(r["split"], r["measure"]): r for r in cells.to_dict("records")}
        value = cells["value"].iloc[0]
        texts = [cell_text(by_measure[(m.split, m.name)]) for m in measures]
        shown = "" if math.isnan(value) else f"{value:g}"
        lines.append(
            f"| {block} | {shown} | {method_name(run, names)} | " + " | ".join(texts) + " |"
        )
    marked = ", ".join(f"{label} at {value:g}" for label, value in markers.items())
    lines += [
        "",
        "Cells: mean over seeds (%) with its 95% t-interval over seeds (Student t, S - 1 degrees "
        "of freedom, clipped to [0, 100]). The measures are those of the mechanism table "
        "(tables/mechanism.md)." + (f" Marked on the axis: {marked}." if marked else ""),
        "",
    ]
    return "\n".join(lines)


def figure(
    rows: pd.DataFrame,
    measures: list[Measure],
    method: str,
    key: str,
    markers: dict[str, float],
    out_png: str | Path,
    names: RunNames = None,
):
    """One panel per measure: the mean with 95% error bars against ``key``, the base model's
    mean as a dashed line, each marker as a vertical line."""
    fig, axes = plt.subplots(1, len(measures), figsize=(3.0 * len(measures), 3.0), squeeze=False)
    blocks = list(dict.fromkeys(rows["block"]))
    for ax, measure in zip(axes[0], measures):
        mine = rows[(rows["split"] == measure.split) & (rows["measure"] == measure.name)]
        for i, block in enumerate(blocks):
            part = mine[mine["block"] == block]
            swept, base = part[part["run"] != "base"], part[part["run"] == "base"]
            name = method_name(method, names)
            label = name if len(blocks) == 1 else f"{block}: {name}"
            ax.errorbar(
                swept["value"],
                swept["mean"],
                yerr=[
                    (swept["mean"] - swept["ci_low"]).fillna(0),
                    (swept["ci_high"] - swept["mean"]).fillna(0),
                ],
                marker="o",
                capsize=3,
                color=method_colour(method),
                linestyle=LINE_STYLES[i % len(LINE_STYLES)],
                label=label,
            )
            if not base.empty and math.isfinite(base["mean"].iloc[0]):
                ax.axhline(
                    base["mean"].iloc[0],
                    color=BASE_COLOUR,
                    linestyle="--",
                    linewidth=1,
                    label=BASE_NAME if len(blocks) == 1 else f"{block}: {BASE_NAME}",
                )
        for j, (text, value) in enumerate(markers.items()):
            ax.axvline(
                value,
                color=MARKER_COLOURS[j % len(MARKER_COLOURS)],
                linestyle=":",
                label=f"{text} ({value:g})",
            )
        ax.set_title(column_name(measure), fontsize=8)
        ax.set_xlabel(key)
        ax.set_ylabel("%")
    save_figure(fig, axes[0][-1], out_png)


def write_dose_response(
    values: Values,
    runs: dict[str, dict],
    measures: list[Measure],
    *,
    method: str,
    key: str,
    markers: dict[str, float] | None = None,
    md: str | Path,
    csv: str | Path,
    png: str | Path,
    names: RunNames = None,
) -> pd.DataFrame:
    """The dose-response table (Markdown, CSV) and figure of ``method`` against ``key``."""
    points = swept_runs(runs, method, key)
    if not points:
        raise ValueError(
            f"dose response: no run of {method!r} sets {key!r} (a sweep of the config)"
        )
    rows = dose_rows(values, points, measures)
    markers = dict(markers or {})
    Path(md).parent.mkdir(parents=True, exist_ok=True)
    Path(md).write_text(to_markdown(rows, measures, method, key, markers, names))
    rows.to_csv(csv, index=False, float_format="%.4f")
    figure(rows, measures, method, key, markers, png, names)
    return rows
