"""Figures (PNG + PDF) of evaluation summaries: pass@1 against the token budget, tokens per
benchmark, pass@1 across a lambda sweep; the figures of training runs (metrics.jsonl) are
``gc2po.reporting.training_figures``, what both share ``gc2po.reporting.plotting``.

Series are keyed ``(base, run)``: every run keeps its colour (``gc2po.reporting.names``) in
every figure, named as ``names`` (run label -> display name, from the plan) says, and with
several base models each base gets its own line style. Curves show the mean over seeds with a
95% band (Student t over seeds; none from a single seed), bars the mean with 95% error bars,
both clipped to what the quantity can be (a gradient norm or a length is never below 0, an
accuracy stays in [0, 100]); legends sit outside the axes so they cover no data.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from gc2po.reporting.names import RunNames, benchmark_name, method_colour, method_name  # noqa: E402
from gc2po.reporting.plotting import (  # noqa: E402
    LINE_STYLES,
    NON_NEGATIVE,
    PERCENT,
    Series,
    draw_band,
    interval_within,
    run_label,
    save_figure,
    series_bases,
)


def _summary_values(paths: list[Path], field: str) -> list[float]:
    return [float(json.loads(Path(p).read_text())[field]) for p in paths]


def budget_curves(summaries: Series, out_png: str | Path, title: str, names: RunNames = None):
    """pass@1 against token budget, mean over seeds with a 95% band."""
    fig, ax = plt.subplots(figsize=(5, 3.2))
    bases, budgets = series_bases(summaries), []
    for (base, run), paths in summaries.items():
        curves = [
            c for c in (json.loads(Path(p).read_text()).get("budget_curve", []) for p in paths) if c
        ]
        if not curves:
            continue
        budgets = [row["budget"] for row in curves[0]]
        per_budget = [[100 * c[i]["accuracy"] for c in curves] for i in range(len(budgets))]
        draw_band(
            ax,
            budgets,
            per_budget,
            colour=method_colour(run),
            bounds=PERCENT,
            style=LINE_STYLES[bases.index(base) % len(LINE_STYLES)],
            label=run_label(base, run, bases, names),
        )
    if budgets:
        ax.set_xscale("log", base=2)
        ax.set_xticks(budgets, [str(b) for b in budgets])
        ax.minorticks_off()
    ax.set_xlabel("token budget")
    ax.set_ylabel("pass@1 (%)")
    ax.set_title(title)
    save_figure(fig, ax, out_png)


def token_usage(
    summaries: dict[tuple[str, str, str], list[Path]],
    benchmarks: list[str],
    out_png: str | Path,
    names: RunNames = None,
):
    """Mean completion tokens per (run, benchmark): grouped bars, benchmarks in the tables'
    order, 95% error bars over seeds."""
    series = list(dict.fromkeys((base, run) for base, run, _ in summaries))
    bases = series_bases(series)
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    width = 0.8 / max(1, len(series))
    for i, (base, run) in enumerate(series):
        tokens = [
            _summary_values(summaries.get((base, run, b), []), "mean_tokens") for b in benchmarks
        ]
        stats = np.array([interval_within(values, NON_NEGATIVE) for values in tokens])
        errors = np.vstack([stats[:, 0] - stats[:, 1], stats[:, 2] - stats[:, 0]])
        ax.bar(
            np.arange(len(benchmarks)) + i * width,
            stats[:, 0],
            width,
            color=method_colour(run),
            hatch="//" if bases.index(base) else None,
            label=run_label(base, run, bases, names),
            yerr=None if np.isnan(errors).all() else np.nan_to_num(errors),
            capsize=2,
            error_kw={"linewidth": 0.8},
        )
    ax.set_xticks(
        np.arange(len(benchmarks)) + 0.4 - width / 2,
        [benchmark_name(b) for b in benchmarks],
        rotation=20,
        ha="right",
        fontsize=7,
    )
    ax.set_ylabel("mean completion tokens")
    ax.set_title("Token usage")
    save_figure(fig, ax, out_png)


def lambda_ablation(
    points: dict[tuple, dict[float, list[Path]]], benchmark: str, out_png: str | Path
):
    """pass@1 on ``benchmark`` against lambda_exp and lambda_cf: ``{(base, form, "lambda_exp"):
    {0.0: [summaries per seed], ...}}`` with form ``gc2po`` (the paper's) or ``gc2po_add`` (the
    corrected one; its points are squares); mean over seeds with 95% error bars."""
    fig, ax = plt.subplots(figsize=(5, 3.2))
    bases = series_bases(points)
    ablation = {"lambda_exp": "no_sexp", "lambda_cf": "no_rcf"}  # lambda = 0: the ablation's colour
    forms = list(dict.fromkeys(form for _, form, _ in points))
    for (base, form, key), series in points.items():
        if not series:  # a config without the form's sweep or its ablation runs
            continue
        xs = sorted(series)
        percents = [[100 * v for v in _summary_values(series[x], "pass@1")] for x in xs]
        stats = np.array([interval_within(values, PERCENT) for values in percents])
        errors = np.vstack([stats[:, 0] - stats[:, 1], stats[:, 2] - stats[:, 0]])
        label = key if len(forms) == 1 else f"{method_name(form)}: {key}"
        ax.errorbar(
            xs,
            stats[:, 0],
            yerr=None if np.isnan(errors).all() else np.nan_to_num(errors),
            marker="o" if form == "gc2po" else "s",
            capsize=3,
            color=method_colour(f"{form}_{ablation[key]}"),
            linestyle=LINE_STYLES[bases.index(base) % len(LINE_STYLES)],
            label=label if len(bases) == 1 else f"{base}: {label}",
        )
    if not any(points.values()):
        ax.text(
            0.5,
            0.5,
            "no lambda sweep or ablation run in this config",
            ha="center",
            va="center",
            transform=ax.transAxes,
            fontsize=8,
        )
    ax.set_xlabel("lambda (0 = the ablation; the paper's value = the method's default)")
    ax.set_ylabel(f"pass@1 on {benchmark_name(benchmark)} (%)")
    ax.set_title("lambda_exp and lambda_cf")
    save_figure(fig, ax, out_png)
