"""Power of the paired t-test over seeds: published values, a simulation, and its inverses."""

import math

import numpy as np
import pytest

from gc2po.reporting.power import (
    difference_sd,
    minimal_detectable_difference,
    paired_t_power,
    seeds_needed,
)
from gc2po.reporting.stats import paired_t_test


def test_published_sample_sizes_of_the_paired_t_test():
    # Cohen (1988) / G*Power, two-sided paired t-test, alpha 0.05, power 0.8: an effect of one
    # sd needs 10 pairs (power 0.803), half an sd 34
    assert seeds_needed(delta=1.0, sd=1.0) == 10
    assert paired_t_power(1.0, 1.0, 10) == pytest.approx(0.8031, abs=1e-4)
    assert seeds_needed(delta=0.5, sd=1.0) == 34
    # only the ratio delta / sd matters, and its sign does not
    assert seeds_needed(delta=-5.0, sd=10.0) == 34


def test_power_is_a_probability_across_the_range():
    for seeds in (2, 3, 5, 10, 40):
        for delta in (0.1, 1.0, 5.0, 20.0, 80.0):
            assert 0.0 <= paired_t_power(delta, 1.0, seeds) <= 1.0, (delta, seeds)


def test_power_is_alpha_without_a_difference_and_one_without_spread():
    assert paired_t_power(0.0, 2.0, 5) == pytest.approx(0.05)
    assert paired_t_power(0.0, 2.0, 5, alpha=0.1) == pytest.approx(0.1)
    assert paired_t_power(1.0, 0.0, 3) == 1.0 and seeds_needed(1.0, 0.0) == 2
    assert minimal_detectable_difference(0.0, 3) == 0.0


def test_power_matches_a_simulation_of_the_tables_t_test():
    rng = np.random.default_rng(5)
    delta, sd, seeds, studies = 3.0, 2.5, 4, 4000
    rejected = np.mean(
        [paired_t_test(rng.normal(delta, sd, seeds))[1] < 0.05 for _ in range(studies)]
    )
    expected = paired_t_power(delta, sd, seeds)
    # Monte Carlo SE of a rate near 0.6 from 4000 studies: 0.008
    assert rejected == pytest.approx(expected, abs=0.03), (rejected, expected)


def test_seeds_needed_is_the_first_seed_count_with_the_power():
    # (5.0, 1.1189): where scipy's nct.cdf of the far lower tail is NaN
    for delta, sd in ((5.0, 2.0), (2.0, 2.0), (1.0, 3.0), (4.0, 6.0), (5.0, 1.1189)):
        seeds = seeds_needed(delta, sd)
        assert paired_t_power(delta, sd, seeds) >= 0.8
        assert seeds == 2 or paired_t_power(delta, sd, seeds - 1) < 0.8


def test_minimal_detectable_difference_is_the_inverse_of_power():
    for sd, seeds in ((2.0, 3), (2.0, 5), (1.0, 10)):
        mdd = minimal_detectable_difference(sd, seeds)
        assert paired_t_power(mdd, sd, seeds) == pytest.approx(0.8, abs=1e-9)
        assert seeds_needed(mdd * 1.0001, sd) <= seeds < seeds_needed(mdd * 0.99, sd)
    # more seeds detect less; 3 seeds need a difference several sds wide
    assert minimal_detectable_difference(2.0, 5) < minimal_detectable_difference(2.0, 3)
    assert minimal_detectable_difference(1.0, 3) > 3.0


def test_difference_sd_and_bad_arguments():
    assert difference_sd([1.0, 2.0, 3.0]) == 1.0
    assert difference_sd([0.5, 0.5]) == 0.0
    with pytest.raises(ValueError, match="at least 2 finite"):
        difference_sd([1.0])
    with pytest.raises(ValueError, match="at least 2 finite"):
        difference_sd([1.0, math.nan])
    with pytest.raises(ValueError, match="difference of 0"):
        seeds_needed(0.0, 1.0)
    with pytest.raises(ValueError, match="at least 2 seeds"):
        paired_t_power(1.0, 1.0, 1)
    with pytest.raises(ValueError, match="power must be"):
        seeds_needed(1.0, 1.0, power=0.01)
    with pytest.raises(ValueError, match="sd must be"):
        minimal_detectable_difference(-1.0, 3)
    with pytest.raises(ValueError, match="more than 50 seeds"):
        seeds_needed(0.1, 10.0, max_seeds=50)
