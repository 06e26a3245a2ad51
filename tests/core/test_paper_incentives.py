"""The paper-literal GC2PO's derived incentives (RESEARCH.md section 1), pinned on the core:
with surprise weights summing to 1 per episode, r~ = (R_out + lambda_cf sum_l R_cf_l) / T at
trunc_frac 0, so at equal content r~ falls as 1/T and more episodes raise it; every token has
its trajectory's sign; lambda_cf = 0 gives wrong trajectories no token advantage (not GRPO).
These describe the formula as written (`gc2po`), not a wish: a change to them changes the method."""

from __future__ import annotations

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gc2po.core.advantages import gc2po_token_advantages, trajectory_token_rewards
from gc2po.core.groups import grpo_advantage
from tests.core.group_builder import build, completions, split, stretch

KW = dict(trunc_frac=0.0, adv_clip=10.0)


def scores(group, lambda_cf):
    r_out, ids, r_cf, logps, mask = build(group)
    return trajectory_token_rewards(
        r_out, ids, r_cf, logps, mask, lambda_cf=lambda_cf, trunc_frac=0.0
    )[1]


@settings(max_examples=150, deadline=None)
@given(completions(), st.sampled_from([0.0, 0.4, 0.8, 1.0]), st.integers(2, 4))
def test_r_tilde_is_content_over_length_so_it_falls_as_one_over_t(group, lambda_cf, factor):
    r_tilde = scores(group, lambda_cf)
    lengths = torch.tensor([sum(n for n, _, _ in eps) for _, eps in group], dtype=torch.float64)
    content = torch.tensor(
        [r + lambda_cf * sum(v for _, v, _ in eps) for r, eps in group], dtype=torch.float64
    )
    torch.testing.assert_close(r_tilde * lengths, content, atol=1e-9, rtol=1e-9)
    # the same completions at `factor` times the tokens: r~ divided by `factor`
    longer = scores([stretch(c, factor) for c in group], lambda_cf)
    torch.testing.assert_close(longer * factor, r_tilde, atol=1e-9, rtol=1e-9)


@settings(max_examples=150, deadline=None)
@given(completions(min_tokens=2), st.sampled_from([0.4, 0.8, 1.0]), st.floats(0.01, 2), st.data())
def test_more_episodes_at_the_same_length_raise_r_tilde(group, lambda_cf, new_value, data):
    k = data.draw(st.integers(0, len(group) - 1))
    index = data.draw(st.integers(0, len(group[k][1]) - 1))
    more = [split(c, index, new_value) if i == k else c for i, c in enumerate(group)]
    before, after = scores(group, lambda_cf), scores(more, lambda_cf)
    assert after[k] > before[k]  # one more episode with R_cf > 0, the same tokens and outcome
    others = [i for i in range(len(group)) if i != k]
    torch.testing.assert_close(after[others], before[others])


@settings(max_examples=150, deadline=None)
@given(completions(), st.sampled_from([0.0, 0.05]), st.sampled_from([0.0, 0.8, 1.0]))
def test_every_token_has_the_sign_of_its_trajectory(group, trunc_frac, lambda_cf):
    r_out, ids, r_cf, logps, mask = build(group)
    result = gc2po_token_advantages(
        r_out,
        ids,
        r_cf,
        logps,
        mask,
        group_size=len(group),
        lambda_cf=lambda_cf,
        trunc_frac=trunc_frac,
        adv_clip=10.0,
    )
    seq = result.sequence_advantages.float().unsqueeze(-1)
    adv = result.token_advantages
    assert (adv * seq >= 0).all()  # no token is pushed against its trajectory
    # and where the token reward is positive, the token has exactly its trajectory's sign
    token_reward, _ = trajectory_token_rewards(
        r_out, ids, r_cf, logps, mask, lambda_cf=lambda_cf, trunc_frac=trunc_frac
    )
    strict = (token_reward > 1e-6) & (seq.abs() > 1e-3) & mask  # above float32 underflow
    assert (torch.sign(adv[strict]) == torch.sign(seq.expand_as(adv)[strict])).all()


@settings(max_examples=100, deadline=None)
@given(completions())
def test_lambda_cf_zero_gives_wrong_trajectories_zero_token_advantage(group):
    r_out, ids, r_cf, logps, mask = build(group)
    assume(0 < r_out.sum() < len(group))  # a mixed group: GRPO gives the wrong ones A < 0
    result = gc2po_token_advantages(
        r_out, ids, r_cf, logps, mask, group_size=len(group), lambda_cf=0.0, **KW
    )
    wrong = r_out == 0
    assert (result.sequence_advantages[wrong] < 0).all()
    assert (result.token_advantages[wrong] == 0).all()  # ... but their tokens get nothing
    assert (grpo_advantage(r_out.unsqueeze(0)).squeeze(0)[wrong] < 0).all()


def test_a_short_wrong_completion_outranks_long_correct_ones():
    # RESEARCH.md 1: with lambda_cf R_cf ~ 1.6, a 5-token wrong answer beats 30-token right ones
    group = [(1.0, [(10, 2.0, 1.0)] * 3), (1.0, [(10, 2.0, 1.0)] * 3), (0.0, [(5, 2.0, 1.0)])]
    r_out, ids, r_cf, logps, mask = build(group)
    seq = gc2po_token_advantages(
        r_out, ids, r_cf, logps, mask, group_size=3, lambda_cf=0.8, **KW
    ).sequence_advantages
    assert seq[2] > 0 > seq[0] == pytest.approx(float(seq[1]))
