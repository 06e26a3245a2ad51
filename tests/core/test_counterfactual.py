"""Counterfactual reward (SPEC 2.3-2.4): hand-computed cases, perturbation statistics, errors."""

import math

import pytest
import torch

from gc2po.core.counterfactual import CounterfactualParams, counterfactual_reward
from gc2po.core.perturbations import (
    PERTURBATIONS,
    build_perturbation,
    perturb,
    register_perturbation,
)

LN3 = math.log(3.0)
BASE = dict(
    num_samples=4, tau=0.1, lambda_exp=0.9, eps_u=1e-6, answer_space="vocab", generator=None
)


def test_full_dropout_by_hand():
    # W = I (V = d = 2), u = [ln 3, 0]: q(u) = [3/4, 1/4]. Dropout with p = 1 zeroes u, so
    # q(g u) = [1/2, 1/2]: ||q - q_m||^2 = 2 * (1/4)^2 = 1/8, S_sta = exp(-(1/8)/0.1) = exp(-1.25)
    # S_exp = 0 / (ln3^2 + eps) = 0, R_cf = exp(-1.25) + 0.9 * 0.
    u = torch.tensor([[LN3, 0.0]])
    out = counterfactual_reward(u, torch.eye(2), perturbation={"name": "dropout", "p": 1.0}, **BASE)
    assert out.s_sta.item() == pytest.approx(math.exp(-1.25), rel=1e-6)
    assert out.s_exp.item() == 0.0
    assert out.r_cf.item() == pytest.approx(math.exp(-1.25), rel=1e-6)


def test_group_mix_with_alpha_one_swaps_siblings_by_hand():
    # two episodes of one group, alpha = 1: each perturbed state is its sibling.
    # q(u1) = [3/4, 1/4], q(u2) = [1/4, 3/4]: ||diff||^2 = 2 * (1/2)^2 = 1/2, S_sta = exp(-5)
    # ||u2||^2 = ||u1||^2 = ln3^2: S_exp = ln3^2 / (ln3^2 + 1e-6); R_cf = S_sta + 0.9 S_exp
    u = torch.tensor([[LN3, 0.0], [0.0, LN3]])
    out = counterfactual_reward(
        u,
        torch.eye(2),
        perturbation={"name": "group_mix", "alpha": 1.0},
        group_index=torch.tensor([0, 0]),
        **BASE,
    )
    s_exp = LN3**2 / (LN3**2 + 1e-6)
    torch.testing.assert_close(out.s_sta, torch.full((2,), math.exp(-5)))
    torch.testing.assert_close(out.s_exp, torch.full((2,), s_exp))
    torch.testing.assert_close(out.r_cf, torch.full((2,), math.exp(-5) + 0.9 * s_exp))
    # an episode alone in its group is left unchanged: S_sta = 1, S_exp = ||u||^2/(||u||^2+eps)
    alone = counterfactual_reward(
        u,
        torch.eye(2),
        perturbation={"name": "group_mix", "alpha": 1.0},
        group_index=torch.tensor([0, 1]),
        **BASE,
    )
    torch.testing.assert_close(alone.s_sta, torch.ones(2))


def test_topk_restricts_and_renormalises_by_hand():
    # V = 3, W = I, u = [ln 3, 0, -inf-ish]: top-2 = tokens 0, 1 -> q = [3/4, 1/4] exactly as
    # with V = 2 in the dropout case, so S_sta = exp(-1.25) with p = 1 (perturbed logits 0, 0).
    u = torch.tensor([[LN3, 0.0, -30.0]])
    out = counterfactual_reward(
        u,
        torch.eye(3),
        perturbation={"name": "dropout", "p": 1.0},
        **{**BASE, "answer_space": "topk"},
        topk=2,
    )
    assert out.s_sta.item() == pytest.approx(math.exp(-1.25), rel=1e-6)


def test_temperature_and_bias_enter_the_logits():
    # logits = u W^T + b = [ln3, 0] + [0, 0]; temperature 2 halves them: q = softmax([ln3/2, 0])
    u = torch.tensor([[LN3, 0.0]])
    out = counterfactual_reward(
        u,
        torch.eye(2),
        perturbation={"name": "dropout", "p": 1.0},
        temperature=2.0,
        lm_head_bias=torch.zeros(2),
        **BASE,
    )
    q0 = math.sqrt(3) / (math.sqrt(3) + 1)
    dist = 2 * (q0 - 0.5) ** 2
    assert out.s_sta.item() == pytest.approx(math.exp(-dist / 0.1), rel=1e-6)


def test_expected_norm_ratios_of_random_operators():
    g = torch.Generator().manual_seed(0)
    u = torch.randn(64, 256, generator=g)
    kw = dict(generator=g)
    gauss = perturb(u, {"name": "gaussian", "sigma": 0.5}, 64, **kw)
    # E||u + s ||u||/sqrt(d) eps||^2 = ||u||^2 (1 + s^2)
    assert (gauss.pow(2).sum(-1) / u.pow(2).sum(-1)).mean().item() == pytest.approx(1.25, rel=0.02)
    drop = perturb(u, {"name": "dropout", "p": 0.3}, 64, **kw)
    assert (drop.pow(2).sum(-1) / u.pow(2).sum(-1)).mean().item() == pytest.approx(0.7, rel=0.02)
    assert ((drop == 0) | (drop == u)).all()  # dropout does not rescale


def test_composite_applies_in_order_and_is_seeded():
    u = torch.randn(5, 16, generator=torch.Generator().manual_seed(1))
    spec = ["dropout", {"name": "gaussian", "sigma": 0.2}]
    a = perturb(u, spec, 3, generator=torch.Generator().manual_seed(7))
    b = perturb(u, spec, 3, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a, b) and a.shape == (3, 5, 16)
    assert len(build_perturbation(spec)) == 2


def test_chunking_gives_the_same_answer():
    g = torch.Generator().manual_seed(3)
    u, w = torch.randn(37, 32, generator=g), torch.randn(500, 32, generator=g)
    for space in ("vocab", "topk"):
        kw = dict(
            perturbation=["dropout", "gaussian"],
            num_samples=8,
            tau=0.1,
            lambda_exp=0.9,
            eps_u=1e-6,
            answer_space=space,
            topk=16,
        )
        whole = counterfactual_reward(u, w, generator=torch.Generator().manual_seed(5), **kw)
        chunked = counterfactual_reward(
            u, w, generator=torch.Generator().manual_seed(5), max_chunk_bytes=1, **kw
        )
        for x, y in zip(whole, chunked):
            torch.testing.assert_close(x, y)


def test_bounds_and_finiteness_for_zero_states():
    u = torch.zeros(3, 8)
    out = counterfactual_reward(u, torch.randn(20, 8), perturbation=["dropout", "gaussian"], **BASE)
    for x in out:
        assert torch.isfinite(x).all()
    assert ((out.s_sta > 0) & (out.s_sta <= 1)).all()


def test_bf16_weight_is_not_copied_to_fp32_and_result_is_fp32():
    u = torch.randn(4, 16)
    w = torch.randn(50, 16).bfloat16()
    out = counterfactual_reward(
        u, w, perturbation="dropout", **{**BASE, "answer_space": "topk"}, topk=8
    )
    assert out.r_cf.dtype == torch.float32


@pytest.mark.parametrize(
    "override, match",
    [
        (
            dict(perturbation="rotate"),
            r"unknown name 'rotate'.*\['dropout', 'gaussian', 'group_mix'\]",
        ),
        (dict(perturbation={"name": "dropout", "p": 2.0}), r"dropout.*p must be"),
        (
            dict(perturbation={"name": "gaussian", "scale": 1.0}),
            r"unknown parameter 'scale'.*sigma",
        ),
        (dict(perturbation=[]), "at least one"),
        (dict(group_index=torch.tensor([0])), "group_index"),
    ],
)
def test_bad_input_raises_naming_the_argument(override, match):
    kw = {**BASE, "perturbation": "dropout", **override}
    with pytest.raises(ValueError, match=match):
        counterfactual_reward(torch.randn(2, 4), torch.randn(6, 4), **kw)


def test_mismatched_shapes_raise():
    with pytest.raises(ValueError, match=r"lm_head_weight.*d=4"):
        counterfactual_reward(torch.randn(2, 4), torch.randn(6, 5), perturbation="dropout", **BASE)
    with pytest.raises(ValueError, match=r"u must have shape \[E, d\]"):
        counterfactual_reward(torch.randn(4), torch.randn(6, 4), perturbation="dropout", **BASE)


def test_registry_names_and_duplicate_registration_fails_naming_both_places():
    assert set(PERTURBATIONS) == {"gaussian", "dropout", "group_mix"}
    with pytest.raises(
        ValueError,
        match=r"perturbation 'gaussian' is registered twice: first at .*perturbations.py:\d+, "
        r"again at .*test_counterfactual.py:\d+",
    ):
        register_perturbation("gaussian", param="sigma", bounds=(0.0, 1.0), default=0.1)(
            lambda *a, **k: None
        )


def test_lambda_sta_weights_the_stability_term():
    u, w = torch.randn(5, 8), torch.randn(30, 8)
    kw = dict(perturbation="dropout", **BASE)
    full = counterfactual_reward(u, w, **{**kw, "generator": torch.Generator().manual_seed(1)})
    none = counterfactual_reward(
        u, w, lambda_sta=0.0, **{**kw, "generator": torch.Generator().manual_seed(1)}
    )
    torch.testing.assert_close(full.r_cf, full.s_sta + BASE["lambda_exp"] * full.s_exp)
    torch.testing.assert_close(none.r_cf, BASE["lambda_exp"] * none.s_exp)


def test_non_finite_states_score_zero_and_never_nan():
    u = torch.randn(4, 8)
    u[1, 3], u[2, 0] = float("nan"), float("inf")
    u[3] = 1e30  # squares overflow float32
    for space in ("topk", "vocab"):
        out = counterfactual_reward(
            u,
            torch.randn(30, 8),
            perturbation=["dropout", "gaussian"],
            **{**BASE, "answer_space": space},
        )
        for x in out:
            assert torch.isfinite(x).all()
        assert out.s_sta[1] == 0 and out.s_exp[2] == 0


def test_params_compute_the_spec_call_under_the_config_names():
    """CounterfactualParams (built by GC2POConfig.counterfactual_params) is the one place where
    the config's names meet the SPEC's: its reward equals the keyword call."""
    u, w = torch.randn(6, 8, generator=torch.Generator().manual_seed(4)), torch.randn(30, 8)
    params = CounterfactualParams(
        perturbation=["dropout", {"name": "gaussian", "sigma": 0.2}],
        num_perturbations=3,
        cf_tau=0.2,
        lambda_exp=0.5,
        lambda_sta=0.7,
        cf_eps_u=1e-5,
        answer_space="topk",
        answer_topk=5,
        temperature=1.5,
    )
    group = torch.tensor([0, 0, 0, 1, 1, 1])
    got = params.reward(u, w, generator=torch.Generator().manual_seed(9), group_index=group)
    want = counterfactual_reward(
        u,
        w,
        perturbation=params.perturbation,
        num_samples=3,
        tau=0.2,
        lambda_exp=0.5,
        lambda_sta=0.7,
        eps_u=1e-5,
        answer_space="topk",
        topk=5,
        temperature=1.5,
        generator=torch.Generator().manual_seed(9),
        group_index=group,
    )
    for x, y in zip(got, want):
        torch.testing.assert_close(x, y, atol=0, rtol=0)
