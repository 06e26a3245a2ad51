"""The one range of each core parameter (``gc2po.core.params``): checked where a run's config is
built, with the config's name in the error, and not again by the core functions."""

from __future__ import annotations

import pytest

from gc2po.core.params import RANGES, check_params

GOOD = dict(
    lambda_cf=0.8,
    lambda_exp=0.9,
    lambda_sta=1.0,
    cf_tau=0.1,
    cf_eps_u=1e-6,
    num_perturbations=8,
    answer_topk=64,
    answer_space="topk",
    trunc_frac=0.05,
    adv_clip=10.0,
    episode_weight_norm="sum",
    cf_std_floor=0.1,
    cf_z_clip=3.0,
)


def test_the_papers_values_are_in_range_and_every_parameter_is_listed():
    assert set(GOOD) == set(RANGES)
    check_params(**GOOD)
    check_params(lambda_cf=0.0, lambda_exp=1.0, trunc_frac=0.0)  # the ends of the ranges


@pytest.mark.parametrize(
    "key, value, rule",
    [
        ("lambda_cf", -0.1, "in [0, 100]"),
        ("lambda_cf", 100.5, "in [0, 100]"),
        ("lambda_exp", float("nan"), "in [0, 1]"),
        ("lambda_sta", -0.5, "in [0, 1]"),
        ("cf_tau", 0.0, "> 0"),
        ("cf_eps_u", 0.0, "> 0"),
        ("cf_eps_u", float("inf"), "> 0"),
        ("num_perturbations", 0, ">= 1"),
        ("num_perturbations", 2.0, ">= 1"),
        ("answer_topk", True, ">= 1"),
        ("answer_space", "logits", "one of ['topk', 'vocab']"),
        ("trunc_frac", 0.5, "in [0, 0.5)"),
        ("adv_clip", 0.0, "> 0"),
        ("episode_weight_norm", "median", "one of ['sum', 'mean']"),
        ("cf_std_floor", -1.0, "> 0"),
        ("cf_z_clip", float("nan"), "> 0"),
    ],
)
def test_a_value_out_of_range_fails_naming_the_key_and_its_one_range(key, value, rule):
    with pytest.raises(ValueError) as err:
        check_params(**{**GOOD, key: value})
    assert str(err.value) == f"{key} must be {rule}, got {value!r}"
