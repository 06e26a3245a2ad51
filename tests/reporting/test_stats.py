"""Bootstrap CIs and paired tests against cases computed by hand."""

import math

import numpy as np
import pytest

from gc2po.reporting.stats import (
    bootstrap_ci,
    macro_bootstrap_ci,
    paired_bootstrap_diff,
    paired_macro_bootstrap_diff,
    paired_macro_test,
    paired_t_test,
    paired_test,
    per_seed_differences,
    problem_pass_at_1,
    seed_interval,
    sign_flip_test,
)


def test_bootstrap_of_two_problems_spans_both_outcomes():
    # one seed, problems scored 0 and 1: a resample mean is 0, 0.5 or 1 with probabilities
    # 1/4, 1/2, 1/4, so the 2.5% and 97.5% quantiles of 1000 resamples are 0 and 1
    assert bootstrap_ci([[0.0, 1.0]]) == (0.5, 0.0, 1.0)


def test_bootstrap_resamples_seeds_too():
    # every problem agrees within a seed; only resampling seeds can move the mean
    mean, low, high = bootstrap_ci([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    assert (mean, low, high) == (0.5, 0.0, 1.0)


def test_bootstrap_of_a_constant_is_that_constant():
    assert bootstrap_ci(np.full((3, 7), 0.25)) == (0.25, 0.25, 0.25)


def test_paired_difference_cancels_what_both_models_share():
    rng = np.random.default_rng(1)
    base = rng.uniform(0, 1, size=(3, 50))  # problems of very different difficulty
    better = base + 0.1
    # paired: every (seed, problem) difference is 0.1, so the CI is the point 0.1
    mean, low, high = paired_bootstrap_diff(better, base)
    assert mean == pytest.approx(0.1) and low == pytest.approx(0.1) and high == pytest.approx(0.1)
    # unpaired, the same data leave a CI many times wider than 0.1 around each mean
    _, a_low, a_high = bootstrap_ci(better)
    assert a_high - a_low > 0.1


def test_paired_difference_needs_the_same_seeds_and_problems():
    with pytest.raises(ValueError, match="same"):
        paired_bootstrap_diff(np.zeros((3, 5)), np.zeros((2, 5)))


def test_macro_average_weights_benchmarks_equally():
    # benchmark means 1.0 (2 problems) and 0.0 (6 problems): the macro mean is 0.5, not 0.25
    mean, low, high = macro_bootstrap_ci([np.ones((1, 2)), np.zeros((1, 6))])
    assert (mean, low, high) == (0.5, 0.5, 0.5)
    diff = paired_macro_bootstrap_diff(
        [np.ones((2, 2)), np.ones((2, 6))], [np.zeros((2, 2)), np.ones((2, 6))]
    )
    assert diff == (0.5, 0.5, 0.5)


def test_per_seed_differences_average_over_problems():
    a = [[1.0, 0.0], [1.0, 1.0]]
    b = [[0.0, 0.0], [0.0, 1.0]]
    assert per_seed_differences(a, b).tolist() == [0.5, 0.5]


def test_paired_t_test_matches_closed_forms():
    # d = (1, 2, 3): t = 2 / (1 / sqrt 3) = 2 sqrt 3; with 2 degrees of freedom the t CDF is
    # 1/2 + t / (2 sqrt(2 + t^2)), so p = 1 - t / sqrt(2 + t^2) = 1 - 2 sqrt 3 / sqrt 14
    t, p = paired_t_test([1.0, 2.0, 3.0])
    assert t == pytest.approx(2 * math.sqrt(3))
    assert p == pytest.approx(1 - 2 * math.sqrt(3) / math.sqrt(14))  # 0.0742
    # d = (1, 3): t = 2 / (sqrt 2 / sqrt 2) = 2; with 1 degree of freedom (Cauchy)
    # p = 1 - 2 arctan(t) / pi
    t, p = paired_t_test([1.0, 3.0])
    assert t == pytest.approx(2.0)
    assert p == pytest.approx(1 - 2 * math.atan(2.0) / math.pi)  # 0.2952
    assert paired_t_test([0.0, 0.0, 0.0]) == (0.0, 1.0)
    assert paired_t_test([0.5, 0.5]) == (math.inf, 0.0)
    with pytest.raises(ValueError, match="at least 2"):
        paired_t_test([1.0])


def test_sign_flip_test_counts_sign_patterns():
    # d = (1, 2, 3): of the 8 sign patterns only +++ and --- reach |sum| 6 -> p = 2/8
    assert sign_flip_test([1.0, 2.0, 3.0]) == 0.25
    # d = (3, 1, 1, 1): |sum| >= 6 only for ++++ and ---- -> p = 2/16
    assert sign_flip_test([3.0, 1.0, 1.0, 1.0]) == 0.125
    # d = (1, -1): observed mean 0, every pattern is as extreme -> p = 1
    assert sign_flip_test([1.0, -1.0]) == 1.0
    # d = (2, 1, 1): sums 4, 2, 2, 0, 0, -2, -2, -4; |sum| >= 4 twice -> 2/8
    assert sign_flip_test([2.0, 1.0, 1.0]) == 0.25
    # 20 equal positive differences (sampled flips): only all-plus/all-minus are as extreme
    assert sign_flip_test([0.1] * 20) < 1e-3


def test_paired_test_combines_both_tests():
    a = np.array([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    b = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    result = paired_test(a, b)  # per-seed differences 1, 0.5, 1
    assert result.seeds == 3 and result.mean_difference == pytest.approx(2.5 / 3)
    t, p = paired_t_test([1.0, 0.5, 1.0])
    assert (result.t_statistic, result.t_p_value) == (t, p)
    assert result.sign_flip_p_value == 0.25
    single = paired_test(a[:1], b[:1])
    assert math.isnan(single.t_p_value) and single.sign_flip_p_value == 1.0


def test_seed_interval_is_the_student_t_interval():
    # values (1, 2, 3): mean 2, sd 1, t_{0.975, 2} = 4.302653 -> half width 4.302653 / sqrt 3
    mean, low, high = seed_interval([1.0, 2.0, 3.0])
    assert (
        mean == 2.0
        and high - mean == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
        and low == 4 - high
    )
    single = seed_interval([0.7])
    assert single[0] == 0.7 and math.isnan(single[1]) and math.isnan(single[2])


def test_paired_macro_test_averages_each_seeds_differences_over_benchmarks_by_hand():
    # benchmark 1: per-seed differences 0.5, 0.0; benchmark 2: 0.5, 0.5 -> per seed 0.5, 0.25
    a = [np.array([[1, 1], [1, 0]]), np.array([[1, 1], [1, 1]])]
    b = [np.array([[0, 1], [1, 0]]), np.array([[0, 1], [0, 1]])]
    test = paired_macro_test(a, b)
    assert test.mean_difference == pytest.approx(0.375) and test.seeds == 2
    # t = 0.375 / (0.176777 / sqrt 2) = 3.0, one degree of freedom: p = 1 - 2 atan(3) / pi
    assert test.t_statistic == pytest.approx(3.0)
    assert test.t_p_value == pytest.approx(1 - 2 * math.atan(3) / math.pi)
    assert test.sign_flip_p_value == pytest.approx(
        0.5
    )  # |mean| of the flips: .375 twice, .125 twice
    with pytest.raises(ValueError, match="the same benchmarks"):
        paired_macro_test(a, b[:1])


def test_pass_at_1_per_problem_is_the_mean_correctness_of_its_samples_in_first_seen_order():
    samples = [
        {"problem_id": problem, "correct": correct}
        for problem, correct in ((7, True), ("a", 0), (7, False), ("a", 1), (7, 1))
    ]
    assert problem_pass_at_1(samples) == {"7": 2 / 3, "a": 0.5}
    assert list(problem_pass_at_1(samples)) == ["7", "a"]
