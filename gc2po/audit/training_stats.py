"""The signal audit of the quantity training uses, beside the within-problem correlation of
``gc2po.audit.signals``.

The corrected GC2PO does not train on a signal's within-problem correlation: it adds
lambda_cf * z_{k,l} to the outcome advantage, where z is the signal z-scored over the group's
episodes weighted by their share of their completion's tokens, with the std floor and the clip
(``gc2po.core.corrected.signal_z_scores``, called here, so the audit cannot drift from
training). A one-episode completion's episode weighs its whole completion (share 1), a step of a
three-step solution about a third. Two statistics of that z, per signal:

- ``tq`` (the training quantity): the share-weighted correlation of z with episode validity,
  validity demeaned within each group (one problem's k completions) with the same weights,
  pooled over every group the bonus acts in (a group whose validity does not vary adds z's
  variance and no covariance, as it adds a bonus and no information in training). With it, the
  bonus's size: ``rms_z``, the weighted root mean square of z (1 when the floor never binds and
  nothing is clipped), and ``aligned`` = tq * rms_z, the part of the bonus along validity per
  unit lambda_cf, in the outcome advantage's units (its std is 1);
- ``step_matched``: the same correlation with z and validity both demeaned within each
  (problem, step index, f) cell: what is left when every completion's step l of a problem is
  compared only with the same step of siblings with the same final correctness. A signal can
  correlate with validity by knowing which step it is (steps differ in operation and operand
  size, and validity with them); this statistic sees only whether this instance is right.

Confidence intervals resample problems (a problem's completions share a prompt and a policy
sample): 1,000 bootstrap resamples of the per-problem sums of the pooled correlation,
percentile interval, as the within-problem statistic's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from gc2po.core.corrected import episode_shares, signal_z_scores


@dataclass(frozen=True)
class BonusTransform:
    """What turns a signal into the bonus (the run's ``GC2POConfig``): the group size (the
    audit's k), the std floor and the clip."""

    group_size: int
    cf_std_floor: float
    cf_z_clip: float


def bonus_z(frame: pd.DataFrame, column: str, transform: BonusTransform) -> pd.DataFrame:
    """Per row of an episode frame (one row per (completion, episode): ``prompt_index``,
    ``sample_index``, ``episode``, ``tokens`` and the signal ``column``): the episode's share of
    its completion's tokens (``share``), its z as training computes it (``z``) and its group's
    signal sd (``group_sd``). Completions absent from the frame (no episode) have no share, as in
    training. A non-finite signal counts as 0, as in training."""
    k = transform.group_size
    if len(frame) == 0:
        return pd.DataFrame({"share": [], "z": [], "group_sd": []})
    if int(frame.sample_index.max()) >= k:
        raise ValueError(f"episode frame: sample_index {int(frame.sample_index.max())} >= k {k}")
    rows = torch.tensor((frame.prompt_index * k + frame.sample_index).to_numpy(), dtype=torch.long)
    slots = torch.tensor(frame.episode.to_numpy(), dtype=torch.long)
    count = (int(frame.prompt_index.max()) + 1) * k
    width = int(slots.max()) + 1
    tokens = torch.zeros(count, width, dtype=torch.float64)
    tokens[rows, slots] = torch.tensor(frame.tokens.to_numpy(dtype=float))
    signal = torch.zeros(count, width, dtype=torch.float64)
    values = torch.tensor(frame[column].to_numpy(dtype=float))
    signal[rows, slots] = torch.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
    share = episode_shares(tokens)
    z, sd = signal_z_scores(
        signal,
        share,
        torch.arange(count),
        k,
        cf_std_floor=transform.cf_std_floor,
        cf_z_clip=transform.cf_z_clip,
    )
    return pd.DataFrame(
        {
            "share": share[rows, slots].numpy(),
            "z": z[rows, slots].numpy(),
            "group_sd": sd[rows].numpy(),
        },
        index=frame.index,
    )


def _demeaned(values: np.ndarray, weights: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """values minus their cell's weighted mean (a cell of zero weight: its plain mean)."""
    sums = np.bincount(cells, weights * values)
    totals = np.bincount(cells, weights)
    plain = np.bincount(cells, values) / np.bincount(cells)
    means = np.where(totals > 0, sums / np.where(totals > 0, totals, 1), plain)
    return values - means[cells]


def problem_sums(
    x: np.ndarray, v: np.ndarray, w: np.ndarray, problem: np.ndarray, cells: np.ndarray
) -> np.ndarray:
    """[P, 4] per problem (codes 0..P-1): sum w x~ v~, sum w x~^2, sum w v~^2, sum w, with x~, v~
    demeaned within ``cells`` (each cell inside one problem), weights w."""
    xt, vt = _demeaned(x, w, cells), _demeaned(v, w, cells)
    size = int(problem.max()) + 1 if problem.size else 0
    parts = (w * xt * vt, w * xt * xt, w * vt * vt, w)
    return np.stack([np.bincount(problem, part, minlength=size) for part in parts], axis=1)


def pooled(sums: np.ndarray) -> tuple[float, float]:
    """(correlation, rms of x~) of summed per-problem sums [.., 4]; NaN where x~ or v~ has no
    variance."""
    a, b, c, w = sums.sum(0)
    if b <= 1e-18 or c <= 1e-18:
        return float("nan"), float(np.sqrt(b / w)) if w > 0 else float("nan")
    return float(a / np.sqrt(b * c)), float(np.sqrt(b / w))


def bootstrap_ci(sums: np.ndarray, num_resamples: int, seed: int) -> tuple[float, float]:
    """95% percentile interval of the pooled correlation over resampled problems."""
    rng = np.random.default_rng(seed)
    count = len(sums)
    if count == 0:
        return float("nan"), float("nan")
    boot = np.array([pooled(sums[rng.integers(0, count, count)])[0] for _ in range(num_resamples)])
    boot = boot[np.isfinite(boot)]
    if not boot.size:
        return float("nan"), float("nan")
    low, high = np.quantile(boot, [0.025, 0.975])
    return float(low), float(high)


def training_quantity_correlation(
    frame: pd.DataFrame,
    column: str,
    transform: BonusTransform,
    *,
    num_resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """The training-quantity and step-matched statistics of one signal column of an episode
    frame (module docstring): ``tq`` with ``tq_ci_low``/``tq_ci_high``, ``rms_z``, ``aligned``,
    ``step_matched`` with ``step_matched_ci_low``/``step_matched_ci_high``, ``floor_binds``
    (the share of groups whose signal sd is below the floor) and ``groups`` (problems with an
    episode)."""
    z = bonus_z(frame, column, transform)
    problem = pd.factorize(frame.problem_id)[0]
    step_cell = pd.factorize(pd.MultiIndex.from_arrays([frame.problem_id, frame.episode, frame.f]))[
        0
    ]
    x, v, w = z.z.to_numpy(), frame.valid.to_numpy(dtype=float), z.share.to_numpy()
    tq_sums = problem_sums(x, v, w, problem, problem)
    step_sums = problem_sums(x, v, w, problem, step_cell)
    tq, rms = pooled(tq_sums)
    step, _ = pooled(step_sums)
    tq_low, tq_high = bootstrap_ci(tq_sums, num_resamples, seed)
    step_low, step_high = bootstrap_ci(step_sums, num_resamples, seed)
    group_sd = pd.Series(z.group_sd.to_numpy()).groupby(problem).first()
    return {
        "tq": tq,
        "tq_ci_low": tq_low,
        "tq_ci_high": tq_high,
        "rms_z": rms,
        "aligned": tq * rms if np.isfinite(tq) else float("nan"),
        "step_matched": step,
        "step_matched_ci_low": step_low,
        "step_matched_ci_high": step_high,
        "floor_binds": float((group_sd < transform.cf_std_floor).mean()) if len(group_sd) else 0.0,
        "groups": int(len(group_sd)),
    }


def step_matched_correlation(frame: pd.DataFrame, column: str, transform: BonusTransform) -> float:
    """The step-matched statistic alone (``training_quantity_correlation``'s ``step_matched``,
    without its CI)."""
    z = bonus_z(frame, column, transform)
    problem = pd.factorize(frame.problem_id)[0]
    cells = pd.factorize(pd.MultiIndex.from_arrays([frame.problem_id, frame.episode, frame.f]))[0]
    sums = problem_sums(
        z.z.to_numpy(), frame.valid.to_numpy(dtype=float), z.share.to_numpy(), problem, cells
    )
    return pooled(sums)[0]
