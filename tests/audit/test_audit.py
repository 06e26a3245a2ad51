"""Reward audit: grouping and correlations on hand-computed cases, and scoring real completions."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from gc2po.audit import (
    AuditSampling,
    partial_correlation,
    pearson,
    perturbation_study,
    score_rows,
    spearman,
    state_choice_study,
    summarise,
)
from gc2po.evaluation.backends import Generation
from gc2po.testbed.generator import Problem, solution_text
from gc2po.training.episode_states import STATE_CHOICES


def run_args(**settings):
    """A resolved ``GC2POConfig`` with the paper's R_cf settings at the episode ends, M = 2,
    top-8 answer space (``settings`` override them)."""
    from gc2po.training.config import GC2POConfig

    paper = dict(
        method="gc2po",
        perturbation="dropout,gaussian",
        perturbation_p=0.1,
        perturbation_sigma=0.1,
        num_perturbations=2,
        cf_tau=0.1,
        lambda_exp=0.9,
        lambda_sta=1.0,
        cf_eps_u=1e-6,
        answer_space="topk",
        answer_topk=8,
        lambda_cf=0.8,
        trunc_frac=0.05,
        cf_state="episode_end",
    )
    return GC2POConfig(output_dir="unused", use_cpu=True, report_to="none", **{**paper, **settings})


# f and p of four completions, one per group
F = [1, 1, 0, 0]
P = [1.0, 0.2, 0.9, 0.1]


def handwritten_generations(tokenizer):
    """(problem, texts, generations): one testbed problem and four completions of it, a correct
    solution, a slip, a shortcut and no steps, in the tokenizer's ids."""
    problem = Problem(
        "p0",
        "test_id",
        "Ana has 5 apples. Ana buys 3 more. How many?",
        5,
        (("+", 3), ("*", 2)),
        (8, 16),
    )
    texts = [
        solution_text(problem, "correct"),
        solution_text(problem, "slip"),
        solution_text(problem, "shortcut"),
        "no idea \\boxed{3}",
    ]
    generations = [
        Generation(0, i, t, 0, True, tokenizer(t, add_special_tokens=False)["input_ids"])
        for i, t in enumerate(texts)
    ]
    return problem, texts, generations


def test_correlations_by_hand():
    # R = f: cor(R, f) = 1; cor(R, p) = cov 0.025 / (0.5 * sqrt(0.1625)) = 0.124035
    assert pearson(F, F) == pytest.approx(1.0)
    assert pearson(F, P) == pytest.approx(0.025 / (0.5 * math.sqrt(0.1625)), rel=1e-6)
    # R3: within-f residuals R [.4,-.4,.3,-.3], p [.4,-.4,.4,-.4]
    # -> 0.14 / (sqrt(.125) * .4) = 0.989949
    r3 = [0.9, 0.1, 0.8, 0.2]
    assert partial_correlation(r3, P, F) == pytest.approx(0.14 / (math.sqrt(0.125) * 0.4), rel=1e-6)
    # ranks R3 [4,1,3,2], p [4,2,3,1] -> cov 1.0 / var 1.25 = 0.8
    assert spearman(r3, P) == pytest.approx(0.8)
    # an outcome-only reward carries no information about p once f is known
    assert math.isnan(partial_correlation(F, P, F))


def test_summary_groups_and_shares_by_hand():
    frame = pd.DataFrame(
        {
            "f": F,
            "p": P,
            "group": ["near_ideal", "lucky_guess", "near_miss", "fully_bad"],
            "r_out": [1.0, 1.0, 0.0, 0.0],
            "r_cf": [0.9, 0.1, 0.8, 0.2],
        }
    )
    summary = summarise(frame, rewards=("r_out", "r_cf"))
    assert summary["completions"] == 4
    for group, r_cf in (
        ("near_ideal", 0.9),
        ("lucky_guess", 0.1),
        ("near_miss", 0.8),
        ("fully_bad", 0.2),
    ):
        assert summary["groups"][group]["share"] == 0.25
        assert summary["groups"][group]["r_cf"][0] == pytest.approx(r_cf)
    # the near miss gets the outcome reward of the fully bad trajectory,
    # the lucky guess that of the ideal one
    assert (
        summary["groups"]["near_miss"]["r_out"][0]
        == summary["groups"]["fully_bad"]["r_out"][0]
        == 0.0
    )
    assert summary["correlations"]["r_cf"]["partial_p_given_f"] == pytest.approx(0.989949, rel=1e-5)


def test_perturbation_study_ranks_by_partial_correlation():
    frame = pd.DataFrame(
        {"f": F, "p": P, "r_cf[good]#0": [0.9, 0.1, 0.8, 0.2], "r_cf[bad]#0": [0.2, 0.8, 0.1, 0.9]}
    )
    study = perturbation_study(frame)
    assert study.perturbation.tolist() == ["good", "bad"]
    assert study.partial_p_given_f.iloc[0] == pytest.approx(-study.partial_p_given_f.iloc[1])
    assert study.draws.tolist() == [1, 1] and study.partial_sd.isna().all()  # one draw: no spread


def test_perturbation_study_summarises_independent_draws_by_hand():
    # draw 0: partial 0.989949 (test_correlations_by_hand); draw 1 = draw 0 mirrored: -0.989949;
    # draw 2: within-f residuals R [.1,-.1,.4,-.4], p [.4,-.4,.4,-.4]
    # -> .4 / sqrt(.34 * .64) = 0.857493
    draws = {
        "r_cf[x]#0": [0.9, 0.1, 0.8, 0.2],
        "r_cf[x]#1": [0.1, 0.9, 0.2, 0.8],
        "r_cf[x]#2": [0.6, 0.4, 0.9, 0.1],
    }
    study = perturbation_study(pd.DataFrame({"f": F, "p": P, **draws})).iloc[0]
    values = [0.989949, -0.989949, 0.4 / math.sqrt(0.34 * 0.64)]
    mean = sum(values) / 3
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 2)
    assert study.draws == 3
    assert study.partial_p_given_f == pytest.approx(mean, rel=1e-5)
    assert study.partial_sd == pytest.approx(sd, rel=1e-5)
    assert study.partial_min == pytest.approx(
        -0.989949, rel=1e-5
    ) and study.partial_max == pytest.approx(0.989949, rel=1e-5)
    half = 4.302653 * sd / math.sqrt(3)  # t(0.975, df=2)
    assert (study.partial_ci_low, study.partial_ci_high) == (
        pytest.approx(mean - half, rel=1e-5),
        pytest.approx(mean + half, rel=1e-5),
    )


@pytest.mark.slow
def test_score_rows_on_handwritten_completions(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    problem, _, generations = handwritten_generations(tokenizer)
    frame = score_rows(
        model,
        tokenizer,
        [problem],
        ["<|user|>q\n<|assistant|>"],
        generations,
        run_args(),
        AuditSampling(study_draws=2),
        grid=[[{"name": "dropout", "p": 0.5}]],
    )
    assert frame.group.tolist() == ["near_ideal", "near_miss", "lucky_guess", "fully_bad"]
    assert frame.f.tolist() == [1, 0, 1, 0]
    assert frame.episodes.tolist()[:3] == [2, 2, 2] and frame.fallback.tolist() == [
        False,
        False,
        False,
        True,
    ]
    for column in (
        "s_sta",
        "s_exp",
        "r_cf",
        "gc2po_score",
        "gc2po_advantage",
        "r_cf[dropout(p=0.5)]#0",
        "r_cf[dropout(p=0.5)]#1",
    ):
        assert torch.isfinite(torch.tensor(frame[column].to_numpy())).all(), column
    assert frame.gc2po_advantage.sum() == pytest.approx(0.0, abs=1e-6)  # group-normalised
    # R_cf at every cf_state choice, through the trainer's state function; episode_end (the
    # configured default) is the main r_cf, read at EOS for the last episode as in training
    for choice in STATE_CHOICES:
        assert torch.isfinite(torch.tensor(frame[f"r_cf@{choice}"].to_numpy())).all(), choice
    assert frame["r_cf@episode_end"].tolist() == pytest.approx(frame.r_cf.tolist())
    assert not frame["r_cf@episode_end"].equals(frame["r_cf@result"])
    # the two draws of the study use different noise (dropout p 0.5 of the states)
    assert not frame["r_cf[dropout(p=0.5)]#0"].equals(frame["r_cf[dropout(p=0.5)]#1"])


def test_study_draws_must_be_a_positive_integer():
    with pytest.raises(ValueError, match="study_draws must be an integer >= 1, got 0"):
        AuditSampling(study_draws=0)


@pytest.mark.slow
def test_the_audit_scores_with_the_run_settings_it_is_given(tiny_model_dir):
    """The audit reads the run's own GC2POConfig (here gc2po_add's cf_state "result", a group_mix
    perturbation, M = 3): its R_cf is the trainer's at those settings, not a copy's."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gc2po.audit.batch import cf_at, prepare

    args = run_args(
        method="gc2po_add",
        cf_state=None,
        perturbation="group_mix",
        perturbation_alpha=0.6,
        num_perturbations=3,
        lambda_cf=0.5,
        answer_topk=16,
    )
    assert args.cf_state == "result"  # the method's, resolved by GC2POConfig
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    problem, _, generations = handwritten_generations(tokenizer)
    sampling = AuditSampling(k=4, seed=3)
    prompts = ["<|user|>q\n<|assistant|>"]
    frame = score_rows(model, tokenizer, [problem], prompts, generations, args, sampling)
    batch = prepare(model, tokenizer, prompts, generations, args, sampling)
    perturbation = [{"name": "group_mix", "alpha": 0.6}]
    assert args.counterfactual_params().perturbation == perturbation
    assert frame.r_cf.tolist() == cf_at(batch, args, "result", perturbation, 3)[2].tolist()
    assert frame.r_cf.tolist() == frame["r_cf@result"].tolist()


def test_state_choice_study_reports_each_choice_with_a_problem_bootstrap_ci():
    rng = np.random.default_rng(0)
    n_problems, k = 40, 4
    f = rng.integers(0, 2, n_problems * k)
    p = np.clip(0.5 * f + rng.normal(0, 0.3, f.size), 0, 1)
    frame = pd.DataFrame(
        {
            "problem_id": np.repeat(np.arange(n_problems), k),
            "f": f,
            "p": p,
            "r_cf@result": p + rng.normal(0, 0.1, f.size),  # tracks p within f
            "r_cf@episode_end": rng.normal(0, 1, f.size),
        }
    )  # noise
    study = state_choice_study(frame, num_resamples=300)
    good, noise = study["result"], study["episode_end"]
    assert good["partial_p_given_f"] == pytest.approx(
        partial_correlation(frame["r_cf@result"], p, f)
    )
    assert 0.8 < good["ci_low"] <= good["partial_p_given_f"] <= good["ci_high"] <= 1
    assert noise["ci_low"] < 0 < noise["ci_high"]  # nothing there, and the interval says so
