"""GC2PO token advantages (SPEC 2.5): a hand-worked case and property tests."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gc2po.core.advantages import (
    gc2po_token_advantages,
    token_advantages,
    trajectory_token_rewards,
    truncated_mean,
)
from gc2po.core.groups import dr_grpo_advantage, group_normalised, grpo_advantage

KW = dict(lambda_cf=0.8, trunc_frac=0.0, adv_clip=10.0)


def hand_case():
    """Two prompts x three completions, T = 4, worked out by hand below.

    Prompt 1 (lambda_cf = 0.8):
      a: episodes [0,0,1,1], -logp [1,1,2,2] -> episode sums 2, 4 -> w = [.5,.5,.5,.5]
         R_out 1, L 2, R_cf [.5, 1] -> S = [.5+.4, .5+.8] = [.9, 1.3]
         r = [.45,.45,.65,.65], r~ = 2.2/4 = .55
      b: episodes [0,0,0,pad], -logp [1,2,1] -> w = [.25,.5,.25]
         R_out 0, L 1, R_cf [.5] -> S = .4; r = [.1,.2,.1], r~ = .4/3 = 2/15
      c: episodes [0,1,1,1], -logp all 0 -> uniform weights [1, 1/3, 1/3, 1/3]
         R_out 1, L 2, R_cf [.25, .5] -> S = [.7, .9]; r = [.7,.3,.3,.3], r~ = 1.6/4 = .4
      mean r~ = (.55 + 2/15 + .4)/3 = 13/36 = .361111
      std (population) = sqrt(((17/90)^2 + (41/180)^2 + (7/180)^2)/3) = .1723118
      A^ = (r~ - 13/36)/(.1723118 + 1e-4) = [1.0955682, -1.3211263, .2255582]
      A_{k,t} = A^_k r_{k,t}/r~_k:
         a: 1.0955682 * [.45,.45,.65,.65]/.55
         b: -1.3211263 * [.1,.2,.1]/(2/15) = -1.3211263 * [.75, 1.5, .75]
         c: .2255582 * [.7,.3,.3,.3]/.4 = .2255582 * [1.75,.75,.75,.75]
    Prompt 2: all R_out = 0, one episode each
      a: -logp [1,1,0,0] with the last two masked -> w [.5,.5], R_cf [1] -> S .8, r~ .4
      b: same tokens, R_cf [.5] -> S .4, r [.2,.2], r~ .2
      c: empty completion (all masked) -> r~ 0
      mean .2, std sqrt(.08/3) = .1632993; A^ = [1.2239953, 0, -1.2239953]
      a: 1.2239953 * [.4,.4]/.4 (a wrong answer with a good episode gets a positive advantage)
      b: 0; c: nothing to advantage.
    """
    episode_ids = torch.tensor(
        [
            [[0, 0, 1, 1], [0, 0, 0, -1], [0, 1, 1, 1]],
            [[0, 0, -1, -1], [0, 0, -1, -1], [-1, -1, -1, -1]],
        ]
    )
    mask = episode_ids >= 0
    old_logps = -torch.tensor(
        [
            [[1.0, 1, 2, 2], [1, 2, 1, 0], [0, 0, 0, 0]],
            [[1.0, 1, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0]],
        ]
    )
    r_out = torch.tensor([[1.0, 0, 1], [0, 0, 0]])
    r_cf = torch.tensor(
        [
            [[0.5, 1.0], [0.5, 9.9], [0.25, 0.5]],  # 9.9: an unused slot, must be ignored
            [[1.0, 0.0], [0.5, 0.0], [0.0, 0.0]],
        ]
    )
    a1 = [1.0955682, -1.3211263, 0.2255582]
    expected = torch.tensor(
        [
            [
                [a1[0] * x / 0.55 for x in (0.45, 0.45, 0.65, 0.65)],
                [a1[1] * x for x in (0.75, 1.5, 0.75)] + [0.0],
                [a1[2] * x for x in (1.75, 0.75, 0.75, 0.75)],
            ],
            [[1.2239953, 1.2239953, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],
        ]
    )
    return r_out, episode_ids, r_cf, old_logps, mask, expected


def both_groups(r_out, ids, r_cf, old_logps, mask) -> torch.Tensor:
    """Token advantages of the hand case's two groups at once: [2, 3, T]."""
    flat = [x.reshape(6, *x.shape[2:]) for x in (r_out, ids, r_cf, old_logps, mask)]
    return gc2po_token_advantages(*flat, group_size=3, **KW).token_advantages.view(2, 3, -1)


def test_hand_computed_two_prompts_three_completions():
    r_out, ids, r_cf, old_logps, mask, expected = hand_case()
    got = both_groups(r_out, ids, r_cf, old_logps, mask)
    torch.testing.assert_close(got, expected, atol=2e-6, rtol=1e-5)
    # the public single-group function gives the same per prompt
    for g in range(2):
        one = token_advantages(r_out[g], ids[g], r_cf[g], old_logps[g], mask[g], **KW)
        torch.testing.assert_close(one, expected[g], atol=2e-6, rtol=1e-5)


def test_truncated_mean_by_hand():
    values = torch.arange(1.0, 21.0).unsqueeze(0)  # 1..20
    mask = torch.ones_like(values, dtype=torch.bool)
    # 5% of 20 = 1 value dropped at each tail -> mean(2..19) = 10.5
    assert truncated_mean(values, mask, 0.05).item() == pytest.approx(10.5)
    # 19 values: floor(.95) = 0 dropped -> plain mean 10
    mask[0, -1] = False
    assert truncated_mean(values, mask, 0.05).item() == pytest.approx(10.0)
    # an outlier is removed: [0, 1, 1, ..., 1, 100] with 20 entries
    spiky = torch.ones(1, 20)
    spiky[0, 0], spiky[0, -1] = 0.0, 100.0
    assert truncated_mean(
        spiky, torch.ones_like(spiky, dtype=torch.bool), 0.05
    ).item() == pytest.approx(1.0)
    assert truncated_mean(values, torch.zeros_like(mask), 0.05).item() == 0.0


def test_mean_weight_norm_removes_episode_count_incentive():
    # same tokens, one trajectory cut into 1 episode vs 4 episodes, equal R_cf everywhere
    ids = torch.tensor([[0, 0, 0, 0], [0, 1, 2, 3]])
    mask = torch.ones_like(ids, dtype=torch.bool)
    logps = torch.full((2, 4), -1.0)
    r_cf = torch.full((2, 4), 0.5)
    r_out = torch.tensor([0.0, 0.0])
    summed = token_advantages(r_out, ids, r_cf, logps, mask, episode_weight_norm="sum", **KW)
    assert summed[1].sum() > 0 > summed[0].sum()  # the paper's form favours more episodes
    averaged = token_advantages(r_out, ids, r_cf, logps, mask, episode_weight_norm="mean", **KW)
    torch.testing.assert_close(averaged, torch.zeros_like(averaged))


def test_reduces_to_grpo_for_single_episode_uniform_surprise():
    # lambda_cf = 0, one episode, equal lengths, equal surprise, no truncation: r~_k = R_out/T,
    # so A^ is GRPO's advantage of R_out (epsilon scaled by T) and every token of a correct
    # completion carries it. Incorrect completions get r = 0 and hence A = 0 (paper's form).
    r_out = torch.tensor([1.0, 0.0, 1.0, 1.0])
    T = 5
    ids = torch.zeros(4, T, dtype=torch.long)
    mask = torch.ones(4, T, dtype=torch.bool)
    got = token_advantages(
        r_out,
        ids,
        torch.zeros(4, 1),
        torch.full((4, T), -0.7),
        mask,
        lambda_cf=0.0,
        trunc_frac=0.0,
        adv_clip=10.0,
    )
    scores = r_out / T
    grpo = (scores - scores.mean()) / (scores.std(unbiased=False) + 1e-4)
    for k in range(4):
        expected = grpo[k] if r_out[k] > 0 else 0.0
        torch.testing.assert_close(got[k], torch.full((T,), float(expected)))


def test_all_equal_rewards_give_zero_advantages():
    ids = torch.tensor([[0, 0, 1], [0, 0, 1], [0, 0, 1]])
    mask = torch.ones_like(ids, dtype=torch.bool)
    adv = token_advantages(
        torch.ones(3), ids, torch.full((3, 2), 0.7), torch.full((3, 3), -0.5), mask, **KW
    )
    assert torch.equal(adv, torch.zeros_like(adv))


def test_sequence_level_estimators():
    rewards = torch.tensor([[1.0, 0.0, 1.0, 0.0]])
    torch.testing.assert_close(dr_grpo_advantage(rewards), torch.tensor([[0.5, -0.5, 0.5, -0.5]]))
    torch.testing.assert_close(
        grpo_advantage(rewards), torch.tensor([[1.0, -1.0, 1.0, -1.0]]) * 0.5 / (0.5 + 1e-4)
    )


def test_unscored_rewards_are_left_out_of_the_group_and_get_zero():
    # as TRL: a completion no reward function scored (NaN) does not enter mean or std
    rewards = torch.tensor([[1.0, float("nan"), 0.0, float("inf")]])
    torch.testing.assert_close(
        grpo_advantage(rewards), torch.tensor([[0.5 / (0.5 + 1e-4), 0.0, -0.5 / (0.5 + 1e-4), 0.0]])
    )
    torch.testing.assert_close(dr_grpo_advantage(rewards), torch.tensor([[0.5, 0.0, -0.5, 0.0]]))
    assert torch.equal(grpo_advantage(torch.full((1, 3), float("nan"))), torch.zeros(1, 3))


def test_group_normalised_is_independent_of_row_order_and_process_split():
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.5, 0.0])
    expected = grpo_advantage(rewards.view(2, 4)).reshape(-1)
    perm = torch.tensor([5, 2, 7, 0, 3, 6, 1, 4])
    torch.testing.assert_close(group_normalised(rewards[perm], perm, 4), expected[perm])
    # two "processes" holding rows {5,2,7,0} and {3,6,1,4}: gather concatenates both halves
    halves = [perm[:4], perm[4:]]
    for rank in range(2):
        calls = iter([rewards[torch.cat(halves)], torch.cat(halves)])
        got = group_normalised(
            rewards[halves[rank]], halves[rank], 4, gather=lambda t, c=calls: next(c)
        )
        torch.testing.assert_close(got, expected[halves[rank]])
    with pytest.raises(ValueError, match="exactly once"):
        group_normalised(rewards, torch.zeros(8, dtype=torch.long), 4)


def test_gc2po_entry_point_with_a_split_group_equals_one_process():
    r_out, ids, r_cf, old_logps, mask, expected = hand_case()
    flat = [x.reshape(6, *x.shape[2:]) for x in (r_out, ids, r_cf, old_logps, mask)]
    kw = dict(group_size=3, **KW)
    whole = gc2po_token_advantages(*flat, **kw).token_advantages
    torch.testing.assert_close(whole, expected.reshape(6, 4), atol=1e-5, rtol=1e-5)
    # a shuffled batch split over two processes: rank r holds rows ranks[r]; what each rank would
    # send through the all-gather (its trajectory scores, then its row indices) is computed here
    perm = torch.tensor([4, 0, 5, 2, 1, 3])
    ranks = [perm[:3], perm[3:]]
    sent_scores = [
        trajectory_token_rewards(
            flat[0][r],
            flat[1][r],
            flat[2][r],
            flat[3][r],
            flat[4][r],
            lambda_cf=KW["lambda_cf"],
            trunc_frac=KW["trunc_frac"],
        )[1]
        for r in ranks
    ]
    for rank in ranks:
        gathered = iter([torch.cat(sent_scores), torch.cat(ranks)])
        got = gc2po_token_advantages(
            *[x[rank] for x in flat], row_index=rank, gather=lambda t, g=gathered: next(g), **kw
        )
        torch.testing.assert_close(got.token_advantages, whole[rank])


def test_mismatched_shapes_raise():
    r_out, ids, r_cf, old_logps, mask, _ = hand_case()
    with pytest.raises(ValueError, match="old_logps"):
        token_advantages(r_out[0], ids[0], r_cf[0], old_logps[0, :, :3], mask[0], **KW)
    with pytest.raises(ValueError, match="r_out"):
        token_advantages(r_out[0, :2], ids[0], r_cf[0], old_logps[0], mask[0], **KW)
    with pytest.raises(ValueError, match="episode_ids hold an index"):
        token_advantages(r_out[0], ids[0] + 5, r_cf[0], old_logps[0], mask[0], **KW)


@st.composite
def groups(draw):
    K = draw(st.integers(2, 6))
    T = draw(st.integers(1, 12))
    L = draw(st.integers(1, 4))
    rows_ids, rows_mask, rows_logp = [], [], []
    for _ in range(K):
        length = draw(st.integers(0, T))  # zero-length and one-token completions included
        bounds = sorted(draw(st.lists(st.integers(0, length), min_size=L - 1, max_size=L - 1)))
        ids = [sum(t >= b for b in bounds) for t in range(length)] + [-1] * (T - length)
        rows_ids.append(ids)
        rows_mask.append([t < length for t in range(T)])
        zero_surprise = draw(st.booleans())
        rows_logp.append([0.0 if zero_surprise else -draw(st.floats(0, 20)) for _ in range(T)])
    all_equal = draw(st.booleans())
    r_out = [1.0] * K if all_equal else [float(draw(st.integers(0, 1))) for _ in range(K)]
    r_cf = [[draw(st.floats(0, 3)) for _ in range(L)] for _ in range(K)]
    return (
        torch.tensor(r_out),
        torch.tensor(rows_ids),
        torch.tensor(r_cf),
        torch.tensor(rows_logp),
        torch.tensor(rows_mask),
    )


def _loop_advantages(r_out, ids, r_cf, logps, mask, lambda_cf, trunc_frac, norm, adv_clip=10.0):
    """A plain loop over trajectories and tokens (cleanrl-style reference).
    Returns (A^ [K], A [K, T])."""
    K, T = ids.shape
    scores, rewards_per_k = [], []
    for k in range(K):
        toks = [t for t in range(T) if mask[k, t]]
        L = max(len({int(ids[k, t]) for t in toks}), 1)
        rewards = {}
        for t in toks:
            e = int(ids[k, t])
            members = [s for s in toks if int(ids[k, s]) == e]
            total = sum(max(-float(logps[k, s]), 0.0) for s in members)
            w = max(-float(logps[k, t]), 0.0) / total if total > 0 else 1 / len(members)
            if norm == "mean":
                w *= len(members)
            rewards[t] = (float(r_out[k]) / L + lambda_cf * float(r_cf[k, e])) * w
        ordered = sorted(rewards.values())
        drop = math.floor(trunc_frac * len(ordered))
        if len(ordered) - 2 * drop <= 0:
            drop = 0
        kept = ordered[drop : len(ordered) - drop]
        scores.append(sum(kept) / len(kept) if kept else 0.0)
        rewards_per_k.append(rewards)
    mean = sum(scores) / K
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / K)
    seq = [(s - mean) / (std + 1e-4) for s in scores]
    adv = torch.zeros(K, T)
    for k in range(K):
        for t, r in rewards_per_k[k].items():
            adv[k, t] = min(max(seq[k] * r / max(scores[k], 1e-8), -adv_clip), adv_clip)
    return torch.tensor(seq), adv


@settings(max_examples=300, deadline=None)
@given(
    groups(),
    st.sampled_from([0.0, 0.05, 0.2]),
    st.sampled_from([0.0, 0.8, 1.0]),
    st.sampled_from(["sum", "mean"]),
)
def test_properties_finite_masked_zero_sign_and_loop_equivalence(
    group, trunc_frac, lambda_cf, norm
):
    r_out, ids, r_cf, logps, mask = group
    adv = token_advantages(
        r_out,
        ids,
        r_cf,
        logps,
        mask,
        lambda_cf=lambda_cf,
        trunc_frac=trunc_frac,
        adv_clip=10.0,
        episode_weight_norm=norm,
    )
    for mask_as in (mask.float(), mask.long()):  # 0/1 float and int masks give the same result
        torch.testing.assert_close(
            token_advantages(
                r_out,
                ids,
                r_cf,
                logps,
                mask_as,
                lambda_cf=lambda_cf,
                trunc_frac=trunc_frac,
                adv_clip=10.0,
                episode_weight_norm=norm,
            ),
            adv,
        )
    assert torch.isfinite(adv).all()
    assert (adv[~mask] == 0).all()
    assert adv.abs().max() <= 10.0
    seq_adv, loop_adv = _loop_advantages(r_out, ids, r_cf, logps, mask, lambda_cf, trunc_frac, norm)
    torch.testing.assert_close(adv, loop_adv, atol=1e-3, rtol=1e-3)
    # every nonzero token advantage has the sign of its trajectory's group advantage (where
    # that advantage is above float32 rounding of equal trajectory scores; below it, the
    # closeness check above already bounds the tokens by 1e-3)
    for k in range(len(r_out)):
        if abs(seq_adv[k]) > 1e-4:
            nonzero = adv[k][adv[k] != 0]
            assert (torch.sign(nonzero) == torch.sign(seq_adv[k])).all()


def test_scale_invariance_of_outcome_and_cf_rewards():
    # scaling R_out and R_cf by c > 0 scales every r and r~ by c: A^ is unchanged up to the
    # 1e-4 std epsilon, and so is A (the ratio r / r~ is scale free)
    r_out, ids, r_cf, logps, mask, _ = hand_case()
    base = both_groups(r_out, ids, r_cf, logps, mask)
    scaled = both_groups(3 * r_out, ids, 3 * r_cf, logps, mask)
    torch.testing.assert_close(scaled, base, atol=2e-3, rtol=2e-3)
    # scaling the surprise (old log-probs) changes nothing: weights are normalised per episode
    torch.testing.assert_close(both_groups(r_out, ids, r_cf, 5 * logps, mask), base)


@settings(max_examples=200, deadline=None)
@given(
    groups(),
    st.lists(
        st.sampled_from([0.0, 1.0, float("nan"), float("inf"), -float("inf")]),
        min_size=6,
        max_size=6,
    ),
    st.sampled_from([0.0, float("nan"), float("inf")]),
    st.sampled_from([0.0, float("nan"), -float("inf")]),
)
def test_no_nan_or_inf_leaves_for_any_input(group, rewards, bad_cf, bad_logp):
    r_out, ids, r_cf, logps, mask = group
    K = r_out.shape[0]
    r_out = torch.tensor(rewards[:K])
    r_cf = r_cf.clone()
    r_cf[0, 0] = bad_cf
    logps = logps.clone()
    logps[-1, 0] = bad_logp
    for mask_as in (mask, mask.float(), mask.int()):
        adv = token_advantages(
            r_out, ids, r_cf, logps, mask_as, lambda_cf=0.8, trunc_frac=0.05, adv_clip=10.0
        )
        assert torch.isfinite(adv).all()
        assert (adv[~mask] == 0).all()
        unscored = ~torch.isfinite(r_out)
        assert (adv[unscored] == 0).all()  # an unscored completion gets no advantage


def test_an_unscored_completion_does_not_change_the_others():
    r_out, ids, r_cf, logps, mask, expected = hand_case()
    # append a fourth completion to prompt 1 that no reward function scored
    ids4 = torch.cat([ids[0], ids[0][:1]])
    adv = token_advantages(
        torch.cat([r_out[0], torch.tensor([float("nan")])]),
        ids4,
        torch.cat([r_cf[0], r_cf[0][:1]]),
        torch.cat([logps[0], logps[0][:1]]),
        torch.cat([mask[0], mask[0][:1]]),
        **KW,
    )
    torch.testing.assert_close(adv[:3], expected[0], atol=1e-5, rtol=1e-5)
    assert torch.equal(adv[3], torch.zeros(4))
