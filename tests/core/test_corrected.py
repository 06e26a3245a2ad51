"""The corrected (additive) GC2PO, a departure from the paper: GRPO exactly at lambda_cf = 0, no
slope of the sequence advantage in T or L at equal content, |A| bounded by GRPO's plus
lambda_cf * cf_z_clip, episode signs free of the trajectory's, no NaN for any input."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gc2po.core.corrected import additive_token_advantages, flip_lambda, floor_binding_share
from gc2po.core.groups import grpo_advantage
from tests.core.group_builder import build, completions, split, stretch

KW = dict(cf_std_floor=0.1, cf_z_clip=3.0)


def corrected(group, lambda_cf, **kwargs):
    r_out, ids, r_cf, _, mask = build(group)
    return additive_token_advantages(
        r_out, ids, r_cf, mask, group_size=len(group), lambda_cf=lambda_cf, **{**KW, **kwargs}
    )


@settings(max_examples=150, deadline=None)
@given(completions(), st.sampled_from([0.0, float("nan"), float("inf")]))
def test_lambda_cf_zero_is_grpo_exactly(group, bad_cf):
    r_out, ids, r_cf, _, mask = build(group)
    r_cf[0, 0] = bad_cf  # R_cf does not matter at lambda_cf = 0, whatever it holds
    adv = additive_token_advantages(
        r_out, ids, r_cf, mask, group_size=len(group), lambda_cf=0.0, **KW
    )
    grpo = grpo_advantage(r_out.unsqueeze(0)).squeeze(0).unsqueeze(-1).expand_as(mask)
    torch.testing.assert_close(adv.token_advantages[mask], grpo[mask], atol=1e-6, rtol=0)
    assert (adv.token_advantages[~mask] == 0).all()


@settings(max_examples=150, deadline=None)
@given(completions(min_tokens=2), st.sampled_from([0.4, 0.8, 1.0]), st.integers(2, 4), st.data())
def test_no_slope_in_length_or_episode_count_at_equal_content(group, lambda_cf, factor, data):
    base = corrected(group, lambda_cf).sequence_advantages
    k = data.draw(st.integers(0, len(group) - 1))
    longer = [stretch(c, factor) if i == k else c for i, c in enumerate(group)]
    torch.testing.assert_close(
        corrected(longer, lambda_cf).sequence_advantages, base, atol=1e-9, rtol=0
    )
    index = data.draw(st.integers(0, len(group[k][1]) - 1))
    more = [split(c, index) if i == k else c for i, c in enumerate(group)]  # equal R_cf halves
    torch.testing.assert_close(
        corrected(more, lambda_cf).sequence_advantages, base, atol=1e-9, rtol=0
    )


@settings(max_examples=150, deadline=None)
@given(completions(), st.sampled_from([0.4, 0.8, 1.0]), st.sampled_from([1.0, 3.0]))
def test_advantages_stay_within_grpo_plus_lambda_z_clip(group, lambda_cf, cf_z_clip):
    result = corrected(group, lambda_cf, cf_z_clip=cf_z_clip)
    mask = build(group)[4]
    adv, outcome = result.token_advantages.double(), result.outcome_advantages.unsqueeze(-1)
    assert ((adv - outcome)[mask].abs() <= lambda_cf * cf_z_clip + 1e-6).all()
    # GRPO's |A| is at most sqrt(K - 1) (population std): the corrected one adds lambda * z_clip
    assert adv.abs().max() <= math.sqrt(len(group) - 1) + lambda_cf * cf_z_clip + 1e-6


@settings(max_examples=100, deadline=None)
@given(completions(), st.sampled_from([0.4, 0.8]))
def test_the_cf_term_redistributes_within_the_group(group, lambda_cf):
    # with no clamp binding and a spread above the floor, the R_cf part sums to zero per group
    result = corrected(group, lambda_cf, cf_z_clip=1e9, cf_std_floor=1e-9)
    cf_part = result.sequence_advantages - result.outcome_advantages
    assert abs(float(cf_part.sum())) < 1e-6


def test_an_episode_may_take_a_sign_other_than_its_trajectory():
    # a wrong completion whose second episode is the group's best by R_cf: that episode's tokens
    # get a positive advantage, the paper's stated intent its equation cannot produce
    group = [(1.0, [(3, 0.5, 1.0), (3, 0.5, 1.0)]), (0.0, [(3, 0.2, 1.0), (3, 1.5, 1.0)])]
    result = corrected(group, 0.8)
    adv = result.token_advantages
    assert result.outcome_advantages[1] < 0
    assert (adv[1, :3] < 0).all() and (adv[1, 3:] > 0).all()


def test_noise_in_r_cf_alone_moves_advantages_by_little():
    # all-correct group, R_cf differing by Monte-Carlo noise (sd 0.002): GRPO gives 0 and the
    # std floor keeps the corrected form near 0 (the paper form gives |A^| ~ 0.5, RESEARCH.md 1)
    gen = torch.Generator().manual_seed(0)
    noise = (1.9 + 0.002 * torch.randn(8, 3, generator=gen)).tolist()
    group = [(1.0, [(4, v, 1.0) for v in row]) for row in noise]
    assert corrected(group, 0.8).token_advantages.abs().max() < 0.1


@settings(max_examples=200, deadline=None)
@given(
    completions(),
    st.lists(
        st.sampled_from([0.0, 1.0, float("nan"), float("inf"), -float("inf")]),
        min_size=6,
        max_size=6,
    ),
    st.sampled_from([0.0, float("nan"), float("inf"), -float("inf")]),
    st.booleans(),
)
def test_no_nan_for_any_input(group, rewards, bad_cf, zero_vectors):
    r_out, ids, r_cf, _, mask = build(group)
    r_out = torch.tensor(rewards[: len(group)])
    r_cf[0, 0] = bad_cf
    if zero_vectors:
        r_cf.zero_(), mask[0].zero_()
    for mask_as in (mask, mask.float(), mask.int()):
        result = additive_token_advantages(
            r_out, ids, r_cf, mask_as, group_size=len(group), lambda_cf=0.8, **KW
        )
        adv = result.token_advantages
        assert torch.isfinite(adv).all() and torch.isfinite(result.sequence_advantages).all()
        assert (adv[~mask] == 0).all()
        assert (adv[~torch.isfinite(r_out)] == 0).all()  # an unscored completion gets no advantage


def test_rows_split_over_processes_give_the_same_advantages():
    group = [
        (1.0, [(3, 0.5, 1.0)]),
        (0.0, [(2, 0.2, 1.0), (2, 0.9, 1.0)]),
        (1.0, [(4, 1.1, 1.0)]),
        (0.0, [(1, 0.1, 1.0)]),
    ]
    r_out, ids, r_cf, _, mask = build(group)
    whole = additive_token_advantages(r_out, ids, r_cf, mask, group_size=2, lambda_cf=0.8, **KW)
    order = torch.tensor([3, 0, 2, 1])  # rows shuffled as TRL's loss micro-batches may hold them
    shuffled = additive_token_advantages(
        r_out[order],
        ids[order],
        r_cf[order],
        mask[order],
        group_size=2,
        lambda_cf=0.8,
        row_index=order,
        **KW,
    )
    torch.testing.assert_close(shuffled.token_advantages, whole.token_advantages[order])


def test_the_group_std_before_the_floor_is_reported_by_hand():
    # two completions of one episode each (each weighs 1): R_cf 1 and 3 -> mean 2, std 1; a
    # completion of two equal-length episodes with R_cf 0 and 2 weighs each by 1/2
    group = [(1.0, [(2, 1.0, 1.0)]), (0.0, [(3, 3.0, 1.0)])]
    torch.testing.assert_close(corrected(group, 0.8).signal_std, torch.ones(2, dtype=torch.float64))
    group = [(1.0, [(2, 0.0, 1.0), (2, 2.0, 1.0)]), (0.0, [(3, 1.0, 1.0)])]
    # mean (0 / 2 + 2 / 2 + 1) / 2 = 1; variance (1 / 2 + 1 / 2 + 0) / 2 -> std sqrt(1/2) = 0.707,
    # below a floor of 0.8, which then divides: episode 0's bonus is 0.8 * (0 - 1) / 0.8
    result = corrected(group, 0.8, cf_std_floor=0.8)
    torch.testing.assert_close(result.signal_std, torch.full((2,), 0.5**0.5, dtype=torch.float64))
    bonus = result.token_advantages[0, :2] - result.outcome_advantages[0].float()
    torch.testing.assert_close(bonus, torch.full((2,), -1.0))


def test_the_share_of_groups_where_the_floor_binds_by_hand():
    # rows shuffled (row_index 3, 1, 2, 0, 4, 5; groups of 2): group 0 has sd 1 (R_cf 1 and 3),
    # group 1 sd 0.05, group 2 no scored row with an episode (not counted)
    rows = torch.tensor([3, 1, 2, 0, 4, 5])
    std = torch.tensor([0.05, 1.0, 0.05, 1.0, 0.0, 0.0], dtype=torch.float64)
    in_group = torch.tensor([True, True, False, True, False, False])
    assert floor_binding_share(std, in_group, rows, 2, 0.1).item() == 0.5  # group 1 only
    assert floor_binding_share(std, in_group, rows, 2, 0.001).item() == 0.0  # binds nowhere
    assert floor_binding_share(std, in_group, rows, 2, 2.0).item() == 1.0
    nobody = torch.zeros(6, dtype=torch.bool)
    assert floor_binding_share(std, nobody, rows, 2, 0.1).item() == 0.0
    # from the advantages themselves: R_cf constant in a group has sd 0, which any floor replaces
    flat = corrected([(1.0, [(2, 0.5, 1.0)]), (0.0, [(3, 0.5, 1.0)])], 0.8)
    assert flat.signal_std.tolist() == [0.0, 0.0]
    share = floor_binding_share(flat.signal_std, torch.ones(2).bool(), torch.arange(2), 2, 1e-9)
    assert share.item() == 1.0


# -- lambda_cf calibration ------------------------------------------------------------------------
def copy_group():
    """One group of 8: six correct one-episode copies of a bet (an invalid episode), one wrong
    copy, one wrong solution of three equally long episodes, the first two valid."""
    r_out = torch.tensor([1.0] * 6 + [0.0, 0.0], dtype=torch.float64)
    episode_ids = torch.tensor([[0, 0, 0, -1, -1, -1]] * 7 + [[0, 0, 1, 1, 2, 2]])
    validity = torch.zeros(8, 3, dtype=torch.float64)
    validity[7, :2] = 1.0
    return r_out, episode_ids, validity, episode_ids >= 0


def test_the_plain_oracle_flips_a_correct_copy_near_lambda_two_by_hand():
    # A_out = 0.25 / (sqrt(3/16) + 1e-4) = 0.5772; the copy's z = -(1/12) / (sqrt(11)/12) =
    # -1/sqrt(11) = -0.3015 (tests/core/test_signals.py derives both): it reaches 0 at
    # 0.5772 sqrt(11) = 1.914; +0.336 at 0.8, +0.125 at 1.5, -0.026 at 2.0
    r_out, episode_ids, validity, mask = copy_group()
    found = flip_lambda(
        r_out, episode_ids, validity, mask, group_size=8, cf_std_floor=0.1, cf_z_clip=3.0
    )
    a_out = 0.25 / (math.sqrt(3 / 16) + 1e-4)
    assert found.flips[:7].all() and not found.flips[7]  # the solution's bonus is positive
    assert found.lambda_flip[:6].tolist() == pytest.approx([a_out * math.sqrt(11)] * 6)
    assert found.lambda_flip[0].item() == pytest.approx(1.914, abs=1e-3)
    assert found.lambda_flip[6] == 0  # the wrong copy is below 0 from the start
    for lam, expected in ((0.8, 0.336), (1.5, 0.125), (2.0, -0.026)):
        seq = found.outcome_advantages[0] + lam * found.bonus[0]
        assert seq.item() == pytest.approx(expected, abs=1e-3)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 1.0, float("nan")]), min_size=4, max_size=4),
    st.lists(st.floats(-1e6, 1e6), min_size=8, max_size=8),
    st.booleans(),
)
def test_flip_lambda_is_where_the_sequence_advantage_crosses_zero(r_out, signal, float_mask):
    r_out = torch.tensor(r_out, dtype=torch.float64)
    episode_ids = torch.tensor([[0, 0, 1, 1]] * 4)
    signal = torch.tensor(signal, dtype=torch.float64).view(4, 2)
    mask = torch.ones(4, 4)
    mask = mask if float_mask else mask.bool()
    found = flip_lambda(
        r_out, episode_ids, signal, mask, group_size=4, cf_std_floor=0.1, cf_z_clip=3.0
    )
    assert all(torch.isfinite(t).all() for t in found if t.is_floating_point())
    assert (found.lambda_flip >= 0).all()
    for row in found.flips.nonzero()[:, 0].tolist():
        lam = found.lambda_flip[row].item()
        at = additive_token_advantages(
            r_out, episode_ids, signal, mask, group_size=4, lambda_cf=lam,
            cf_std_floor=0.1, cf_z_clip=3.0,
        ).sequence_advantages[row]  # fmt: skip
        assert at.item() <= 1e-9 * max(1.0, lam)
