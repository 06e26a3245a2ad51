"""Confidence intervals and paired tests for pass@1 over seeds and problems.

Scores are arrays ``[S, P]``: one row per seed (a training seed, evaluated with its own
sampling seed), one column per problem (its pass@1, the mean correctness of its samples), every
row over the same problems. Two models are *paired* when their arrays share seeds and
problems: the base model evaluated with sampling seed s pairs with the run trained with seed s.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

EXACT_SIGN_FLIPS_UP_TO = 16  # seeds; above this the sign-flip test samples random flips


def problem_pass_at_1(samples) -> dict[str, float]:
    """Per-problem pass@1, the mean correctness of a problem's samples: the one place it is
    computed (evaluation summaries and tables). ``samples``: records with ``problem_id`` and
    ``correct``; problems in the order they first appear."""
    by_problem: dict[str, list[float]] = {}
    for sample in samples:
        by_problem.setdefault(str(sample["problem_id"]), []).append(float(sample["correct"]))
    return {problem: sum(values) / len(values) for problem, values in by_problem.items()}


def _scores(per_seed_problem_scores) -> np.ndarray:
    scores = np.asarray([np.asarray(s, dtype=float) for s in per_seed_problem_scores], dtype=float)
    if scores.ndim != 2:
        raise ValueError(
            "scores must be [seeds, problems] with the same problems per seed, got shape "
            f"{scores.shape}"
        )
    return scores


def macro_bootstrap_ci(
    benchmark_scores: list, *, num_resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """Mean over benchmarks of each benchmark's mean score, and its percentile CI.

    ``benchmark_scores``: one ``[S, P_b]`` array per benchmark, all with the same S seeds. Each
    resample draws seeds with replacement (the same draw for every benchmark: a training seed
    affects all of them), then, per benchmark, problems with replacement (the same draw for
    every seed).
    """
    arrays = [_scores(s) for s in benchmark_scores]
    if not arrays or any(a.size == 0 for a in arrays):
        return float("nan"), float("nan"), float("nan")
    num_seeds = arrays[0].shape[0]
    if any(a.shape[0] != num_seeds for a in arrays):
        raise ValueError(
            f"every benchmark needs the same seeds, got {[a.shape[0] for a in arrays]}"
        )
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, num_seeds, size=(num_resamples, num_seeds))  # [R, S]
    resampled = np.zeros(num_resamples)
    for scores in arrays:
        problems = rng.integers(0, scores.shape[1], size=(num_resamples, scores.shape[1]))  # [R, P]
        seed_means = (
            scores[:, problems].mean(axis=2).T
        )  # [R, S]: each seed's mean over the drawn problems
        resampled += np.take_along_axis(seed_means, seeds, axis=1).mean(axis=1)
    resampled /= len(arrays)
    alpha = (1 - level) / 2
    point = float(np.mean([a.mean() for a in arrays]))
    return point, float(np.quantile(resampled, alpha)), float(np.quantile(resampled, 1 - alpha))


def bootstrap_ci(
    per_seed_problem_scores, *, num_resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """Mean and percentile CI of the mean score of one ``[S, P]`` array (seeds, then problems
    resampled with replacement; the same problems for every seed)."""
    return macro_bootstrap_ci(
        [per_seed_problem_scores], num_resamples=num_resamples, level=level, seed=seed
    )


def _paired(scores_a, scores_b) -> np.ndarray:
    a, b = _scores(scores_a), _scores(scores_b)
    if a.shape != b.shape:
        raise ValueError(
            f"paired scores need the same [seeds, problems] shape, got {a.shape} and {b.shape}"
        )
    return a - b


def paired_bootstrap_diff(
    scores_a, scores_b, *, num_resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of ``a - b`` and its percentile CI, seeds and problems resampled jointly.

    ``scores_a``, ``scores_b``: ``[S, P]`` over the same seeds and problems. Each resample draws
    the same seeds and problems for both models, so what they share (a problem's difficulty)
    cancels: this is the bootstrap of the per-(seed, problem) differences.
    """
    return bootstrap_ci(
        _paired(scores_a, scores_b), num_resamples=num_resamples, level=level, seed=seed
    )


def paired_macro_bootstrap_diff(
    benchmark_scores_a: list, benchmark_scores_b: list, **kwargs
) -> tuple[float, float, float]:
    """:func:`paired_bootstrap_diff` of the mean over benchmarks (as :func:`macro_bootstrap_ci`)."""
    if len(benchmark_scores_a) != len(benchmark_scores_b):
        raise ValueError("paired scores need the same benchmarks")
    return macro_bootstrap_ci(
        [_paired(a, b) for a, b in zip(benchmark_scores_a, benchmark_scores_b)], **kwargs
    )


@dataclass(frozen=True)
class PairedTest:
    mean_difference: float  # mean over seeds of the per-seed mean difference a - b
    t_statistic: float  # nan with fewer than 2 seeds
    t_p_value: float  # two-sided, Student t with S - 1 degrees of freedom
    sign_flip_p_value: float  # two-sided, exact over all 2**S sign flips (sampled above 16 seeds)
    seeds: int


def per_seed_differences(scores_a, scores_b) -> np.ndarray:
    """``[S]``: each seed's mean over problems of ``a - b``."""
    return _paired(scores_a, scores_b).mean(axis=1)


def paired_t_test(differences) -> tuple[float, float]:
    """(t, two-sided p) of the one-sample t-test of ``differences`` against 0.

    Needs two or more differences. Zero spread gives t = +-inf and p = 0 (t = 0 and p = 1 when
    every difference is 0).
    """
    from scipy import stats

    d = np.asarray(differences, dtype=float)
    if d.size < 2:
        raise ValueError(f"a paired t-test needs at least 2 seeds, got {d.size}")
    sd = d.std(ddof=1)
    if sd == 0:
        return (0.0, 1.0) if d.mean() == 0 else (math.copysign(math.inf, d.mean()), 0.0)
    t = d.mean() / (sd / math.sqrt(d.size))
    return float(t), float(2 * stats.t.sf(abs(t), df=d.size - 1))


def sign_flip_test(differences, *, num_samples: int = 2**16, seed: int = 0) -> float:
    """Two-sided p-value of the sign-flip permutation test of mean(differences) = 0.

    Under the null each difference is symmetric about 0, so every sign pattern is equally
    likely; p = share of patterns whose |mean| is at least the observed |mean|. Exact (all
    2**S patterns) up to 16 differences, else ``num_samples`` random patterns. With S seeds the
    smallest possible p is 2 / 2**S (0.25 for 3 seeds).
    """
    d = np.asarray(differences, dtype=float)
    if d.size == 0:
        raise ValueError("a sign-flip test needs at least 1 difference")
    if d.size <= EXACT_SIGN_FLIPS_UP_TO:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
    else:
        signs = np.random.default_rng(seed).choice((1.0, -1.0), size=(num_samples, d.size))
    observed = abs(d.mean())
    flipped = np.abs((signs * d).mean(axis=1))
    return float(np.mean(flipped >= observed - 1e-12 * max(1.0, observed)))  # tolerance: float sums


def paired_test_of_differences(per_seed: np.ndarray) -> PairedTest:
    """t-test (where there are 2+ seeds) and sign-flip test of per-seed differences ``[S]``."""
    d = np.asarray(per_seed, dtype=float)
    t, p = paired_t_test(d) if d.size >= 2 else (float("nan"), float("nan"))
    return PairedTest(float(d.mean()), t, p, sign_flip_test(d), int(d.size))


def paired_test(scores_a, scores_b) -> PairedTest:
    """t-test and sign-flip test across seeds of the per-seed mean differences a - b."""
    return paired_test_of_differences(per_seed_differences(scores_a, scores_b))


def paired_macro_test(benchmark_scores_a: list, benchmark_scores_b: list) -> PairedTest:
    """:func:`paired_test` of the mean over benchmarks: each seed's difference is the mean over
    benchmarks of its per-benchmark mean difference (one ``[S, P_b]`` pair per benchmark)."""
    if len(benchmark_scores_a) != len(benchmark_scores_b):
        raise ValueError("paired scores need the same benchmarks")
    return paired_test_of_differences(
        np.mean(
            [per_seed_differences(a, b) for a, b in zip(benchmark_scores_a, benchmark_scores_b)],
            axis=0,
        )
    )


def seed_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t CI over seeds (a figure's band or error bar);
    no interval from one seed."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    if v.size == 1:
        return float(v[0]), float("nan"), float("nan")
    half = stats.t.ppf(0.5 + level / 2, df=v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return float(v.mean()), float(v.mean() - half), float(v.mean() + half)
