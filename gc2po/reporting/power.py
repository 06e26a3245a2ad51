"""How many seeds a paired comparison needs, from the seed-level spread measured in a study.

A comparison's test is the paired t-test over S per-seed differences (``gc2po.reporting.stats``:
seed s of a minus seed s of b, each a mean over the problems). Its power against a true
difference ``delta`` when the per-seed differences have standard deviation ``sd`` is that of
the two-sided one-sample t-test: with noncentrality ``delta / (sd / sqrt(S))``, the chance that
|T| exceeds the t quantile with S - 1 degrees of freedom. The per-seed sd already holds every
source of noise for these problems (the seeds' training, the samples, the problems' clustering
within a seed), so it is measured, not modelled: :func:`difference_sd` of a study's per-seed
differences (``benchmarks/workflow/seed_power.py`` prints it from a run's evaluation files).
"""

from __future__ import annotations

import math

import numpy as np

MIN_SEEDS = 2  # a t-test needs two differences


def difference_sd(differences) -> float:
    """Standard deviation (S - 1 denominator) of per-seed differences ``[S]``, ``S >= 2``."""
    d = np.asarray(differences, dtype=float)
    if d.ndim != 1 or d.size < MIN_SEEDS or not np.isfinite(d).all():
        raise ValueError(
            f"a seed-level sd needs at least {MIN_SEEDS} finite per-seed differences, got {d}"
        )
    return float(d.std(ddof=1))


def _check(sd: float, alpha: float, power: float | None = None) -> None:
    if not (sd >= 0 and math.isfinite(sd)):
        raise ValueError(f"sd must be finite and >= 0, got {sd}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if power is not None and not alpha < power < 1:
        raise ValueError(f"power must be in (alpha, 1) = ({alpha}, 1), got {power}")


def paired_t_power(delta: float, sd: float, seeds: int, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test at level ``alpha`` over ``seeds`` per-seed
    differences of standard deviation ``sd`` when the true mean difference is ``delta``."""
    from scipy import stats

    _check(sd, alpha)
    if seeds < MIN_SEEDS:
        raise ValueError(f"a paired t-test needs at least {MIN_SEEDS} seeds, got {seeds}")
    if sd == 0:
        return 1.0 if delta != 0 else alpha
    df = seeds - 1
    critical = stats.t.ppf(1 - alpha / 2, df)
    shift = delta / (sd / math.sqrt(seeds))
    # P(T > c) + P(T < -c), the second as P(-T > c) with -T ~ nct(-shift): the upper tail
    # (nct.sf) stays finite where nct.cdf's far lower tail returns NaN (scipy 1.x)
    return float(stats.nct.sf(critical, df, shift) + stats.nct.sf(critical, df, -shift))


def seeds_needed(
    delta: float, sd: float, alpha: float = 0.05, power: float = 0.8, max_seeds: int = 1000
) -> int:
    """The fewest seeds (>= 2) whose paired t-test detects a true difference ``delta`` with
    ``power`` at level ``alpha`` (S is iterated: the t quantile itself depends on S)."""
    _check(sd, alpha, power)
    if delta == 0:
        raise ValueError("no number of seeds detects a difference of 0")
    for seeds in range(MIN_SEEDS, max_seeds + 1):
        if paired_t_power(delta, sd, seeds, alpha) >= power:
            return seeds
    raise ValueError(
        f"detecting {delta} with sd {sd} at power {power} needs more than {max_seeds} seeds"
    )


def minimal_detectable_difference(
    sd: float, seeds: int, alpha: float = 0.05, power: float = 0.8
) -> float:
    """The smallest true difference (> 0) that ``seeds`` seeds detect with ``power`` at level
    ``alpha`` when per-seed differences have standard deviation ``sd`` (0 when sd is 0)."""
    from scipy import optimize

    _check(sd, alpha, power)
    if sd == 0:
        return 0.0
    # power grows with delta, from alpha at 0: double an upper end until it is past ``power``
    high = sd
    while paired_t_power(high, sd, seeds, alpha) < power:
        high *= 2
    return float(
        optimize.brentq(
            lambda delta: paired_t_power(delta, sd, seeds, alpha) - power, 0.0, high, xtol=1e-12
        )
    )
