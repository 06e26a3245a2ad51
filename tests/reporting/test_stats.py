"""Intervals over seeds, paired tests and Holm's correction against cases computed by hand
(their coverage: test_coverage.py)."""

import math

import numpy as np
import pytest

from gc2po.reporting.stats import (
    evaluation_interval,
    holm_adjusted,
    mean_interval,
    paired_differences,
    paired_interval,
    paired_macro_test,
    paired_t_test,
    paired_test,
    per_seed_differences,
    per_seed_means,
    problem_pass_at_1,
    sampling_interval,
    seed_interval,
    sign_flip_test,
    t_interval,
)

T_975_2DF = 4.302652729911275  # Student t 97.5% quantile, 2 degrees of freedom (tables: 4.303)


def test_t_interval_by_hand():
    # values (1, 2, 3): mean 2, sd 1, half width t_{0.975, 2} / sqrt 3
    mean, low, high = t_interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and high - mean == pytest.approx(T_975_2DF / math.sqrt(3), rel=1e-9)
    assert low == pytest.approx(4 - high)
    # two values (0, 1): sd 1/sqrt 2, t_{0.975, 1} = tan(0.475 pi) -> half width tan(0.475 pi) / 2
    _, low, high = t_interval([0.0, 1.0])
    assert high - 0.5 == pytest.approx(math.tan(0.475 * math.pi) / 2)
    # rows of a batch are intervals of their own
    means, lows, highs = t_interval(np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]]))
    assert means.tolist() == [2.0, 5.0] and lows[0] == pytest.approx(2 - T_975_2DF / 3**0.5)
    assert lows[1] == highs[1] == 5.0  # zero spread: a zero-width interval


def test_one_seed_has_no_interval():
    mean, low, high = t_interval([0.7])
    assert mean == 0.7 and math.isnan(low) and math.isnan(high)
    mean, low, high = mean_interval([np.array([[1.0, 0.0]])])
    assert mean == 0.5 and math.isnan(low) and math.isnan(high)
    with pytest.raises(ValueError, match="at least 1 seed"):
        t_interval([])


def test_the_interval_excludes_zero_exactly_when_the_t_test_rejects():
    for d in ([0.01, 0.02, 0.04], [0.01, -0.02, 0.04], [0.03, 0.031, 0.029], [-1.0, -2.0]):
        _, low, high = t_interval(d)
        _, p = paired_t_test(d)
        assert (low > 0 or high < 0) == (p < 0.05), d


def test_mean_interval_is_over_each_seeds_mean_over_benchmarks():
    # benchmark 1 [2 seeds, 2 problems], benchmark 2 [2 seeds, 1 problem]: per seed the mean of
    # the benchmark means: seed 0 (1 + 0) / 2 = 0.5, seed 1 (0.5 + 1) / 2 = 0.75
    scores = [np.array([[1.0, 1.0], [1.0, 0.0]]), np.array([[0.0], [1.0]])]
    assert per_seed_means(scores).tolist() == [0.5, 0.75]
    # t_{0.975, 1} sd / sqrt 2 with sd = 0.25 / sqrt 2: half width tan(0.475 pi) / 8 = 1.59,
    # so the interval is clipped to what a pass@1 can be, [0, 1]
    _, low, high = t_interval([0.5, 0.75])
    assert high - 0.625 == pytest.approx(math.tan(0.475 * math.pi) / 8)
    assert mean_interval(scores) == (0.625, 0.0, 1.0)
    # three seeds 0.4, 0.5, 0.6 (sd 0.1): 0.5 +- t_{0.975, 2} 0.1 / sqrt 3, inside [0, 1]
    scores = [np.array([[0.4, 0.4], [0.5, 0.5], [0.6, 0.6]])]
    mean, low, high = mean_interval(scores)
    assert (mean, high) == pytest.approx((0.5, 0.5 + T_975_2DF * 0.1 / 3**0.5))
    assert mean_interval([np.full((3, 7), 0.25)]) == (0.25, 0.25, 0.25)


def test_paired_interval_cancels_what_both_models_share():
    rng = np.random.default_rng(1)
    base = rng.uniform(0, 1, size=(3, 50))  # problems of very different difficulty
    better = base + 0.1
    # every seed's mean difference is 0.1: the interval is the point 0.1
    mean, low, high = paired_interval([better], [base])
    assert (mean, low, high) == pytest.approx((0.1, 0.1, 0.1))
    # unpaired, the same data leave an interval many times wider (the seeds' own spread)
    _, a_low, a_high = mean_interval([better])
    assert a_high - a_low > 0.05


def test_paired_interval_is_the_t_interval_of_per_seed_differences():
    a = [np.array([[1, 1], [1, 0], [1, 1]]), np.array([[1], [1], [0]])]
    b = [np.array([[0, 1], [1, 0], [0, 0]]), np.array([[0], [1], [1]])]
    # per seed: (0.5 + 1) / 2, (0 + 0) / 2, (1 + -1) / 2 -> 0.75, 0, 0
    assert paired_differences(a, b).tolist() == [0.75, 0.0, 0.0]
    mean, low, high = paired_interval(a, b)
    # sd of (0.75, 0, 0) is sqrt(3) / 4: half width t_{0.975, 2} (sqrt(3) / 4) / sqrt(3); the
    # high end (1.33) is clipped to what a difference of pass@1 can be, the low end is not
    assert mean == 0.25 and low == pytest.approx(0.25 - T_975_2DF / 4) and high == 1.0


def test_paired_scores_need_the_same_seeds_problems_and_benchmarks():
    with pytest.raises(ValueError, match="same"):
        paired_interval([np.zeros((3, 5))], [np.zeros((2, 5))])
    with pytest.raises(ValueError, match="the same benchmarks"):
        paired_interval([np.zeros((3, 5))] * 2, [np.zeros((3, 5))])
    with pytest.raises(ValueError, match="the same seeds"):
        per_seed_means([np.zeros((3, 5)), np.zeros((2, 5))])


def test_macro_average_weights_benchmarks_equally():
    # benchmark means 1.0 (2 problems) and 0.0 (6 problems): the macro mean is 0.5, not 0.25
    assert mean_interval([np.ones((1, 2)), np.zeros((1, 6))])[0] == 0.5
    diff = paired_interval([np.ones((2, 2)), np.ones((2, 6))], [np.zeros((2, 2)), np.ones((2, 6))])
    assert diff == (0.5, 0.5, 0.5)


def test_sampling_interval_by_hand():
    # problems with 4 samples: p_hat 0.5 and 0.25; variance (0.25 / 3 + 0.1875 / 3) / 4
    mean, low, high = sampling_interval([0.5, 0.25], [4, 4])
    half = 1.959963984540054 * math.sqrt((0.25 / 3 + 0.1875 / 3) / 4)
    assert mean == 0.375 and (low, high) == pytest.approx((0.375 - half, 0.375 + half))
    assert sampling_interval([1.0, 0.0], [4, 4]) == (0.5, 0.5, 0.5)  # every sample agrees
    assert sampling_interval([0.01], [2])[1] == 0.0  # clipped to what a pass@1 can be
    assert math.isnan(sampling_interval([0.5, 1.0], [2, 1])[1])  # one sample: no spread
    with pytest.raises(ValueError, match="one sample count per problem"):
        sampling_interval([0.5, 1.0], [2])


def test_evaluation_interval_counts_each_problems_samples():
    samples = [
        {"problem_id": p, "correct": c}
        for p, c in (("a", 1), ("b", 0), ("a", 0), ("b", 0), ("a", 1), ("b", 1))
    ]
    assert evaluation_interval(samples) == sampling_interval([2 / 3, 1 / 3], [3, 3])


def test_holm_by_hand():
    # p = (0.01, 0.04, 0.03, 0.005), m = 4: sorted 0.005 x 4 = 0.02, 0.01 x 3 = 0.03,
    # 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> made non-decreasing: 0.06
    adjusted = holm_adjusted([0.01, 0.04, 0.03, 0.005])
    assert adjusted.tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert (adjusted <= 0.05).tolist() == [True, False, False, True]
    # capped at 1; a single test is its own p
    assert holm_adjusted([0.6, 0.7]).tolist() == [1.0, 1.0]
    assert holm_adjusted([0.03]).tolist() == [0.03]
    # a test without p (one seed) is not in the family: m = 2 here
    adjusted = holm_adjusted([0.02, float("nan"), 0.04])
    assert adjusted[0] == pytest.approx(0.04) and math.isnan(adjusted[1])
    assert adjusted[2] == pytest.approx(0.04)


def test_holm_is_never_below_the_raw_p_and_bonferroni_bounds_it():
    rng = np.random.default_rng(3)
    for m in (1, 2, 5, 9):
        p = rng.uniform(0, 0.2, size=m)
        adjusted = holm_adjusted(p)
        assert (adjusted >= p - 1e-15).all() and (adjusted <= np.minimum(1, m * p) + 1e-15).all()
        order = np.argsort(p)
        assert (np.diff(adjusted[order]) >= 0).all()


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


def test_seed_interval_leaves_out_seeds_without_the_quantity():
    assert seed_interval([1.0, float("nan"), 2.0, 3.0]) == t_interval([1.0, 2.0, 3.0])
    single = seed_interval([0.7, float("nan")])
    assert single[0] == 0.7 and math.isnan(single[1]) and math.isnan(single[2])
    assert all(math.isnan(v) for v in seed_interval([float("nan")]))


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
