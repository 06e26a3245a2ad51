"""The gated form's math (``gc2po.core.gated``): each step's share of its siblings' steps reached,
by hand; and as properties: no NaN or inf whatever the inputs, monotone in the completion's own
signal, 0 for a wrong completion, GRPO exactly where the signal is constant, unchanged by a
rescaling of the signal, and the sibling-agreement gate as it was."""

from __future__ import annotations

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gc2po.core.gated import gate_of, gated_reward, share_reached
from gc2po.core.groups import grpo_advantage
from gc2po.core.signals_policy import episode_presence, gated_signal

NAN = float("nan")


def test_share_reached_by_hand():
    # group 0 (rows 0-2): row 0 steps 1.0, 3.0; row 1 step 2.0; row 2 steps 2.0, 0.5
    # group 1 (rows 3-4): row 3 unscored, row 4 alone with a step
    signal = torch.tensor([[1.0, 3.0], [2.0, 9.0], [2.0, 0.5], [1.0, 0.0], [5.0, 0.0]])
    present = torch.tensor([[1, 1], [1, 0], [1, 1], [1, 0], [1, 0]]).bool()
    group = torch.tensor([0, 0, 0, 1, 1])
    outcome = torch.tensor([1.0, 1.0, 0.0, NAN, 1.0])
    q = share_reached(signal, present, group, torch.isfinite(outcome))
    expected = [
        [1 / 3, 1.0],  # 1.0 reaches 0.5 of {2.0, 2.0, 0.5}; 3.0 reaches all three
        [3 / 4, 0.0],  # 2.0 reaches 1.0, 2.0 (a tie counts), 0.5 of row 0's and row 2's four
        [2 / 3, 0.0],  # 2.0 reaches 1.0 and the tied 2.0 of {1.0, 3.0, 2.0}; 0.5 reaches none
        [0.0, 0.0],  # unscored: takes no part
        [1.0, 0.0],  # no other scored completion with a step: 1
    ]
    torch.testing.assert_close(q, torch.tensor(expected, dtype=torch.float64))
    gated = gated_reward(outcome, signal, present, group, rank=True)
    torch.testing.assert_close(gated[[0, 1, 2, 4]], torch.tensor([2 / 3, 3 / 4, 0.0, 1.0]).double())
    assert torch.isnan(gated[3])  # stays unscored: GRPO gives it 0 and leaves it out


def test_a_nan_signal_ranks_lowest_and_a_completion_without_steps_gets_zero():
    signal = torch.tensor([[NAN], [0.0], [7.0], [1.0]])
    present = torch.tensor([[True], [True], [True], [False]])
    group = torch.zeros(4, dtype=torch.long)
    gated = gated_reward(torch.ones(4), signal, present, group, rank=True)
    # NaN reaches nothing; 0.0 reaches the NaN of {NaN, 7}; 7 reaches both; row 3 wrote no step
    assert gated.tolist() == [0.0, 0.5, 1.0, 0.0]


def test_a_signal_in_the_unit_interval_enters_as_it_is():
    signal = torch.tensor([[1.0, 0.5], [0.25, 0.0]])
    present = torch.tensor([[True, True], [True, False]])
    gated = gated_reward(
        torch.tensor([1.0, 1.0]), signal, present, torch.zeros(2).long(), rank=False
    )
    assert gated.tolist() == [0.75, 0.25]


def test_mismatched_shapes_are_refused():
    with pytest.raises(ValueError, match="outcome must have shape"):
        gated_reward(torch.ones(3), torch.zeros(2, 2), torch.ones(2, 2), torch.zeros(2), rank=True)
    with pytest.raises(ValueError, match="group must have shape"):
        share_reached(torch.zeros(2, 2), torch.ones(2, 2), torch.zeros(3), torch.ones(2).bool())


# --- properties -----------------------------------------------------------------------------------
VALUES = st.floats(allow_nan=True, allow_infinity=True, width=32)


@st.composite
def batches(draw, values=VALUES, outcomes=(0.0, 1.0, NAN)):
    """A generation batch of G groups of K rows: signal [B, L], episode ids [B, T] (-1: none),
    a bool or float completion mask [B, T], outcomes, each row's group."""
    groups, k = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    width, tokens = draw(st.integers(1, 4)), draw(st.integers(1, 6))
    rows = groups * k

    def table(elements, columns):
        row = st.lists(elements, min_size=columns, max_size=columns)
        return draw(st.lists(row, min_size=rows, max_size=rows))

    signal = torch.tensor(table(values, width), dtype=torch.float32)
    ids = torch.tensor(table(st.integers(-1, width - 1), tokens))
    mask = torch.tensor(table(st.booleans(), tokens))
    if draw(st.booleans()):
        mask = mask.float()
    outcome = torch.tensor(table(st.sampled_from(outcomes), 1))[:, 0]
    group = torch.arange(rows) // k
    return signal, ids, mask, outcome, group, k


def presence(ids, mask, width):
    return episode_presence(torch.where(mask.bool(), ids, -1), width)


@settings(max_examples=200, deadline=None)
@given(batches(), st.booleans())
def test_the_gated_reward_and_its_advantages_are_finite_wherever_the_outcome_is(batch, rank):
    signal, ids, mask, outcome, group, k = batch
    present = presence(ids, mask, signal.shape[1])
    gated = gated_reward(outcome, signal, present, group, rank=rank)
    scored = torch.isfinite(outcome)
    assert torch.equal(torch.isfinite(gated), scored)
    assert bool(((gated[scored] >= 0) & (gated[scored] <= 1)).all())
    assert bool((gated[outcome == 0] == 0).all())  # a wrong completion gets nothing
    advantages = grpo_advantage(gated.float().view(-1, k))
    assert bool(torch.isfinite(advantages).all())


@settings(max_examples=100, deadline=None)
@given(batches(), st.data())
def test_the_gate_is_monotone_in_the_completions_own_signal(batch, data):
    signal, ids, mask, outcome, group, _ = batch
    present = presence(ids, mask, signal.shape[1])
    candidates = (present & torch.isfinite(outcome).unsqueeze(-1)).nonzero().tolist()
    assume(candidates)
    row, slot = data.draw(st.sampled_from(candidates))
    raised = signal.clone()
    old = raised[row, slot].item()
    new = data.draw(st.floats(allow_nan=False, allow_infinity=True, width=32))
    assume(old != old or new >= old)  # from NaN (lowest) to anything, or upwards
    raised[row, slot] = new
    before = gated_reward(outcome, signal, present, group, rank=True)
    after = gated_reward(outcome, raised, present, group, rank=True)
    assert after[row] >= before[row]


@settings(max_examples=150, deadline=None)
@given(batches(outcomes=(0.0, 1.0, 0.5, NAN)), st.floats(-1e6, 1e6) | st.just(NAN))
def test_a_constant_signal_gives_grpo_exactly(batch, constant):
    signal, ids, mask, outcome, group, k = batch
    ids[:, 0], mask[:, 0] = 0, 1  # every completion writes a step
    present = presence(ids, mask, signal.shape[1])
    gated = gated_reward(outcome, torch.full_like(signal, constant), present, group, rank=True)
    scored = torch.isfinite(outcome)
    assert torch.equal(gated[scored].float(), outcome[scored])
    torch.testing.assert_close(
        grpo_advantage(gated.float().view(-1, k)),
        grpo_advantage(outcome.view(-1, k)),
        rtol=0,
        atol=0,
    )


@settings(max_examples=150, deadline=None)
@given(batches(values=st.integers(-20, 20).map(float)), st.sampled_from([0.5, 2.0, 8.0]),
       st.integers(-50, 50))  # fmt: skip
def test_the_rank_is_scale_free(batch, scale, shift):
    signal, ids, mask, outcome, group, _ = batch
    present = presence(ids, mask, signal.shape[1])
    plain = gated_reward(outcome, signal, present, group, rank=True)
    moved = gated_reward(outcome, signal * scale + shift, present, group, rank=True)
    torch.testing.assert_close(plain, moved, rtol=0, atol=0, equal_nan=True)
    # any strictly increasing map, not only an affine one
    cubed = gated_reward(outcome, signal.pow(3), present, group, rank=True)
    torch.testing.assert_close(plain, cubed, rtol=0, atol=0, equal_nan=True)


@settings(max_examples=150, deadline=None)
@given(batches(values=st.floats(0, 1, width=32)))
def test_a_unit_interval_signal_gives_the_sibling_agreement_gate_exactly(batch):
    """``grpo_gated_agree``'s reward before the generic form existed (``gated_signal``), with a
    0/1 outcome: the same bits."""
    signal, ids, mask, outcome, group, _ = batch
    ids = torch.where(mask.bool(), ids, -1)
    present = episode_presence(ids, signal.shape[1])
    gated = gated_reward(outcome, signal, present, group, rank=False)
    torch.testing.assert_close(
        gated, gated_signal(signal, ids, outcome), rtol=0, atol=0, equal_nan=True
    )


# -- the two gates, so that two signals can be compared in the same form -------------------------
def test_each_gate_by_signal():
    assert gate_of("oracle", "auto") == (False, True)  # the f x p control's value gate
    assert gate_of("sibling_agreement", "auto") == (False, False)  # its mean share
    assert gate_of("r_cf", "auto") == (True, False)  # ranked, over the episodes written
    assert gate_of("oracle", "rank") == (True, False)  # the noised oracle in R_cf's gate
    assert gate_of("r_cf", "value") == (True, True)  # R_cf's ranks over the step count
    assert gate_of("sibling_agreement", "value") == (False, True)
    with pytest.raises(ValueError, match="cf_gate must be one of"):
        gate_of("r_cf", "soft")


def test_the_value_gate_divides_by_the_problems_step_count_by_hand():
    # one group: row 0 writes 2 steps of a 4-step problem, row 1 writes 3 of a 2-step problem
    signal = torch.tensor([[1.0, 0.5, 0.0], [1.0, 1.0, 1.0]], dtype=torch.float64)
    present = torch.tensor([[1, 1, 0], [1, 1, 1]]).bool()
    group = torch.zeros(2, dtype=torch.long)
    steps = torch.tensor([4, 2])
    value = gated_reward(torch.ones(2), signal, present, group, rank=False, steps=steps)
    # (1 + 0.5) / max(4, 2) and 3 / max(2, 3), clamped to [0, 1]
    torch.testing.assert_close(value, torch.tensor([0.375, 1.0], dtype=torch.float64))
    written = gated_reward(torch.ones(2), signal, present, group, rank=False)
    torch.testing.assert_close(written, torch.tensor([0.75, 1.0], dtype=torch.float64))
    # ranked first: row 0's 1.0 reaches all three of row 1's, 0.5 none -> (1 + 0) / 4
    ranked = gated_reward(torch.ones(2), signal, present, group, rank=True, steps=steps)
    torch.testing.assert_close(ranked, torch.tensor([0.25, 1.0], dtype=torch.float64))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(allow_nan=True), st.booleans(), st.integers(0, 8), st.booleans()),
        min_size=1,
        max_size=10,
    )
)
def test_the_value_gate_is_in_the_unit_interval_and_no_more_than_the_outcome(entries):
    signal, present, steps, right = (torch.tensor(c) for c in zip(*entries))
    outcome = right.double()
    group = torch.zeros(len(entries)).long()
    gated = gated_reward(
        outcome, signal.double().unsqueeze(-1), present.unsqueeze(-1), group, rank=True, steps=steps
    )
    assert torch.isfinite(gated).all()
    assert bool(((gated >= 0) & (gated <= outcome)).all())
