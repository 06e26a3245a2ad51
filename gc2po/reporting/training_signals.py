"""What the additive bonus did in training, from the runs' metrics (``metrics.jsonl``): how often
the std floor bound (``advantages/floor_binds``: the share of a batch's groups whose signal std
the floor replaced, so the bonus was smaller than lambda_cf says) and how often the bonus turned
a token's advantage against its completion's outcome (``advantages/sign_flip_frac``).

Per (base, run) that logs them: the mean over seeds of each seed's mean over training steps,
with its 95% t-interval over seeds, and the same at the first and the last step (a floor that
binds more as the policy trains shows there). Runs that do not log the keys (GRPO, the gated
form) have no row.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

from gc2po.layout import RunDir
from gc2po.reporting.names import RunNames, method_name, method_order
from gc2po.reporting.plotting import read_metrics
from gc2po.reporting.stats import seed_interval

FLOOR, FLIP = "advantages/floor_binds", "advantages/sign_flip_frac"
KEYS = {FLOOR: "floor binds", FLIP: "sign flips"}
# what a row summarises of a seed's {step: value}
WHEN = {
    "all steps": lambda steps: float(np.mean(list(steps.values()))),
    "first step": lambda steps: steps[min(steps)],
    "last step": lambda steps: steps[max(steps)],
}
COLUMNS = ["block", "run", "key", "when", "mean", "ci_low", "ci_high", "seeds", "steps"]


def step_values(path: str | Path, key: str) -> dict[int, float]:
    """{step: value} of ``key`` in a run's optimizer-step records (those with a loss)."""
    out = {}
    for number, record in enumerate(read_metrics(path), 1):
        if key in record and "loss" in record:
            value = float(record[key])
            if not math.isfinite(value):
                raise ValueError(f"{path}: row {number}: {key} is {value}")
            out[int(record["step"])] = value
    return out


def training_signal_rows(metrics: list[str | Path]) -> pd.DataFrame:
    """Rows (block, run, key, when in {all steps, first step, last step}) in %, from the
    ``metrics.jsonl`` files of the results layout (``RunDir`` names base, run and seed)."""
    per: dict[tuple[str, str, str], dict[int, dict[int, float]]] = defaultdict(dict)
    for path in metrics:
        run = RunDir.of_member(path, RunDir.METRICS)
        if run is None:
            raise ValueError(f"{path}: not a run's {RunDir.METRICS} (.../{RunDir.TEMPLATE})")
        for key in KEYS:
            values = step_values(path, key)
            if values:
                per[(run.base, run.run, key)][int(run.seed)] = values
    rows = []
    blocks = dict.fromkeys(sorted(block for block, _, _ in per))
    for block in blocks:
        runs = method_order(list(dict.fromkeys(r for b, r, _ in per if b == block)))
        for run in runs:
            for key in KEYS:
                seeds = per.get((block, run, key))
                if not seeds:
                    continue
                for when, pick in WHEN.items():
                    mean, low, high = seed_interval([100 * pick(s) for s in seeds.values()])
                    rows.append(
                        {
                            "block": block,
                            "run": run,
                            "key": key,
                            "when": when,
                            "mean": mean,
                            "ci_low": low,
                            "ci_high": high,
                            "seeds": ",".join(map(str, sorted(seeds))),
                            "steps": max(len(s) for s in seeds.values()),
                        }
                    )
    return pd.DataFrame(rows, columns=COLUMNS)


def _cell(row) -> str:
    if not math.isfinite(row["mean"]):
        return "n/a"
    if not (math.isfinite(row["ci_low"]) and math.isfinite(row["ci_high"])):
        return f"{row['mean']:.1f}"
    low, high = max(0.0, row["ci_low"]), min(100.0, row["ci_high"])  # shares
    return f"{row['mean']:.1f} [{low:.1f}, {high:.1f}]"


CAPTION = (
    "Floor binds: the share (%) of a training batch's groups whose per-episode signal std is "
    "below the run's cf_std_floor, so the floor replaced it and the bonus lambda_cf x z was "
    "smaller than lambda_cf says. Sign flips: the share of episode tokens whose advantage has "
    "the opposite sign to their completion's outcome advantage. Cells: the mean over seeds of "
    "each seed's mean over its training steps (or its first or last step), with its 95% "
    "t-interval over seeds, clipped to [0, 100]. From the runs' metrics.jsonl; runs that do not "
    "add a bonus (GRPO, the gated form) have no row."
)


def to_markdown(rows: pd.DataFrame, names: RunNames = None) -> str:
    whens = list(WHEN)
    header = ["Base model", "Run"] + [f"{KEYS[k]}, {w}" for k in KEYS for w in whens] + ["seeds"]
    lines = [
        "### What the additive bonus did in training",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    if rows.empty:
        lines.append(
            "| " + " | ".join(["no run logs these keys"] + [""] * (len(header) - 1)) + " |"
        )
    for (block, run), cells in rows.groupby(["block", "run"], sort=False):
        by = {(r["key"], r["when"]): r for r in cells.to_dict("records")}
        texts = [_cell(by[(k, w)]) if (k, w) in by else "" for k in KEYS for w in whens]
        seeds = cells.seeds.iloc[0]
        lines.append("| " + " | ".join([block, method_name(run, names), *texts, seeds]) + " |")
    return "\n".join(lines + ["", CAPTION, ""])


def write_training_signals(
    metrics: list[str | Path], *, md: str | Path, csv: str | Path, names: RunNames = None
) -> pd.DataFrame:
    rows = training_signal_rows(metrics)
    Path(md).parent.mkdir(parents=True, exist_ok=True)
    Path(md).write_text(to_markdown(rows, names))
    rows.to_csv(csv, index=False, float_format="%.4f")
    return rows
