"""Figures (PNG + PDF) from run metrics (metrics.jsonl) and evaluation summaries.

Series are keyed ``(base, run)``: every run keeps its colour (``gc2po.reporting.names``) in
every figure, named as ``names`` (run label -> display name, from the plan) says, and with
several base models each base gets its own line style. Curves show the mean over seeds with a
95% band (Student t over seeds; none from a single seed), bars the mean with 95% error bars,
both clipped to what the quantity can be (a gradient norm or a length is never below 0, an
accuracy stays in [0, 100]); legends sit outside the axes so they cover no data.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from gc2po.reporting.names import RunNames, benchmark_name, method_colour, method_name  # noqa: E402
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


def _label(base: str, run: str, bases: list[str], names: RunNames) -> str:
    return method_name(run, names) if len(bases) == 1 else f"{base}: {method_name(run, names)}"


def _bases(series) -> list[str]:
    return list(dict.fromkeys(key[0] for key in series))  # keys start with the base model


def legend_overlaps_axes(fig, ax) -> bool:
    """Whether the drawn legend's box intersects the axes' box (where the data is)."""
    legend = ax.get_legend()
    if legend is None:
        return False
    fig.canvas.draw()
    return legend.get_window_extent().overlaps(ax.get_window_extent())


def _save(fig, ax, out_png: str | Path):
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


def _band(ax, xs, per_x_values, *, colour, style, label, bounds):
    """Mean line with a 95% band over seeds, kept within the quantity's ``bounds``."""
    stats = np.array([interval_within(v, bounds) for v in per_x_values])  # [X, 3]
    ax.plot(xs, stats[:, 0], marker="o", markersize=3, color=colour, linestyle=style, label=label)
    if np.isfinite(stats[:, 1]).any():
        ax.fill_between(xs, stats[:, 1], stats[:, 2], color=colour, alpha=0.2, linewidth=0)


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
    bases, plotted = _bases(runs), {}
    for (base, run), paths in runs.items():
        by_step = defaultdict(list)
        for path in paths:
            for record in read_metrics(path):
                if key in record and "loss" in record:
                    by_step[record["step"]].append(float(record[key]))
        if by_step:
            steps = sorted(by_step)
            _band(
                ax,
                steps,
                [by_step[s] for s in steps],
                colour=method_colour(run),
                bounds=bounds,
                style=LINE_STYLES[bases.index(base) % len(LINE_STYLES)],
                label=_label(base, run, bases, names),
            )
            plotted[f"{base}/{run}"] = len(steps)
    if not plotted:
        ax.text(0.5, 0.5, f"no run logged {key}", ha="center", va="center", transform=ax.transAxes)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    _save(fig, ax, out_png)
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
    _save(fig, ax, out_png)
    return {run: list(s) for run, s in stats.items()}


def _summary_values(paths: list[Path], field: str) -> list[float]:
    return [float(json.loads(Path(p).read_text())[field]) for p in paths]


def budget_curves(summaries: Series, out_png: str | Path, title: str, names: RunNames = None):
    """pass@1 against token budget, mean over seeds with a 95% band."""
    fig, ax = plt.subplots(figsize=(5, 3.2))
    bases, budgets = _bases(summaries), []
    for (base, run), paths in summaries.items():
        curves = [
            c for c in (json.loads(Path(p).read_text()).get("budget_curve", []) for p in paths) if c
        ]
        if not curves:
            continue
        budgets = [row["budget"] for row in curves[0]]
        per_budget = [[100 * c[i]["accuracy"] for c in curves] for i in range(len(budgets))]
        _band(
            ax,
            budgets,
            per_budget,
            colour=method_colour(run),
            bounds=PERCENT,
            style=LINE_STYLES[bases.index(base) % len(LINE_STYLES)],
            label=_label(base, run, bases, names),
        )
    if budgets:
        ax.set_xscale("log", base=2)
        ax.set_xticks(budgets, [str(b) for b in budgets])
        ax.minorticks_off()
    ax.set_xlabel("token budget")
    ax.set_ylabel("pass@1 (%)")
    ax.set_title(title)
    _save(fig, ax, out_png)


def token_usage(
    summaries: dict[tuple[str, str, str], list[Path]],
    benchmarks: list[str],
    out_png: str | Path,
    names: RunNames = None,
):
    """Mean completion tokens per (run, benchmark): grouped bars, benchmarks in the tables'
    order, 95% error bars over seeds."""
    series = list(dict.fromkeys((base, run) for base, run, _ in summaries))
    bases = _bases(series)
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
            label=_label(base, run, bases, names),
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
    _save(fig, ax, out_png)


def lambda_ablation(
    points: dict[tuple, dict[float, list[Path]]], benchmark: str, out_png: str | Path
):
    """pass@1 on ``benchmark`` against lambda_exp and lambda_cf: ``{(base, form, "lambda_exp"):
    {0.0: [summaries per seed], ...}}`` with form ``gc2po`` (the paper's) or ``gc2po_add`` (the
    corrected one; its points are squares); mean over seeds with 95% error bars."""
    fig, ax = plt.subplots(figsize=(5, 3.2))
    bases = _bases(points)
    ablation = {"lambda_exp": "no_sexp", "lambda_cf": "no_rcf"}  # lambda = 0: the ablation's colour
    forms = list(dict.fromkeys(form for _, form, _ in points))
    for (base, form, key), series in points.items():
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
    ax.set_xlabel("lambda (0 = the ablation; the paper's value = the method's default)")
    ax.set_ylabel(f"pass@1 on {benchmark_name(benchmark)} (%)")
    ax.set_title("lambda_exp and lambda_cf")
    _save(fig, ax, out_png)


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
    bases, plotted = _bases(curves), {}
    frames = {key: pd.concat([pd.read_csv(p) for p in paths]) for key, paths in curves.items()}
    for ax, benchmark in zip(axes[0], benchmarks):
        for (base, run), frame in frames.items():
            rows = frame[frame.benchmark == benchmark]
            steps = sorted(rows.step.unique())
            _band(
                ax,
                steps,
                [100 * rows[rows.step == s].accuracy.to_numpy() for s in steps],
                colour=method_colour(run),
                style=LINE_STYLES[bases.index(base) % len(LINE_STYLES)],
                bounds=PERCENT,
                label=_label(base, run, bases, names) if ax is axes[0][-1] else None,
            )
            plotted[run] = len(steps)
        ax.set_title(benchmark_name(benchmark), fontsize=9)
        ax.set_xlabel("training step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0][0].set_ylabel("pass@1 (%)")
    fig.suptitle(
        "Learning curves: step 0 is the base model; bands are 95% CIs over seeds", fontsize=9
    )
    _save(fig, axes[0][-1], out_png)
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
    bases, plotted, first = _bases(runs), {}, {key: [] for key in LENGTH_KEYS}
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
                _band(
                    ax,
                    steps,
                    [by_step[s] for s in steps],
                    colour=method_colour(run),
                    style=LINE_STYLES[bases.index(base) % len(LINE_STYLES)],
                    bounds=NON_NEGATIVE,
                    label=_label(base, run, bases, names) if ax is axes[0][-1] else None,
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
    _save(fig, axes[0][-1], out_png)
    return {"plotted": plotted, "base": {k: float(np.mean(v)) for k, v in first.items() if v}}
