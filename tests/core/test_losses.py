"""Clipped token loss (SPEC 2.6): a hand case and equality with a direct GRPO loop."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gc2po.core.losses import clipped_token_loss, k3_kl


def test_hand_computed_loss_with_clipping_and_kl():
    # ratios: token 1 = 1.5, token 2 = 0.5 (log-prob differences ln 1.5, ln 0.5), clip 0.2
    # seq 1, A = +1 on both: min(1.5, 1.2) = 1.2 and min(0.5, 0.8) = 0.5 -> mean 0.85
    # seq 2, A = -1, only token 1 valid: min(-1.5, -1.2) = -1.5 -> mean -1.5
    # J = (0.85 - 1.5)/2 = -0.325 -> loss 0.325
    old = torch.zeros(2, 2)
    logps = torch.log(torch.tensor([[1.5, 0.5], [1.5, 0.5]]))
    adv = torch.tensor([[1.0, 1.0], [-1.0, -1.0]])
    mask = torch.tensor([[1, 1], [1, 0]], dtype=torch.bool)
    loss = clipped_token_loss(logps, old, adv, mask, clip_eps=0.2)
    assert loss.item() == pytest.approx(0.325, rel=1e-6)
    # with ref = logp + ln 2: k3 = 2 - ln 2 - 1 on every token; beta 0.04 adds 0.04 (1 - ln 2)
    ref = logps + math.log(2.0)
    loss_kl = clipped_token_loss(logps, old, adv, mask, clip_eps=0.2, ref_logps=ref, beta_kl=0.04)
    assert loss_kl.item() == pytest.approx(0.325 + 0.04 * (1 - math.log(2)), rel=1e-6)


def test_k3_is_nonnegative_and_zero_at_equality():
    x = torch.linspace(-5, 0, 11)
    assert torch.all(k3_kl(x, x) == 0)
    assert torch.all(k3_kl(x, x.flip(0)) >= 0)


def grpo_loop(logps, old, seq_adv, mask, clip_eps, ref, beta):
    """GRPO's objective (BASELINES 1) written as a plain loop, negated."""
    total = 0.0
    for i in range(len(logps)):
        valid = [t for t in range(len(logps[i])) if mask[i][t]]
        acc = 0.0
        for t in valid:
            rho = math.exp(logps[i][t] - old[i][t])
            clipped = min(max(rho, 1 - clip_eps), 1 + clip_eps)
            d = math.exp(ref[i][t] - logps[i][t]) - (ref[i][t] - logps[i][t]) - 1
            acc += min(rho * seq_adv[i], clipped * seq_adv[i]) - beta * d
        total += acc / max(len(valid), 1)
    return -total / len(logps)


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 5),
    st.integers(1, 7),
    st.integers(0, 2**31 - 1),
    st.sampled_from([0.1, 0.2]),
    st.sampled_from([0.0, 0.04]),
)
def test_equals_grpo_when_advantage_is_constant_per_sequence(B, T, seed, clip_eps, beta):
    g = torch.Generator().manual_seed(seed)
    logps = -torch.rand(B, T, generator=g, dtype=torch.float64) * 3
    old = logps + (torch.rand(B, T, generator=g, dtype=torch.float64) - 0.5)
    ref = logps + (torch.rand(B, T, generator=g, dtype=torch.float64) - 0.5)
    seq_adv = torch.randn(B, generator=g, dtype=torch.float64)
    mask = torch.rand(B, T, generator=g) > 0.3
    got = clipped_token_loss(
        logps,
        old,
        seq_adv.unsqueeze(1).expand(B, T),
        mask,
        clip_eps=clip_eps,
        ref_logps=ref,
        beta_kl=beta,
    )
    expected = grpo_loop(
        logps.tolist(), old.tolist(), seq_adv.tolist(), mask.tolist(), clip_eps, ref.tolist(), beta
    )
    assert got.item() == pytest.approx(expected, rel=1e-9, abs=1e-12)
    # [B] advantages broadcast the same way
    again = clipped_token_loss(
        logps, old, seq_adv, mask, clip_eps=clip_eps, ref_logps=ref, beta_kl=beta
    )
    assert again.item() == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_gradient_flows_only_through_logps():
    logps = torch.full((1, 3), -1.0, requires_grad=True)
    loss = clipped_token_loss(
        logps,
        torch.full((1, 3), -1.0),
        torch.ones(1, 3),
        torch.ones(1, 3, dtype=torch.bool),
        clip_eps=0.2,
    )
    loss.backward()
    # d/dlogp of -(1/3) sum rho * A at rho = 1 is -1/3 per token
    torch.testing.assert_close(logps.grad, torch.full((1, 3), -1 / 3))


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(clip_eps=0.0), "clip_eps"),
        (dict(beta_kl=0.1), "ref_logps is required"),
        (dict(beta_kl=-0.1), "beta_kl"),
        (dict(clip_eps_high=-1.0), "clip_eps_high"),
    ],
)
def test_bad_input_raises(kw, match):
    x = torch.zeros(2, 3)
    with pytest.raises(ValueError, match=match):
        clipped_token_loss(x, x, x, x.bool(), **{"clip_eps": 0.2, **kw})


def test_mismatched_shapes_raise():
    x = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="old_logps"):
        clipped_token_loss(x, torch.zeros(2, 4), x, x.bool(), clip_eps=0.2)
    with pytest.raises(ValueError, match="advantages"):
        clipped_token_loss(x, x, torch.zeros(3, 3), x.bool(), clip_eps=0.2)
