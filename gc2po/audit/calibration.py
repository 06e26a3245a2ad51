"""Calibration of the form-matched controls on a base model's audit (before any of their runs):
the weight that gives the readout control R_cf's correlation with validity, the lambda_cf that
matches a signal's validity weight to the oracle's, and lambda* itself.

- ``readout_weight``: the smallest weight w on a grid for which the readout control
  (``gc2po.core.signals.mix_readout``: the readout z-scored in its group + w x validity) has a
  within-problem rho given f (``gc2po.audit.within``) at least ``target`` on an episode frame
  (the signal audit's, with its raw ``readout`` column). rho grows with w (more validity in the
  mix), so the first grid point past the target is the match;
- ``weight_matched_lambda``: lambda* / rho, the additive weight whose part along validity equals
  the plain oracle's at lambda* (the bonus is lambda_cf x z, z's part along validity rho x
  z(validity)); rho below ``min_rho`` counts as ``min_rho`` (a signal with no measured
  correlation would otherwise get an unbounded weight);
- ``lambda_star``: the median over groups of the flip lambda of correct copies of the bet that
  GRPO rewards (a positive outcome advantage; ``gc2po.core.corrected.flip_lambda``;
  ``benchmarks/lambda_calibration.py`` prints the distribution with the copies GRPO gives 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from gc2po.audit.within import weighted_mean, within_problem
from gc2po.core.signals import mix_readout

WEIGHT_GRID = tuple(round(0.005 * i, 3) for i in range(0, 1001))  # 0 .. 5 in steps of 0.005
MIN_RHO = 0.02


def mixed_readout(frame: pd.DataFrame, weight: float) -> np.ndarray:
    """[E] the readout control of an episode frame's rows (its ``readout`` and ``valid`` columns,
    grouped by ``problem_id``) at ``weight``."""
    group = torch.tensor(pd.factorize(frame.problem_id)[0])
    readout = torch.tensor(frame.readout.to_numpy(dtype=float)).unsqueeze(-1)
    valid = torch.tensor(frame.valid.to_numpy(dtype=float)).unsqueeze(-1)
    present = torch.ones_like(readout, dtype=torch.bool)
    return mix_readout(readout, valid, present, group, weight)[:, 0].numpy()


def readout_rho(frame: pd.DataFrame, weight: float) -> float:
    """The readout control's within-problem rho given f at ``weight``."""
    mixed = frame.assign(_mixed=mixed_readout(frame, weight))
    return weighted_mean(*within_problem(mixed, "_mixed"))


def readout_weight(
    frame: pd.DataFrame, target: float, grid: tuple[float, ...] = WEIGHT_GRID
) -> tuple[float, float]:
    """(weight, its rho): the smallest grid weight whose readout rho reaches ``target``; fails
    when none on the grid does."""
    for weight in grid:
        rho = readout_rho(frame, weight)
        if np.isfinite(rho) and rho >= target:
            return weight, rho
    raise ValueError(
        f"readout_weight: no weight up to {grid[-1]} reaches rho {target:+.3f} "
        f"(rho at {grid[-1]}: {readout_rho(frame, grid[-1]):+.3f})"
    )


def weight_matched_lambda(lambda_star: float, rho: float, min_rho: float = MIN_RHO) -> float:
    """lambda* / max(rho, min_rho), rounded to 2 decimals (the value a config states)."""
    if not (np.isfinite(lambda_star) and lambda_star > 0):
        raise ValueError(f"lambda* must be a positive number, got {lambda_star!r}")
    return round(lambda_star / max(rho, min_rho), 2)


def lambda_star(
    f: torch.Tensor,
    episode_ids: torch.Tensor,
    validity: torch.Tensor,
    mask: torch.Tensor,
    copies: torch.Tensor,
    *,
    group_size: int,
    cf_std_floor: float,
    cf_z_clip: float,
) -> tuple[float, int]:
    """(lambda*, groups): the median over groups of the median flip lambda of their correct
    copies of the bet that have a positive outcome advantage and whose bonus the oracle turns
    negative (groups that have one), and their count.

    f [N] (0/1), episode_ids [N, T], validity [N, Lmax], mask [N, T], copies [N] bool (the row
    copies the bet), rows of a group consecutive (``group_size`` each)."""
    from gc2po.core.corrected import flip_lambda

    found = flip_lambda(
        f.double(), episode_ids, validity, mask, group_size=group_size,
        cf_std_floor=cf_std_floor, cf_z_clip=cf_z_clip,
    )  # fmt: skip
    # per group, torch's median over its copies that flip and that GRPO rewards (a positive
    # outcome advantage: where every completion of a group is right the copy's advantage is 0
    # and its flip lambda 0, which says nothing of the weight that overturns GRPO's reward)
    flipping = copies & (f == 1) & found.flips & (found.outcome_advantages > 0)
    group = torch.arange(len(f)) // group_size
    medians = [
        float(found.lambda_flip[flipping & (group == g)].median())
        for g in torch.unique(group[flipping]).tolist()
    ]
    if not medians:
        raise ValueError("lambda_star: no group where the oracle's bonus flips a correct copy")
    return float(np.median(medians)), len(medians)
