"""Confidence intervals, paired tests and multiplicity for pass@1 over seeds and problems.

Scores are arrays ``[S, P]``: one row per seed (a training seed, evaluated with its own
sampling seed), one column per problem (its pass@1, the mean correctness of its samples), every
row over the same problems. Two models are *paired* when their arrays share seeds and
problems: the base model evaluated with sampling seed s pairs with the run trained with seed s.

What an interval is for. A table names its benchmark files, and its intervals are for *these
problems*: the pass@1 a method would reach on exactly these problems, averaged over the
randomness of training (the training seed) and of evaluation (the sampling seed). The problems
are fixed, not drawn: an interval for the population of problems like them would add the
between-problem variance, a different question that a benchmark file answers only for itself.
For these problems the seeds are the independent units. Seed s's mean over the problems is one
draw that carries all its noise (its training seed's effect and each problem's n samples), and
the S draws are independent with the estimand as their mean. So the interval is the Student t
interval over the S per-seed values with S - 1 degrees of freedom (:func:`seed_interval`): per
seed the mean pass@1 of one model (:func:`mean_interval`), the mean difference of a pair
(:func:`paired_interval`: run a's seed s minus run b's seed s, or minus the base model evaluated
with sampling seed s), and for the Average the mean over benchmarks of either. A per-seed value
is a mean over hundreds of (problem, sample) cells plus a smooth function of the seed's effect,
so it is close to normal and the t interval keeps its level at 3 seeds:
tests/reporting/test_coverage.py simulates it (3 and 5 seeds, seed spreads 0.5 to 6 points,
n = 4 samples, 300 problems of varied difficulty) and asserts coverage in [0.93, 0.975]. The t
interval excludes 0 exactly when the paired t-test's p is below 0.05, so a table's interval and
its test never disagree. One seed gives no interval (NaN); zero spread a zero-width one.

Rejected: the percentile bootstrap that resampled seeds and then problems. With 3-5 seeds,
resampling seeds shrinks their spread by sqrt((S - 1) / S) and takes normal rather than t
quantiles, so it misses when seeds differ a lot (at 3 seeds and 6 points it covered 79% for a
paired difference, 89% for a pass@1); resampling problems adds the between-problem variance of
the other estimand, so it is far too wide when seeds barely differ (over 99% at 0.5 point). The
coverage test keeps a copy to show it (docs/measurements.md has its table).

Multiplicity: :func:`holm_adjusted` is Holm's step-down correction of a family of p-values (the
comparison tables apply it to the paired t-tests of a table's benchmark rows). Power:
``gc2po.reporting.power``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from gc2po.layout import is_error

EXACT_SIGN_FLIPS_UP_TO = 16  # seeds; above this the sign-flip test samples random flips


def check_graded(record: dict, where: str) -> None:
    """Raise ValueError naming ``where`` when a per-sample record has no grade: a table or curve
    never counts a grader error as a wrong answer (nor leaves it out: with one sample per
    problem that would drop the problem, and paired comparisons need the same problems)."""
    if is_error(record):
        raise ValueError(
            f"{where}: this sample was not graded ({record.get('error_kind')}: "
            f"{record.get('reason')}); a grader error is neither right nor wrong: fix the grader "
            f"and evaluate again"
        )


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


def _paired(scores_a, scores_b) -> np.ndarray:
    a, b = _scores(scores_a), _scores(scores_b)
    if a.shape != b.shape:
        raise ValueError(
            f"paired scores need the same [seeds, problems] shape, got {a.shape} and {b.shape}"
        )
    return a - b


def t_interval(values, level: float = 0.95):
    """Mean and Student-t interval (S - 1 degrees of freedom) over the last axis of per-seed
    ``values`` ``[..., S]``: the interval of every table, comparison and figure. Returns
    (mean, low, high), each ``[...]`` (floats for ``[S]``). One seed gives no interval (NaN);
    zero spread gives a zero-width one."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    seeds = v.shape[-1]
    if seeds == 0:
        raise ValueError("an interval over seeds needs at least 1 seed")
    mean = v.mean(axis=-1)
    if seeds == 1:
        half = np.full(mean.shape, np.nan)
    else:
        half = stats.t.ppf(0.5 + level / 2, df=seeds - 1) * v.std(axis=-1, ddof=1)
        half = half / math.sqrt(seeds)
    low, high = mean - half, mean + half
    if v.ndim == 1:
        return float(mean), float(low), float(high)
    return mean, low, high


def seed_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """:func:`t_interval` of the finite ones of ``values`` ``[S]`` (a figure's seeds that have
    the quantity); NaN throughout when none has it."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    return t_interval(v, level)


def per_seed_means(benchmark_scores: list) -> np.ndarray:
    """``[S]``: per seed, the mean over benchmarks of its mean over the benchmark's problems
    (one ``[S, P_b]`` array per benchmark, the same S seeds in each; one array: its seed means).
    """
    arrays = [_scores(s) for s in benchmark_scores]
    if not arrays or any(a.size == 0 for a in arrays):
        raise ValueError("per-seed means need at least one benchmark with seeds and problems")
    if any(a.shape[0] != arrays[0].shape[0] for a in arrays):
        raise ValueError(
            f"every benchmark needs the same seeds, got {[a.shape[0] for a in arrays]}"
        )
    return np.mean([a.mean(axis=1) for a in arrays], axis=0)


def mean_interval(benchmark_scores: list, level: float = 0.95) -> tuple[float, float, float]:
    """Mean pass@1 over benchmarks (each benchmark weighs the same) and its t-interval over
    the seeds' values of it (:func:`per_seed_means`), clipped to [0, 1] (what a pass@1 can be:
    clipping never leaves the truth outside)."""
    mean, low, high = t_interval(per_seed_means(benchmark_scores), level)
    return mean, float(np.clip(low, 0, 1)), float(np.clip(high, 0, 1))


def paired_differences(benchmark_scores_a: list, benchmark_scores_b: list) -> np.ndarray:
    """``[S]``: per seed, the mean over benchmarks of its mean over problems of ``a - b`` (one
    ``[S, P_b]`` pair per benchmark, same seeds and problems in a and b)."""
    if len(benchmark_scores_a) != len(benchmark_scores_b):
        raise ValueError("paired scores need the same benchmarks")
    return per_seed_means([_paired(a, b) for a, b in zip(benchmark_scores_a, benchmark_scores_b)])


def paired_interval(
    benchmark_scores_a: list, benchmark_scores_b: list, level: float = 0.95
) -> tuple[float, float, float]:
    """Mean difference ``a - b`` over benchmarks and its t-interval over the per-seed
    differences (:func:`paired_differences`), clipped to [-1, 1] (what a difference of pass@1
    can be): what the two share (a problem's difficulty) cancels within each seed."""
    mean, low, high = t_interval(paired_differences(benchmark_scores_a, benchmark_scores_b), level)
    return mean, float(np.clip(low, -1, 1)), float(np.clip(high, -1, 1))


def sampling_interval(pass_at_1, samples, level: float = 0.95) -> tuple[float, float, float]:
    """Mean pass@1 of one evaluation (one model, one sampling seed) and its normal interval over
    sampling, for this model and these problems, clipped to [0, 1]. ``pass_at_1`` ``[P]``: each
    problem's mean correctness; ``samples`` ``[P]``: how many samples it has.

    One file is one seed, so it has no interval over seeds; for a fixed model and fixed
    problems what is random is each problem's samples. The mean over P problems of per-problem
    means has variance sum_j p_j (1 - p_j) / n_j / P**2, estimated without bias with
    p_hat_j (1 - p_hat_j) / (n_j - 1) per problem. NaN where a problem has a single sample
    (nothing measures its spread).
    """
    from scipy import stats

    means, counts = np.asarray(pass_at_1, dtype=float), np.asarray(samples, dtype=float)
    if means.ndim != 1 or means.size == 0 or means.shape != counts.shape:
        raise ValueError(
            f"a sampling interval needs one pass@1 and one sample count per problem, got shapes "
            f"{means.shape} and {counts.shape}"
        )
    mean = float(means.mean())
    if (counts < 2).any():
        return mean, float("nan"), float("nan")
    variance = np.sum(means * (1 - means) / (counts - 1)) / means.size**2
    half = float(stats.norm.ppf(0.5 + level / 2) * math.sqrt(variance))
    return mean, max(0.0, mean - half), min(1.0, mean + half)


def evaluation_interval(samples, level: float = 0.95) -> tuple[float, float, float]:
    """:func:`sampling_interval` of one evaluation's per-sample records (``problem_id``,
    ``correct``)."""
    pass_at_1 = problem_pass_at_1(samples)
    counts = dict.fromkeys(pass_at_1, 0)
    for sample in samples:
        counts[str(sample["problem_id"])] += 1
    return sampling_interval(list(pass_at_1.values()), list(counts.values()), level)


def holm_adjusted(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values ``[m]`` of a family ``[m]`` (in the given order): the
    i-th smallest p times (m - i + 1), made non-decreasing in that order, at most 1. A
    hypothesis survives at family-wise level alpha when its adjusted p is at most alpha. NaN
    p-values (a test with one seed) stay NaN and are not counted in the family."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    tested = np.flatnonzero(np.isfinite(p))
    order = tested[np.argsort(p[tested], kind="stable")]
    m = len(order)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[index]))
        adjusted[index] = running
    return adjusted


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
    benchmarks of its per-benchmark mean difference (:func:`paired_differences`)."""
    return paired_test_of_differences(paired_differences(benchmark_scores_a, benchmark_scores_b))
