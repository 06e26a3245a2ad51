"""Figures (PNG + PDF) from run metrics (metrics.jsonl) and evaluation summaries."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def read_metrics(path: str | Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _save(fig, out_png: str | Path):
    out_png = Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out_png, dpi=150)
    fig.savefig(out_png.with_suffix(".pdf"))
    plt.close(fig)


def metric_over_steps(runs: dict[str, list[Path]], key: str, ylabel: str, out_png: str | Path, title: str):
    """Mean over seeds of ``key`` per step, one line per method (e.g. grad norm, sampling ratio)."""
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for method, paths in sorted(runs.items()):
        by_step = defaultdict(list)
        for path in paths:
            for record in read_metrics(path):
                if key in record and "loss" in record:
                    by_step[record["step"]].append(float(record[key]))
        if by_step:
            steps = sorted(by_step)
            ax.plot(steps, [np.mean(by_step[s]) for s in steps], marker="o", markersize=3, label=method)
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7)
    _save(fig, out_png)


def training_cost(runs: dict[str, list[Path]], reference: str, out_png: str | Path) -> dict[str, float]:
    """Mean step time of each method normalised to ``reference`` (GRPO = 1x)."""
    mean_time = {}
    for method, paths in runs.items():
        times = [r["step_time"] for p in paths for r in read_metrics(p) if "step_time" in r and "loss" in r]
        mean_time[method] = float(np.mean(times)) if times else float("nan")
    if reference not in mean_time:
        raise ValueError(f"training cost: reference method {reference!r} has no runs")
    ratios = {m: t / mean_time[reference] for m, t in mean_time.items()}
    fig, ax = plt.subplots(figsize=(5, 3.2))
    names = sorted(ratios)
    ax.bar(names, [ratios[n] for n in names], color="tab:blue")
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.set_ylabel(f"step time / {reference}")
    ax.set_title("Training cost normalised to " + reference)
    ax.tick_params(axis="x", rotation=45, labelsize=7)
    _save(fig, out_png)
    return ratios


def budget_curves(summaries: dict[str, list[Path]], out_png: str | Path, title: str):
    """Accuracy vs token budget (mean over seeds), one line per method."""
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for method, paths in sorted(summaries.items()):
        curves = [json.loads(Path(p).read_text()).get("budget_curve", []) for p in paths]
        curves = [c for c in curves if c]
        if not curves:
            continue
        budgets = [row["budget"] for row in curves[0]]
        acc = np.mean([[row["accuracy"] for row in c] for c in curves], axis=0)
        ax.plot(budgets, 100 * acc, marker="o", markersize=3, label=method)
    ax.set_xlabel("token budget")
    ax.set_ylabel("pass@1 (%)")
    ax.set_title(title)
    ax.legend(fontsize=7)
    _save(fig, out_png)


def token_usage(summaries: dict[tuple[str, str], list[Path]], out_png: str | Path):
    """Mean completion tokens per (method, benchmark) as grouped bars."""
    methods = sorted({m for m, _ in summaries})
    benchmarks = sorted({b for _, b in summaries})
    fig, ax = plt.subplots(figsize=(6, 3.2))
    width = 0.8 / max(1, len(methods))
    for i, method in enumerate(methods):
        values = []
        for bench in benchmarks:
            paths = summaries.get((method, bench), [])
            values.append(np.mean([json.loads(Path(p).read_text())["mean_tokens"] for p in paths]) if paths else 0)
        ax.bar(np.arange(len(benchmarks)) + i * width, values, width, label=method)
    ax.set_xticks(np.arange(len(benchmarks)) + 0.4 - width / 2, benchmarks, rotation=30, fontsize=7)
    ax.set_ylabel("mean completion tokens")
    ax.set_title("Token usage")
    ax.legend(fontsize=6)
    _save(fig, out_png)


def lambda_ablation(values: dict[str, dict[float, float]], out_png: str | Path):
    """pass@1 against lambda_exp and lambda_cf sweeps ({"lambda_exp": {0.0: acc, ...}, ...})."""
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for name, series in sorted(values.items()):
        xs = sorted(series)
        ax.plot(xs, [100 * series[x] for x in xs], marker="o", label=name)
    ax.set_xlabel("lambda")
    ax.set_ylabel("pass@1 (%)")
    ax.set_title("lambda_exp and lambda_cf ablations")
    ax.legend(fontsize=7)
    _save(fig, out_png)
