"""GVPO with unscored (NaN) completions: the on-policy per-row loss has the gradient of the group
loss over each group's n scored rows (issue 26)."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gc2po.core.baselines import group_scored_counts, gvpo_loss, gvpo_on_policy_loss
from gc2po.core.groups import dr_grpo_advantage

NAN = float("nan")


def test_one_unscored_row_by_hand():
    # K = 3, rewards [1, 0, NaN]: n = 2, c = [.5, -.5, 0]. At theta = theta_old the group loss
    # 1/(n-1) sum 1/2 (R_i - mean R - c_i)^2 has d/d log pi_{j,t} = -beta c_j / (n-1):
    # [-.05, .05, 0] per token (1/(K-1) in place of 1/(n-1) would halve it)
    rewards = torch.tensor([[1.0, 0.0, NAN]])
    centred = dr_grpo_advantage(rewards).reshape(-1)
    counts = group_scored_counts(rewards).reshape(-1)
    assert counts.tolist() == [2.0, 2.0, 2.0]
    old = -torch.rand(3, 2)
    logps = old.clone().requires_grad_(True)
    gvpo_on_policy_loss(
        logps, old, torch.ones(3, 2), centred, counts, beta=0.1, group_size=3
    ).backward()
    torch.testing.assert_close(logps.grad, torch.tensor([[-0.05, -0.05], [0.05, 0.05], [0.0, 0.0]]))


def test_on_policy_gradient_equals_the_group_loss_over_scored_rows():
    torch.manual_seed(2)
    K, T = 4, 5
    # groups with n = 3, 1, 0 and 4 scored rows
    rewards = torch.tensor(
        [[1.0, NAN, 0.0, 1.0], [NAN, 1.0, NAN, NAN], [NAN] * 4, [0.0, 1.0, 0.5, 0.0]]
    )
    centred = dr_grpo_advantage(rewards).reshape(-1)
    counts = group_scored_counts(rewards).reshape(-1)
    scored = torch.isfinite(rewards).reshape(-1)
    mask = torch.rand(16, T) > 0.2
    old = -torch.rand(16, T)
    grads = {}
    for name in ("group", "per_row", "shuffled_halves"):
        logps = old.clone().requires_grad_(True)  # on-policy: theta = theta_old
        if name == "group":
            loss = gvpo_loss(
                logps, old, mask, torch.arange(16) // K, centred, beta=0.1, scored=scored
            )
        elif name == "per_row":
            loss = gvpo_on_policy_loss(logps, old, mask, centred, counts, beta=0.1, group_size=K)
        else:  # two micro-batches of shuffled rows, averaged as gradient accumulation does
            perm = torch.randperm(16)
            loss = (
                sum(
                    gvpo_on_policy_loss(
                        logps[h], old[h], mask[h], centred[h], counts[h], beta=0.1, group_size=K
                    )
                    for h in (perm[:8], perm[8:])
                )
                / 2
            )
        loss.backward()
        assert torch.isfinite(logps.grad).all()
        grads[name] = logps.grad
    assert grads["group"][:4].abs().sum() > 0  # the partly scored group does learn
    assert (grads["group"][4:12] == 0).all()  # n < 2: nothing to compare with
    torch.testing.assert_close(grads["per_row"], grads["group"])
    torch.testing.assert_close(grads["shuffled_halves"], grads["group"])


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 5), st.integers(1, 4), st.integers(1, 4), st.data())
def test_any_pattern_of_unscored_rows_gives_the_group_gradient(K, G, T, data):
    reward = st.one_of(st.just(NAN), st.sampled_from([0.0, 1.0]), st.floats(-3, 3))
    rewards = torch.tensor(data.draw(st.lists(reward, min_size=G * K, max_size=G * K))).view(G, K)
    centred = dr_grpo_advantage(rewards).reshape(-1)
    counts = group_scored_counts(rewards).reshape(-1)
    generator = torch.Generator().manual_seed(data.draw(st.integers(0, 2**16)))
    old = -torch.rand(G * K, T, generator=generator)
    mask = torch.rand(G * K, T, generator=generator) > 0.3
    grads = []
    for loss_of in (
        lambda lp: gvpo_loss(
            lp,
            old,
            mask,
            torch.arange(G * K) // K,
            centred,
            beta=0.1,
            scored=torch.isfinite(rewards).reshape(-1),
        ),
        lambda lp: gvpo_on_policy_loss(lp, old, mask, centred, counts, beta=0.1, group_size=K),
    ):
        logps = old.clone().requires_grad_(True)
        loss_of(logps).backward()
        assert torch.isfinite(logps.grad).all()
        grads.append(logps.grad)
    torch.testing.assert_close(grads[1], grads[0])
