"""Figures (PNG + PDF) of training runs, from their metrics (metrics.jsonl) and the evaluations
of their checkpoints: a metric per step, the step-time cost relative to a reference method,
pass@1 against step (learning curves), completion length and episodes per step.

Series are keyed ``(base, run)`` and drawn as ``gc2po.reporting.figures`` describes; what both
modules share is ``gc2po.reporting.plotting``.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from gc2po.reporting.names import RunNames, benchmark_name, method_colour, method_name  # noqa: E402
from gc2po.reporting.plotting import (  # noqa: E402
    LINE_STYLES,
    NON_NEGATIVE,
    PERCENT,
    UNBOUNDED,
    Bounds,
    Series,
    draw_band,
    interval_within,
    read_metrics,
    run_label,
    save_figure,
    series_bases,
)


def metric_over_steps(
    runs: Series,
    key: str,
    ylabel: str,
    out_png: str | Path,
    title: str,
    bounds: Bounds = UNBOUNDED,
    names: RunNames = None,
) -> dict[str, int]:
    """``key`` per training step, mean over seeds with a 95% band within ``bounds`` (e.g.
    ``NON_NEGATIVE`` for a gradient norm); returns the steps plotted per run."""
    fig, ax = plt.subplots(figsize=(5, 3.2))
    bases, plotted = series_bases(runs), {}
    for (base, run), paths in runs.items():
        by_step = defaultdict(list)
        for path in paths:
            for record in read_metrics(path):
                if key in record and "loss" in record:
                    by_step[record["step"]].append(float(record[key]))
        if by_step:
            steps = sorted(by_step)
            draw_band(
                ax,
                steps,
                [by_step[s] for s in steps],
                colour=method_colour(run),
                bounds=bounds,
                style=LINE_STYLES[bases.index(base) % len(LINE_STYLES)],
                label=run_label(base, run, bases, names),
            )
            plotted[f"{base}/{run}"] = len(steps)
    if not plotted:
        ax.text(0.5, 0.5, f"no run logged {key}", ha="center", va="center", transform=ax.transAxes)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    save_figure(fig, ax, out_png)
    return plotted


def training_cost(
    runs: dict[str, list[Path]],
    reference: str,
    out_png: str | Path,
    title: str,
    names: RunNames = None,
) -> dict[str, list]:
    """Mean step time of each run relative to ``reference`` (one base model; seeds paired: the
    ratio is taken per seed), as bars with 95% error bars over seeds."""
    if reference not in runs:
        raise ValueError(f"training cost: reference method {reference!r} has no runs")

    def mean_step_time(path):
        times = [r["step_time"] for r in read_metrics(path) if "step_time" in r and "loss" in r]
        return float(np.mean(times)) if times else float("nan")

    reference_times = [mean_step_time(p) for p in runs[reference]]
    ratios = {
        run: [mean_step_time(p) / ref for p, ref in zip(paths, reference_times)]
        for run, paths in runs.items()
    }
    stats = {run: interval_within(r, NON_NEGATIVE) for run, r in ratios.items()}
    fig, ax = plt.subplots(figsize=(5, 3.2))
    means = [stats[n][0] for n in runs]
    errors = np.array([[stats[n][0] - stats[n][1], stats[n][2] - stats[n][0]] for n in runs]).T
    ax.bar(
        range(len(runs)),
        means,
        color=[method_colour(n) for n in runs],
        yerr=None if np.isnan(errors).all() else np.nan_to_num(errors),
        capsize=3,
    )
    ax.set_xticks(
        range(len(runs)), [method_name(n, names) for n in runs], rotation=45, ha="right", fontsize=7
    )
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.set_ylabel(f"step time / {method_name(reference, names)}")
    ax.set_title(title)
    save_figure(fig, ax, out_png)
    return {run: list(s) for run, s in stats.items()}


def learning_curves(
    curves: Series, benchmarks: list[str], out_png: str | Path, names: RunNames = None
) -> dict[str, int]:
    """Accuracy (%) against training step, one panel per benchmark, mean over seeds with a 95%
    band; ``curves`` holds one learning-curve CSV (``gc2po.evaluation.learning_curve``) per seed.
    Returns the number of steps plotted per run."""
    import pandas as pd

    fig, axes = plt.subplots(
        1, len(benchmarks), figsize=(3.2 * len(benchmarks), 3.0), squeeze=False
    )
    bases, plotted = series_bases(curves), {}
    frames = {key: pd.concat([pd.read_csv(p) for p in paths]) for key, paths in curves.items()}
    for ax, benchmark in zip(axes[0], benchmarks):
        for (base, run), frame in frames.items():
            rows = frame[frame.benchmark == benchmark]
            steps = sorted(rows.step.unique())
            draw_band(
                ax,
                steps,
                [100 * rows[rows.step == s].accuracy.to_numpy() for s in steps],
                colour=method_colour(run),
                style=LINE_STYLES[bases.index(base) % len(LINE_STYLES)],
                bounds=PERCENT,
                label=run_label(base, run, bases, names) if ax is axes[0][-1] else None,
            )
            plotted[run] = len(steps)
        ax.set_title(benchmark_name(benchmark), fontsize=9)
        ax.set_xlabel("training step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0][0].set_ylabel("pass@1 (%)")
    fig.suptitle(
        "Learning curves: step 0 is the base model; bands are 95% CIs over seeds", fontsize=9
    )
    save_figure(fig, axes[0][-1], out_png)
    return plotted


LENGTH_KEYS = {
    "completions/mean_length": "completion length (tokens)",
    "episodes/mean_count": "episodes per completion",
}


def length_and_episodes(
    runs: Series, out_png: str | Path, names: RunNames = None
) -> dict[str, dict]:
    """Completion length and episodes per completion over training (metrics.jsonl keys
    ``LENGTH_KEYS``), one panel each, mean over seeds with a 95% band. The base model is the
    mean of every run's first step, whose completions were sampled before any update (a dashed
    grey line). Returns, per run, the steps plotted per key and the base values."""
    fig, axes = plt.subplots(1, len(LENGTH_KEYS), figsize=(9, 3.2), squeeze=False)
    fig.subplots_adjust(wspace=0.35)  # room for the second panel's y label
    bases, plotted, first = series_bases(runs), {}, {key: [] for key in LENGTH_KEYS}
    for ax, (key, ylabel) in zip(axes[0], LENGTH_KEYS.items()):
        every_step = set()
        for (base, run), paths in runs.items():
            by_step = defaultdict(list)
            for path in paths:
                records = [r for r in read_metrics(path) if key in r and "loss" in r]
                for record in records:
                    by_step[record["step"]].append(float(record[key]))
                first[key] += [float(r[key]) for r in records[:1]]
            if by_step:
                steps = sorted(by_step)
                every_step.update(steps)
                draw_band(
                    ax,
                    steps,
                    [by_step[s] for s in steps],
                    colour=method_colour(run),
                    style=LINE_STYLES[bases.index(base) % len(LINE_STYLES)],
                    bounds=NON_NEGATIVE,
                    label=run_label(base, run, bases, names) if ax is axes[0][-1] else None,
                )
                plotted.setdefault(f"{base}/{run}", {})[key] = len(steps)
        if first[key]:
            label = f"{method_name('base')} (step-1 samples)" if ax is axes[0][-1] else None
            ax.axhline(
                float(np.mean(first[key])),
                color=method_colour("base"),
                linestyle="--",
                linewidth=1,
                label=label,
            )
        else:
            ax.text(
                0.5, 0.5, f"no run logged {key}", ha="center", va="center", transform=ax.transAxes
            )
        if 0 < len(every_step) <= 10:  # a short run: one tick per step
            ax.set_xticks(sorted(every_step))
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("training step")
        ax.set_ylabel(ylabel)
    fig.suptitle("Completion length and episodes per completion over training", fontsize=9)
    save_figure(fig, axes[0][-1], out_png)
    return {"plotted": plotted, "base": {k: float(np.mean(v)) for k, v in first.items() if v}}
