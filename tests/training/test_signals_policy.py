"""The policy-only signals (beyond the paper; ``gc2po.training.signals_policy`` and
``gc2po.core.signals_policy``) on a constructed batch: a copied bet against derived steps, each
signal with the sign it claims, through the text parsing and the passes the trainer uses (a
character tokenizer and a stub policy stand in for the model)."""

from __future__ import annotations

import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gc2po.core.segment import segment_with_info, token_episode_ids
from gc2po.core.signals_policy import (
    episode_presence,
    gated_signal,
    operand_sensitivity,
    result_logprob,
    sibling_agreement,
)
from gc2po.training.episodes import EpisodeBatch
from gc2po.training.signals_policy import (
    agreement_signal,
    changed_operand,
    operand_signal,
    parse_steps,
    perturbed_prompt,
)

PROMPT = "Ana has 5 apples. Ana gets 3 more. Then 4 more arrive. Ben bets 15."
DERIVED = "<episode_1>5+3=8</episode_1><episode_2>8+4=12</episode_2>\\boxed{12}"
COPY_EQUATION = "<episode_1>5+3=15</episode_1>\\boxed{15}"  # the bet, written as a step
COPY_BARE = "<episode_1>bet=15</episode_1>\\boxed{15}"  # the testbed's copy


def encode(text: str) -> list[int]:  # one token per character
    return [ord(c) for c in text]


def piece_of(token: int) -> str:
    return chr(token)


def char_batch(texts: list[str]) -> EpisodeBatch:
    """The trainer's segmentation of ``texts`` under the character tokenizer."""
    width = max(map(len, texts))
    ids = torch.full((len(texts), width), -1)
    counts, fallbacks, offsets = [], [], []
    for row, text in enumerate(texts):
        seg = segment_with_info(text, 32)
        spans = torch.tensor([(i, i + 1) for i in range(len(text))]).reshape(-1, 2)
        ids[row, : len(text)] = token_episode_ids(
            spans, seg.spans, torch.ones(len(text), dtype=torch.bool)
        )
        counts.append(len(seg.spans))
        fallbacks.append(seg.used_fallback)
        offsets.append([(i, i + 1) for i in range(len(text))])
    return EpisodeBatch(ids, fallbacks, counts, list(texts), offsets)


def stub_policy(sequences, positions):
    """A policy that both computes and copies: each digit of a number written after ``=`` gets
    log-prob 0 when the number so far begins the value of the equation before the ``=`` or the
    prompt's bet, -5 otherwise."""
    out = []
    for sequence, where in zip(sequences, positions):
        text = "".join(map(chr, sequence))
        values = []
        for t in where:
            before = text[:t]
            written = re.search(r"(\d+)([+\-*])(\d+)=(\d*)$", before)
            bet = re.search(r"bets (\d+)", before)
            candidates = {bet.group(1)} if bet else set()
            if written:
                left, op, right = int(written[1]), written[2], int(written[3])
                candidates.add(str({"+": left + right, "-": left - right, "*": left * right}[op]))
            so_far = (written[4] if written else "") + text[t]
            values.append(0.0 if any(c.startswith(so_far) for c in candidates) else -5.0)
        out.append(torch.tensor(values))
    return out


def test_the_episodes_parse_as_equations_or_bare_text():
    batch = char_batch([DERIVED, COPY_BARE])
    derived, copy = parse_steps(batch, 0), parse_steps(batch, 1)
    assert [derived[s].key for s in (0, 1)] == ["eq:5+3=8", "eq:8+4=12"]
    assert DERIVED[slice(*derived[1].right)] == "4" and DERIVED[slice(*derived[1].result)] == "12"
    assert copy[0].key == "text:bet=15" and copy[0].right is None


def test_sibling_agreement_scores_the_derived_step_above_a_lone_copy():
    # a group of four: three derive step 1 the same way, one copies the bet
    batch = char_batch([DERIVED, DERIVED, DERIVED, COPY_BARE])
    table, metrics = agreement_signal(batch, torch.arange(4), group_size=4)
    assert table[:3, 0].tolist() == [2 / 3] * 3 and table[3, 0] == 0.0
    assert table[:3, 1].tolist() == [2 / 3] * 3  # step 2 too
    assert 0 < metrics["signal/sibling_agreement"] < 1
    # ...and rewards the copy where most samples copy (its documented weakness)
    batch = char_batch([COPY_BARE, COPY_BARE, COPY_BARE, DERIVED])
    table, _ = agreement_signal(batch, torch.arange(4), group_size=4)
    assert table[0, 0] > table[3, 0]


def test_sibling_agreement_needs_whole_groups():
    batch = char_batch([DERIVED, DERIVED])
    with pytest.raises(RuntimeError, match="part of a group"):
        agreement_signal(batch, torch.tensor([0, 1]), group_size=4)


def test_sibling_agreement_counts_siblings_of_its_group_only():
    keys = torch.tensor([[0, 1], [0, -1], [0, 1], [2, 1]])
    table = sibling_agreement(keys, torch.tensor([0, 0, 1, 1]))
    assert table.tolist() == [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]


def test_the_prompt_operand_is_changed_as_a_whole_number():
    prompt = encode(PROMPT)
    changed = "".join(map(chr, perturbed_prompt(prompt, piece_of, 3, encode)))
    assert changed == PROMPT.replace("gets 3", "gets 4")  # 15's digits are left alone
    assert changed_operand(9) == 8 and changed_operand(3) == 4 and changed_operand(99) == 98


def test_operand_sensitivity_scores_derived_steps_above_copies():
    batch = char_batch([DERIVED, COPY_EQUATION, COPY_BARE])
    prompts = [encode(PROMPT)] * 3
    sensitivity, written = operand_signal(stub_policy, encode, piece_of, prompts, batch)
    # derived: "5+4=" makes 8 unlikely (-5); "8+5=" makes "12" unlikely at its second digit
    # (13 and the bet 15 both begin with 1)
    assert sensitivity[0, :2].tolist() == [5.0, 5.0]
    # the bet written as a step does not move with its operand; the bare copy uses none
    assert sensitivity[1, 0] == 0.0 and sensitivity[2, 0] == 0.0
    assert written[0, :2].tolist() == [0.0, 0.0] and written[1, 0] == 0.0


def test_the_math_of_the_operand_pass():
    original = torch.tensor([[[-0.5, -1.0], [-2.0, float("nan")]]])
    perturbed = torch.tensor([[[-3.0, -1.0], [-2.5, 7.0]]])
    mask = torch.tensor([[[True, True], [True, False]]])
    assert operand_sensitivity(original, perturbed, mask).tolist() == [[2.5, 0.5]]
    assert result_logprob(original, mask).tolist() == [[-1.5, -2.0]]


def test_the_gated_agreement_is_the_outcome_times_the_mean_over_episodes():
    # by hand: row 0 has episodes 0, 1 (agreement 1.0, 0.5) -> 0.75; row 1 one episode -> 0.25;
    # row 2 no episode -> 0; row 3's outcome unscored -> NaN (out of its group); row 4 wrong -> 0
    ids = torch.tensor([[0, 0, 1, 1], [0, 0, -1, -1], [-1] * 4, [0, 1, 1, 2], [0, 1, 1, 1]])
    signal = torch.tensor([[1.0, 0.5, 0], [0.25, 0, 0], [1, 1, 1], [1, 0, 0.5], [1, 1, 0]])
    f = torch.tensor([1.0, 1.0, 1.0, float("nan"), 0.0])
    gated = gated_signal(signal, ids, f)
    assert gated[[0, 1, 2, 4]].tolist() == [0.75, 0.25, 0.0, 0.0] and torch.isnan(gated[3])
    assert episode_presence(ids, 3).tolist()[3] == [True, True, True]


def test_the_gated_agreement_pays_a_derived_completion_above_a_lone_copy():
    # both right (f = 1): three derive the answer the same way, one copies the bet
    batch = char_batch([DERIVED, DERIVED, DERIVED, COPY_BARE])
    table, _ = agreement_signal(batch, torch.arange(4), group_size=4)
    gated = gated_signal(table, batch.episode_ids, torch.ones(4))
    assert gated[:3].tolist() == [2 / 3] * 3 and gated[3] == 0.0


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 5),
    st.integers(1, 8),
    st.data(),
)
def test_the_gated_agreement_is_finite_and_in_the_unit_interval(rows, width, tokens, data):
    values = st.floats(allow_nan=True, allow_infinity=True, width=32)
    signal = torch.tensor(
        data.draw(
            st.lists(st.lists(values, min_size=width, max_size=width), min_size=rows, max_size=rows)
        )
    )
    ids = torch.tensor(
        data.draw(
            st.lists(
                st.lists(st.integers(-1, width + 1), min_size=tokens, max_size=tokens),
                min_size=rows,
                max_size=rows,
            )
        )
    )
    f = torch.tensor(
        data.draw(st.lists(st.sampled_from([0.0, 1.0, float("nan")]), min_size=rows, max_size=rows))
    )
    gated = gated_signal(signal, ids, f)
    scored = ~torch.isnan(f)
    assert torch.equal(torch.isnan(gated), ~scored)  # NaN only where the outcome is unscored
    assert bool(((gated[scored] >= 0) & (gated[scored] <= 1)).all())
    assert bool((gated[f == 0] == 0).all())


def test_the_gated_agreement_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match="f"):
        gated_signal(torch.zeros(2, 3), torch.zeros(2, 4, dtype=torch.long), torch.zeros(3))
