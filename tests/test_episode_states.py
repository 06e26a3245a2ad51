"""Where R_cf reads an episode's state (cf_state): the token each choice picks on testbed text,
fallbacks that never pick EOS, and the trainer's table equal to the audit's."""

from __future__ import annotations

import pytest
import torch

from gc2po.core.positions import episode_end_positions
from gc2po.training.episode_states import STATE_CHOICES, flatten, state_table
from gc2po.training.episodes import segment_completions

TEXTS = [
    "<episode_1>3+4=7</episode_1><episode_2>7*2=14</episode_2>\\boxed{14}",
    "<episode_1>5-2=3 and no closing tag \\boxed{3}",
    "no tags at all",
]


def encode(tokenizer, texts, eos=True):
    rows = [
        tokenizer(t, add_special_tokens=False)["input_ids"]
        + ([tokenizer.eos_token_id] if eos else [])
        for t in texts
    ]
    width = max(map(len, rows))
    ids = torch.tensor([r + [tokenizer.pad_token_id or 0] * (width - len(r)) for r in rows])
    mask = torch.tensor([[i < len(r) for i in range(width)] for r in rows])
    return ids, mask


def picked(tokenizer, choice, texts=TEXTS):
    """(text before the state token + the state token's text) per (row, episode)."""
    ids, mask = encode(tokenizer, texts)
    episodes = segment_completions(tokenizer, ids, mask)
    table = state_table(episodes, ids, choice, set(tokenizer.all_special_ids))
    out = {}
    for row, slot, position in zip(*flatten(table)[:3]):
        start, end = episodes.offsets[row][position]
        out[(int(row), int(slot))] = (episodes.texts[row][:end], int(ids[row, position]))
    return out, table, episodes


def test_each_choice_reads_its_token(fast_tokenizer):
    eos = fast_tokenizer.eos_token_id
    ends, _, _ = picked(fast_tokenizer, "episode_end")
    assert (
        ends[(0, 0)][0].endswith("</episode_1>") and ends[(0, 1)][1] == eos
    )  # the paper's: EOS last
    tags, _, _ = picked(fast_tokenizer, "closing_tag")
    assert tags[(0, 0)][0].endswith("</episode_1>") and tags[(0, 1)][0].endswith("</episode_2>")
    content, _, _ = picked(fast_tokenizer, "last_content")
    assert content[(0, 0)][0].endswith("3+4=7") and content[(0, 1)][0].endswith("7*2=14")
    result, _, _ = picked(fast_tokenizer, "result")
    # the token before the result: its next-token distribution is the result's first digit
    assert result[(0, 0)][0].endswith("3+4=") and result[(0, 1)][0].endswith("7*2=")


@pytest.mark.parametrize("choice", [c for c in STATE_CHOICES if c != "episode_end"])
def test_no_choice_but_episode_end_reads_eos(fast_tokenizer, choice):
    states, _, _ = picked(fast_tokenizer, choice)
    assert all(token not in fast_tokenizer.all_special_ids for _, token in states.values())
    # an unclosed episode and a text without tags fall back to the last real token
    assert states[(1, 0)][0].endswith("5-2=" if choice == "result" else "\\boxed{3}")
    assert states[(2, 0)][0].endswith("no tags at all")


def test_episode_end_is_the_paper_state_the_trainer_always_read(fast_tokenizer):
    _, table, episodes = picked(fast_tokenizer, "episode_end")
    rows, slots, positions, num_slots = episode_end_positions(episodes.episode_ids)
    flat = flatten(table)
    assert (
        all(torch.equal(a, b) for a, b in zip(flat[:3], (rows, slots, positions)))
        and flat[3] == num_slots
    )


def test_an_unknown_choice_fails_naming_the_setting(fast_tokenizer):
    ids, mask = encode(fast_tokenizer, TEXTS[:1])
    with pytest.raises(ValueError, match="cf_state must be one of"):
        state_table(segment_completions(fast_tokenizer, ids, mask), ids, "eos")
