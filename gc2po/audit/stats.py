"""Statistics of an audit frame (one row per completion, ``gc2po.audit.scoring.score_rows``):
per-group means with bootstrap CIs, correlations with f and p, the partial correlation with p
given f, per ``cf_state`` choice and per perturbation setting."""

from __future__ import annotations

import numpy as np
import pandas as pd

from gc2po.testbed.oracle import GROUPS

REWARDS = ("r_out", "s_sta", "s_exp", "r_cf", "gc2po_score", "gc2po_advantage", "grpo_advantage")


def spearman(x, y) -> float:
    return pearson(pd.Series(x).rank().to_numpy(), pd.Series(y).rank().to_numpy())


def pearson(x, y) -> float:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    # a constant (up to rounding: residuals of an exact fit) has no correlation
    if x.std() <= 1e-12 * (1 + np.abs(x).max()) or y.std() <= 1e-12 * (1 + np.abs(y).max()):
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def partial_correlation(x, y, z) -> float:
    """Pearson correlation of x and y after regressing each linearly on z (and a constant)."""
    z = np.column_stack([np.ones(len(z)), np.asarray(z, dtype=float)])

    def residual(v):
        v = np.asarray(v, dtype=float)
        coef, *_ = np.linalg.lstsq(z, v, rcond=None)
        return v - z @ coef

    return pearson(residual(x), residual(y))


def bootstrap_mean_ci(
    values, num_resamples: int = 1000, seed: int = 0
) -> tuple[float, float, float]:
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(num_resamples, values.size))].mean(1)
    return float(values.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def summarise(frame: pd.DataFrame, rewards=REWARDS) -> dict:
    """Group means with CIs, shares of the groups, and correlations of every reward."""
    groups = {}
    for group in GROUPS:
        part = frame[frame.group == group]
        groups[group] = {
            "share": len(part) / max(1, len(frame)),
            **{r: bootstrap_mean_ci(part[r].to_numpy()) for r in rewards},
        }
    correlations = {
        r: {
            "pearson_f": pearson(frame[r], frame.f),
            "pearson_p": pearson(frame[r], frame.p),
            "spearman_f": spearman(frame[r], frame.f),
            "spearman_p": spearman(frame[r], frame.p),
            "partial_p_given_f": partial_correlation(frame[r], frame.p, frame.f),
        }
        for r in rewards
    }
    overall = {r: [float(frame[r].mean()), float(frame[r].std(ddof=0))] for r in rewards}
    return {
        "completions": len(frame),
        "overall": overall,
        "groups": groups,
        "correlations": correlations,
        "state_choices": state_choice_study(frame),
    }


def state_choice_study(frame: pd.DataFrame, num_resamples: int = 1000, seed: int = 0) -> dict:
    """For each cf_state choice (columns ``r_cf@<choice>``): cor(R_cf, p | f) with a 95% CI from a
    bootstrap over problems (a problem's completions are resampled together: they share a
    prompt, so they are not independent), and cor(R_cf, p)."""
    columns = [c for c in frame.columns if c.startswith("r_cf@")]
    if not columns:
        return {}
    problems = frame.problem_id.to_numpy()
    members = [np.flatnonzero(problems == value) for value in pd.unique(problems)]
    rng = np.random.default_rng(seed)
    resamples = [
        np.concatenate([members[i] for i in rng.integers(0, len(members), len(members))])
        for _ in range(num_resamples)
    ]
    out = {}
    for column in columns:
        x, p, f = (frame[c].to_numpy(dtype=float) for c in (column, "p", "f"))
        boot = np.array([partial_correlation(x[i], p[i], f[i]) for i in resamples])
        boot = boot[np.isfinite(boot)]
        low, high = np.quantile(boot, [0.025, 0.975]).tolist() if boot.size else [float("nan")] * 2
        out[column.removeprefix("r_cf@")] = {
            "partial_p_given_f": partial_correlation(x, p, f),
            "ci_low": low,
            "ci_high": high,
            "pearson_p": pearson(x, p),
        }
    return out


def perturbation_study(frame: pd.DataFrame) -> pd.DataFrame:
    """Each perturbation setting's cor(R_cf, p | f) over its independent noise draws (columns
    ``r_cf[<setting>]#<draw>``): mean, standard deviation, min and max over the draws and a 95%
    t-interval of the mean; cor(R_cf, p), cor(R_cf, f) and R_cf's mean and std averaged over
    the draws. Sorted by the mean partial correlation (best first)."""
    from scipy import stats

    draws: dict[str, list[str]] = {}
    for column in frame.columns:
        if column.startswith("r_cf[") and "]#" in column:
            draws.setdefault(column[5 : column.rindex("]#")], []).append(column)
    rows = []
    for setting, columns in draws.items():
        partial = np.array([partial_correlation(frame[c], frame.p, frame.f) for c in columns])
        n, mean = len(partial), float(np.mean(partial))
        sd = float(np.std(partial, ddof=1)) if n > 1 else float("nan")
        half = float(stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n)) if n > 1 else float("nan")
        rows.append(
            {
                "perturbation": setting,
                "draws": n,
                "partial_p_given_f": mean,
                "partial_sd": sd,
                "partial_ci_low": mean - half,
                "partial_ci_high": mean + half,
                "partial_min": float(partial.min()),
                "partial_max": float(partial.max()),
                "pearson_p": float(np.mean([pearson(frame[c], frame.p) for c in columns])),
                "pearson_f": float(np.mean([pearson(frame[c], frame.f) for c in columns])),
                "mean": float(np.mean([frame[c].mean() for c in columns])),
                "std": float(np.mean([frame[c].std() for c in columns])),
            }
        )
    return pd.DataFrame(rows).sort_values("partial_p_given_f", ascending=False, na_position="last")
