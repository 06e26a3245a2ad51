"""Bootstrap confidence intervals over problems (and seeds)."""

from __future__ import annotations

import numpy as np


def bootstrap_ci(per_seed_problem_scores: list[np.ndarray], *, num_resamples: int = 1000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float, float]:
    """Mean and percentile CI of the mean score.

    ``per_seed_problem_scores``: one array per seed, holding each problem's score (mean over its
    samples), all over the same problems. Each resample draws seeds with replacement, then
    problems with replacement (the same draw of problems for every seed).
    """
    scores = np.stack([np.asarray(s, dtype=float) for s in per_seed_problem_scores])  # [S, P]
    if scores.size == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    num_seeds, num_problems = scores.shape
    seeds = rng.integers(0, num_seeds, size=(num_resamples, num_seeds))
    problems = rng.integers(0, num_problems, size=(num_resamples, num_problems))
    means = np.array([scores[s][:, p].mean() for s, p in zip(seeds, problems)])
    alpha = (1 - level) / 2
    return float(scores.mean()), float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))
