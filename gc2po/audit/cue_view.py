"""What a per-episode signal makes of the testbed's cue, measured on the signal itself (beside
``gc2po.audit.signals``' correlation with validity):

- ``copy_gap``: within the f = 1 cell of each problem that carries a bet, the mean z of the
  completions that copy the bet minus the mean z of those that derive their answer (z: the
  signal as the corrected form's bonus z-scores it, ``gc2po.audit.training_stats.bonus_z``;
  a completion's z is the mean over its episodes). Over the problems whose f = 1 cell holds
  both, averaged, with a 95% bootstrap interval over problems. GRPO's outcome reward gives a
  right copy and a right derivation the same advantage: a gap of 0 is a signal that, among
  right answers, rewards copying as much as GRPO does; below 0 it favours the derivation, above
  0 the copy.
- ``rho_cued`` / ``rho_uncued``: the within-problem correlation with validity given f of
  ``gc2po.audit.signals.within_problem``, over the problems with a bet and those without.
- ``rho_sd``: the standard deviation over problems of the per-problem correlation (where
  defined): how much the signal's correlation with validity spreads from group to group.

Pure functions of an episode frame with the columns ``problem_id``, ``prompt_index``,
``sample_index``, ``episode``, ``tokens``, ``f``, ``valid``, ``cued`` and ``copy`` (the
completion copies the bet: ``gc2po.testbed.mechanism.cue_fields``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gc2po.audit.training_stats import BonusTransform, bonus_z
from gc2po.audit.within import weighted_mean, within_problem

CUE_COLUMNS = ("cued", "copy")


def completion_z(frame: pd.DataFrame, column: str, transform: BonusTransform) -> pd.DataFrame:
    """One row per completion of ``frame`` (an episode frame): problem, f, cued, copy and the
    mean over its episodes of the signal's bonus z."""
    z = bonus_z(frame, column, transform).z
    keys = ["problem_id", "prompt_index", "sample_index"]
    rows = frame[keys + ["f", "cued", "copy"]].assign(z=z.to_numpy())
    return (
        rows.groupby(keys, sort=False)
        .agg(f=("f", "first"), cued=("cued", "first"), copy=("copy", "first"), z=("z", "mean"))
        .reset_index()
    )


def problem_gaps(completions: pd.DataFrame) -> np.ndarray:
    """[P] per problem with a bet whose f = 1 completions hold both a copy and a derivation:
    mean z of the copies minus mean z of the derivations."""
    right = completions[(completions.f == 1) & completions.cued.astype(bool)]
    gaps = []
    for _, cell in right.groupby("problem_id", sort=True):
        copies = cell[cell["copy"].astype(bool)]
        derived = cell[~cell["copy"].astype(bool)]
        if len(copies) and len(derived):
            gaps.append(copies.z.mean() - derived.z.mean())
    return np.asarray(gaps, dtype=float)


def copy_gap(
    frame: pd.DataFrame,
    column: str,
    transform: BonusTransform,
    *,
    num_resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """``copy_gap`` with ``copy_gap_ci_low``/``copy_gap_ci_high`` (95% bootstrap over problems)
    and ``copy_gap_problems`` (the problems it averages; NaN throughout with none)."""
    gaps = problem_gaps(completion_z(frame, column, transform))
    if not gaps.size:
        nan = float("nan")
        return {"copy_gap": nan, "copy_gap_ci_low": nan, "copy_gap_ci_high": nan,
                "copy_gap_problems": 0}  # fmt: skip
    rng = np.random.default_rng(seed)
    boot = [gaps[rng.integers(0, gaps.size, gaps.size)].mean() for _ in range(num_resamples)]
    low, high = np.quantile(boot, [0.025, 0.975])
    return {
        "copy_gap": float(gaps.mean()),
        "copy_gap_ci_low": float(low),
        "copy_gap_ci_high": float(high),
        "copy_gap_problems": int(gaps.size),
    }


def rho_by_cue(frame: pd.DataFrame, column: str) -> dict:
    """``rho_cued``, ``rho_uncued`` (the within-problem rho given f over the problems with and
    without a bet) and ``rho_sd`` (the spread of the per-problem correlations)."""
    out = {}
    for name, part in (("rho_cued", frame[frame.cued.astype(bool)]),
                       ("rho_uncued", frame[~frame.cued.astype(bool)])):  # fmt: skip
        out[name] = weighted_mean(*within_problem(part, column)) if len(part) else float("nan")
    corr, _ = within_problem(frame, column)
    defined = corr[np.isfinite(corr)]
    out["rho_sd"] = float(defined.std()) if defined.size > 1 else float("nan")
    return out


def cue_view(
    frame: pd.DataFrame, column: str, transform: BonusTransform, *, num_resamples: int, seed: int
) -> dict:
    """Every statistic of the module docstring for one signal column; {} where the frame has no
    cue columns (an audit of a testbed without the cue)."""
    if not set(CUE_COLUMNS) <= set(frame.columns):
        return {}
    return {
        **copy_gap(frame, column, transform, num_resamples=num_resamples, seed=seed),
        **rho_by_cue(frame, column),
    }
