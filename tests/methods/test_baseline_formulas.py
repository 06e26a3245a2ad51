"""The baselines' formulas on hand-computed cases (BASELINES 3-7)."""

import math

import pytest
import torch

from gc2po.core.baselines import (
    gcpo_reference_logps,
    gcpo_upsilon,
    gvpo_loss,
    gvpo_on_policy_loss,
    length_penalty_rewards,
)
from gc2po.core.step_baselines import (
    label_rollout_steps,
    progress_rewards,
    rest_selection,
    rest_value_targets,
    reward_to_go_advantages,
)


def test_rest_value_targets_of_a_correct_three_step_chain():
    signs, min_steps = label_rollout_steps(3, True, 0, [])
    assert signs == [1, 1, 1] and min_steps == [2, 1, 0]
    assert rest_value_targets(signs, min_steps) == pytest.approx([1 / 3, 2 / 3, 1.0])


def test_rest_value_targets_with_a_rescuing_branch_and_dead_steps():
    # wrong rollout of 3 steps, a correct 1-step branch after step 2: steps 1-2 live
    # (m = 2, 1), step 3 dead (s = -1, inherits m = 1)
    signs, min_steps = label_rollout_steps(3, False, 2, [(False, 2), (True, 1), (True, 4)])
    assert signs == [1, 1, -1] and min_steps == [2, 1, 1]
    # v1 = 1/3; v2 = 1/3 + 2/3 * 1/2 = 2/3; v3 = max(0, 2/3 - 1/3 * 1/2) = 1/2
    assert rest_value_targets(signs, min_steps) == pytest.approx([1 / 3, 2 / 3, 1 / 2])
    # no correct leaf anywhere: values stay at 0
    assert rest_value_targets(*label_rollout_steps(2, False, 1, [(False, 1)])) == [0.0, 0.0]


def gvpo_weights(rewards: torch.Tensor, log_ratio_sums: torch.Tensor, beta: float) -> torch.Tensor:
    """The paper's GVPO per-sample weights (the reference for gvpo_loss's gradient) of one or more
    groups [G, K]: w_i = (r_i - mean r) - beta (Delta_i - mean Delta), Delta_i = sum_t log
    pi_theta/pi_old. They sum to zero in every group (the partition function cancels)."""
    centered_r = rewards - rewards.mean(-1, keepdim=True)
    centered_d = log_ratio_sums - log_ratio_sums.mean(-1, keepdim=True)
    return centered_r - beta * centered_d


def test_gvpo_weights_sum_to_zero_and_loss_gradient_matches():
    g = torch.Generator().manual_seed(0)
    rewards = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    deltas = torch.randn(2, 4, generator=g)
    weights = gvpo_weights(rewards, deltas, beta=0.1)
    torch.testing.assert_close(weights.sum(-1), torch.zeros(2), atol=1e-6, rtol=0)
    # gradient of the loss w.r.t. each sequence's log-prob sum is -beta/(K-1) * w_i
    logps = torch.zeros(8, 3, requires_grad=True)
    old = torch.zeros(8, 3)
    old[:, 0] = -deltas.reshape(-1) / 1.0  # sum_t (logp - old) = delta_i (on token 0)
    mask = torch.ones(8, 3)
    centered = (rewards - rewards.mean(-1, keepdim=True)).reshape(-1)
    order = torch.tensor([3, 0, 6, 1, 5, 2, 7, 4])  # rows may come shuffled
    loss = gvpo_loss(
        logps[order],
        old[order],
        mask[order],
        (torch.arange(8) // 4)[order],
        centered[order],
        beta=0.1,
    )
    loss.backward()
    expected = -0.1 / 3 * weights.reshape(-1) / 2  # mean over the 2 groups
    torch.testing.assert_close(logps.grad[:, 0], expected, atol=1e-6, rtol=1e-5)
    with pytest.raises(ValueError, match=">= 2 completions"):
        gvpo_loss(logps[:1], old[:1], mask[:1], torch.tensor([0]), centered[:1], beta=0.1)


def test_mrt_progress_terms_telescope():
    success = torch.tensor([[0.25, 0.5, 1.0, 0.0], [0.5, 0.0, 0.0, 0.0]])  # J_0..J_{L-1}
    num_boundaries = torch.tensor([3, 1])
    r_out = torch.tensor([0.0, 1.0])
    steps = progress_rewards(success, num_boundaries, r_out, alpha=1.0)
    # row 0: J = .25, .5, 1.0, then R_out = 0 -> .25, .5, -1.0; row 1: J_0 = .5 -> R_out 1: +.5
    torch.testing.assert_close(steps, torch.tensor([[0.25, 0.5, -1.0, 0.0], [0.5, 0.0, 0.0, 0.0]]))
    torch.testing.assert_close(steps.sum(-1), r_out - success[:, 0])  # alpha (J_end - J_0)


def test_reward_to_go_advantages_by_hand():
    # K=2: steps rewards [1, 3] ending at tokens 1, 3; [2] ending at 2; group mean 2, std sqrt(2/3)
    rewards = torch.tensor([[1.0, 3.0], [2.0, 0.0]])
    ends = torch.tensor([[1, 3], [2, -1]])
    step_mask = torch.tensor([[True, True], [True, False]])
    token_mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    adv = reward_to_go_advantages(rewards, ends, step_mask, token_mask)
    z = 1 / (math.sqrt(2 / 3) + 1e-4)
    expected = torch.tensor([[0.0, 0.0, z, z], [0.0, 0.0, 0.0, 0.0]])  # (-1+1)z for t<=1, then +1z
    torch.testing.assert_close(adv, expected, atol=1e-5, rtol=1e-5)


def test_gcpo_upsilon_and_reference_by_hand():
    z = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # zbar = [.5, .5]
    ctx = torch.tensor([[0.5, -0.5], [0.0, 0.0]])
    alt = torch.zeros(2, 2)
    # row 0: direction [1, 0] -> cos 1; row 1: direction [.5, .5] -> cos 1/sqrt(2)
    torch.testing.assert_close(
        gcpo_upsilon(z, ctx, alt, alpha=2.0), torch.tensor([2.0, 2 / math.sqrt(2)])
    )
    p = torch.log(torch.tensor([[0.5, 0.2, 0.9]]))
    ref = gcpo_reference_logps(
        p, torch.log(torch.tensor([[0.1, 0.6, 0.2]])), torch.log(torch.tensor([[0.3, 0.3, 0.5]]))
    )
    # 0.5 - 0.1 + 0.3 = 0.7; 0.2 - 0.6 + 0.3 < 0 -> 1e-6; 0.9 - 0.2 + 0.5 > 1 -> 1
    torch.testing.assert_close(ref.exp(), torch.tensor([[0.7, 1e-6, 1.0]]), atol=1e-7, rtol=1e-5)


def test_length_penalty_by_hand():
    correct = torch.tensor([[1.0, 1.0, 0.0, 1.0]])
    lengths = torch.tensor([[10.0, 20.0, 5.0, 30.0]])
    # correct lengths 10, 20, 30: mean 20, population std sqrt(200/3)
    std = math.sqrt(200 / 3)
    sig = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    expected = [1 - 0.1 * sig(-10 / std), 1 - 0.1 * 0.5, 0.0, 1 - 0.1 * sig(10 / std)]
    torch.testing.assert_close(
        length_penalty_rewards(correct, lengths, 0.1), torch.tensor([expected])
    )


def test_rest_selection_by_hand():
    # group 1: rows 0,2 correct, row 2 above the threshold -> only row 2; group 2: correct rows
    # all below it -> the best correct one (row 5); group 3: none correct -> none
    r_out = torch.tensor([1.0, 0, 1, 0, 1, 1, 0, float("nan"), 0])
    min_value = torch.tensor([0.1, 0.9, 0.5, 0.0, 0.05, 0.15, 0.9, 0.9, 0.9])
    torch.testing.assert_close(
        rest_selection(r_out, min_value, 3, 0.2), torch.tensor([0.0, 0, 1, 0, 0, 1, 0, 0, 0])
    )


def test_length_penalty_leaves_unscored_completions_out():
    correct = torch.tensor([[1.0, float("nan"), 1.0, 0.0]])
    lengths = torch.tensor([[10.0, 1.0, 30.0, 5.0]])
    shaped = length_penalty_rewards(correct, lengths, 0.5)
    assert math.isnan(shaped[0, 1])
    torch.testing.assert_close(
        shaped[0, [0, 2, 3]],
        length_penalty_rewards(correct[:, [0, 2, 3]], lengths[:, [0, 2, 3]], 0.5)[0],
    )


def test_gvpo_loss_leaves_unscored_rows_out():
    torch.manual_seed(0)
    logps, old = torch.randn(4, 3), torch.randn(4, 3)
    mask = torch.ones(4, 3)
    scored = torch.tensor([True, True, False, True])
    centred = torch.tensor([0.5, -0.5, 0.0, 0.0])
    groups = torch.tensor([0, 0, 0, 0])
    got = gvpo_loss(logps, old, mask, groups, centred, beta=0.1, scored=scored)
    expected = gvpo_loss(
        logps[scored], old[scored], mask[scored], groups[scored], centred[scored], beta=0.1
    )
    torch.testing.assert_close(got, expected)
    # a group left with one scored completion contributes 0 (nothing to compare it with)
    lonely = gvpo_loss(
        logps,
        old,
        mask,
        torch.tensor([0, 0, 1, 1]),
        centred,
        beta=0.1,
        scored=torch.tensor([True, True, False, True]),
    )
    torch.testing.assert_close(
        lonely,
        gvpo_loss(logps[:2], old[:2], mask[:2], torch.tensor([0, 0]), centred[:2], beta=0.1) / 2,
    )


def test_gvpo_on_policy_loss_has_the_group_loss_gradient_and_no_group_layout():
    torch.manual_seed(1)
    K, T = 4, 5
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0])
    centred = (rewards.view(2, K) - rewards.view(2, K).mean(-1, keepdim=True)).reshape(-1)
    mask = torch.rand(8, T) > 0.2
    old = -torch.rand(8, T)
    grads = {}
    for name in ("group", "per_row", "shuffled_halves"):
        logps = old.clone().requires_grad_(True)  # on-policy: theta = theta_old
        if name == "group":
            loss = gvpo_loss(logps, old, mask, torch.arange(8) // K, centred, beta=0.1)
        elif name == "per_row":
            loss = gvpo_on_policy_loss(
                logps, old, mask, centred, torch.full((8,), 4.0), beta=0.1, group_size=K
            )
        else:  # two micro-batches of shuffled rows, averaged as gradient accumulation does
            perm = torch.tensor([5, 0, 7, 2, 1, 4, 6, 3])
            halves = [perm[:4], perm[4:]]
            loss = (
                sum(
                    gvpo_on_policy_loss(
                        logps[h],
                        old[h],
                        mask[h],
                        centred[h],
                        torch.full((4,), 4.0),
                        beta=0.1,
                        group_size=K,
                    )
                    for h in halves
                )
                / 2
            )
        assert abs(loss.item()) < 1e-7 or name == "group"
        loss.backward()
        grads[name] = logps.grad
    torch.testing.assert_close(grads["per_row"], grads["group"])
    torch.testing.assert_close(grads["shuffled_halves"], grads["group"])
