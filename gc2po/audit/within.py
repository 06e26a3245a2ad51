"""The within-problem correlation of a per-episode signal with validity given f, per problem
and averaged (the statistic of ``gc2po.audit.signals``), from an episode frame."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from gc2po.core.signals import within_group_correlation


def within_problem(frame: pd.DataFrame, column: str, *, given_f: bool = True):
    """Per problem: the correlation of ``column`` with validity (NaN where undefined) and its
    episodes, as numpy arrays [problems]."""
    group = torch.tensor(pd.factorize(frame.problem_id)[0])
    corr, episodes = within_group_correlation(
        torch.tensor(frame[column].to_numpy(dtype=float)),
        torch.tensor(frame.valid.to_numpy(dtype=float)),
        torch.tensor(frame.f.to_numpy()),
        group,
        given_f=given_f,
    )
    return corr.numpy(), episodes.numpy()


def weighted_mean(corr: np.ndarray, episodes: np.ndarray) -> float:
    defined = np.isfinite(corr)
    if not defined.any():
        return float("nan")
    return float(np.average(corr[defined], weights=episodes[defined]))
