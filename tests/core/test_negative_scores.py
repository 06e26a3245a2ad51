"""A negative trajectory score (a reward that can go below 0, outside the paper's R_out in
{0, 1}) never flips the sign of a trajectory's advantage on its tokens (issue 26)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gc2po.core.advantages import gc2po_token_advantages, token_advantages, trajectory_token_rewards

KW = dict(trunc_frac=0.0, adv_clip=10.0)


def test_negative_outcome_by_hand():
    # R_out [-1, 1], one episode of two tokens each, uniform surprise: r = [-.5, -.5], [.5, .5],
    # r~ = -.5, .5; mean 0, std .5 -> A^ = -+.5 / (.5 + 1e-4); A = A^ r / r~ = A^ on every token
    ids = torch.zeros(2, 2, dtype=torch.long)
    adv = token_advantages(
        torch.tensor([-1.0, 1.0]),
        ids,
        torch.zeros(2, 1),
        -torch.ones(2, 2),
        ids >= 0,
        lambda_cf=0.8,
        **KW,
    )
    a_hat = 0.5 / 0.5001
    torch.testing.assert_close(adv, torch.tensor([[-a_hat, -a_hat], [a_hat, a_hat]]))
    # with R_cf .5 (lambda_cf .8): S = -.6, 1.4; r~ = -.3, .7; mean .2, std .5: the same A^, and
    # r / r~ = 1 on every token
    adv = token_advantages(
        torch.tensor([-1.0, 1.0]),
        ids,
        torch.full((2, 1), 0.5),
        -torch.ones(2, 2),
        ids >= 0,
        lambda_cf=0.8,
        **KW,
    )
    torch.testing.assert_close(adv, torch.tensor([[-a_hat, -a_hat], [a_hat, a_hat]]))


def test_zero_score_takes_the_sign_of_its_token_rewards():
    # surprise only on the last of 5 tokens, trunc_frac .2 trims it away: r~ = 0 for rows 0 and
    # 1 (R_out -1 and 1), r~ = .2 for row 2 (uniform surprise). Scores [0, 0, .2]: mean 1/15,
    # std sqrt(2/225) -> A^ = [-.7063, -.7063, 1.4127]. Rows 0 and 1 put their whole reward on
    # the last token (r = -1 and 1); dividing by the score with the sign of that reward gives
    # A^ * 1e8 -> -10 on both (the score clamped to +1e-8 would give +10 on row 0).
    ids = torch.zeros(3, 5, dtype=torch.long)
    logps = torch.tensor([[0.0, 0, 0, 0, -1], [0, 0, 0, 0, -1], [-1, -1, -1, -1, -1]])
    adv = token_advantages(
        torch.tensor([-1.0, 1.0, 1.0]),
        ids,
        torch.zeros(3, 1),
        logps,
        ids >= 0,
        lambda_cf=0.0,
        trunc_frac=0.2,
        adv_clip=10.0,
    )
    a_hat = (2 / 15) / ((2 / 225) ** 0.5 + 1e-4)
    expected = torch.tensor([[0.0, 0, 0, 0, -10], [0, 0, 0, 0, -10], [a_hat] * 5])
    torch.testing.assert_close(adv, expected)


@st.composite
def signed_groups(draw):
    """One group of K completions with rewards of either sign (and unscored ones)."""
    K, T, L = draw(st.integers(2, 6)), draw(st.integers(1, 10)), draw(st.integers(1, 3))
    ids, logps = [], []
    for _ in range(K):
        length = draw(st.integers(0, T))
        bounds = sorted(draw(st.lists(st.integers(0, length), min_size=L - 1, max_size=L - 1)))
        ids.append([sum(t >= b for b in bounds) for t in range(length)] + [-1] * (T - length))
        logps.append([-draw(st.sampled_from([0.0, 0.5, 3.0, 20.0])) for _ in range(T)])
    reward = st.one_of(st.sampled_from([-1.0, 0.0, 1.0, float("nan")]), st.floats(-5, 5))
    r_out = [draw(reward) for _ in range(K)]
    r_cf = [[draw(st.floats(0, 3)) for _ in range(L)] for _ in range(K)]
    ids = torch.tensor(ids)
    return torch.tensor(r_out), ids, torch.tensor(r_cf), torch.tensor(logps), ids >= 0


@settings(max_examples=300, deadline=None)
@given(signed_groups(), st.sampled_from([0.0, 0.8]), st.sampled_from([0.0, 0.05, 0.2]))
def test_signed_rewards_give_finite_advantages_with_the_formula_sign(group, lambda_cf, trunc_frac):
    r_out, ids, r_cf, logps, mask = group
    kw = dict(lambda_cf=lambda_cf, trunc_frac=trunc_frac)
    result = gc2po_token_advantages(
        r_out, ids, r_cf, logps, mask, group_size=len(r_out), adv_clip=10.0, **kw
    )
    adv, score, a_hat = result
    assert torch.isfinite(adv).all() and adv.abs().max() <= 10.0
    assert (adv[~mask] == 0).all() and (adv[~torch.isfinite(r_out)] == 0).all()
    token_reward, _ = trajectory_token_rewards(r_out, ids, r_cf, logps, mask, **kw)
    for k in range(len(r_out)):
        if not torch.isfinite(score[k]) or abs(a_hat[k]) < 1e-6:
            continue
        nonzero = adv[k] != 0
        if lambda_cf == 0.0:  # every token reward has the sign of R_out: A has the sign of A^
            assert (torch.sign(adv[k][nonzero]) == torch.sign(a_hat[k])).all()
        if abs(score[k]) > 1e-6:  # the sign of A^ r / r~ itself
            want = torch.sign(a_hat[k]) * torch.sign(token_reward[k]) * torch.sign(score[k])
            assert (torch.sign(adv[k][nonzero]).double() == want[nonzero]).all()


@pytest.mark.parametrize("r_out", [[-1.0, 0.0], [-0.5, -2.0, 1.0]])
def test_negative_outcomes_mirror_positive_ones(r_out):
    # lambda_cf 0 and one episode: negating every R_out negates every score and every A^, and
    # the tokens keep A^'s sign, so every token advantage is negated
    rewards = torch.tensor(r_out)
    ids = torch.zeros(len(r_out), 3, dtype=torch.long)
    logps = -torch.tensor([[1.0, 2.0, 3.0]] * len(r_out))
    args = (ids, torch.zeros(len(r_out), 1), logps, ids >= 0)
    negative = token_advantages(rewards, *args, lambda_cf=0.0, **KW)
    positive = token_advantages(-rewards, *args, lambda_cf=0.0, **KW)
    torch.testing.assert_close(negative, -positive)
