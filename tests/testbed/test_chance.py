"""Chance levels (a question-blind guesser drawing from the train answers) and the splits labelled
not learnable from the train split, each reason checked against the generator."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gc2po.testbed.chance import UNREACHABLE, chance_level, split_labels, split_of
from gc2po.testbed.generator import (
    DEFAULT_START,
    SPLITS,
    START_RANGES,
    TEMPLATES,
    generate_splits,
)


def records(answers, split="test_id"):
    return [{"answer": str(a), "meta": {"split": split}} for a in answers]


def test_chance_level_by_hand():
    # P_train: 1 -> 1/2, 2 -> 1/4, 3 -> 1/4; P_split: 1 -> 1/4, 2 -> 1/2, 4 -> 1/4
    # sum over answers: 1/2 * 1/4 + 1/4 * 1/2 + 1/4 * 0 (3) + 0 * 1/4 (4) = 1/4
    assert chance_level(records([1, 2, 2, 4]), records([1, 1, 2, 3])) == pytest.approx(0.25)
    assert chance_level(records([7, 7]), records([7])) == 1.0  # one answer everywhere
    assert chance_level(records([8]), records([7, 9])) == 0.0  # never a train answer


@given(
    st.lists(st.integers(0, 12), min_size=1, max_size=40),
    st.lists(st.integers(0, 12), min_size=1, max_size=40),
)
def test_chance_level_is_the_mean_over_pairs_of_a_match(split, train):
    """The guesser's expected pass@1 = P(a uniformly drawn train answer equals a uniformly drawn
    gold answer of the split): the mean over every (gold, train answer) pair of a match."""
    pairs = [g == t for g in split for t in train]
    value = chance_level(records(split), records(train))
    assert value == pytest.approx(sum(pairs) / len(pairs))
    assert 0 <= value <= 1
    assert value == pytest.approx(chance_level(records(train), records(split)))  # symmetric


def test_chance_level_needs_both_splits():
    with pytest.raises(ValueError, match="needs records of both"):
        chance_level([], records([1]))


def test_every_split_has_a_reachability_and_each_reason_holds():
    assert set(UNREACHABLE) == set(SPLITS)
    assert {s for s, reason in UNREACHABLE.items() if reason} == {
        "test_rephrase",
        "test_distractor",
        "test_longer",
        "test_newstart",
    }
    # test_rephrase: the held-out templates' verbs never occur in a train template
    train_text = " ".join(t for ts in TEMPLATES["train"].values() for t in ts)
    for verb in ("sells", "hands", "break", "turns into", "owns", "collects"):
        assert verb in " ".join(t for ts in TEMPLATES["held_out"].values() for t in ts)
        assert verb not in train_text
    # test_distractor: distractor sentences, of which the train split has none
    assert SPLITS["train"][3] == 0 < SPLITS["test_distractor"][3]
    # test_longer: more steps (so episode tags) than any train problem
    assert SPLITS["test_longer"][1] > SPLITS["train"][2]
    # test_newstart: the train split's templates and step counts, only the start moves, above
    # every train start
    assert SPLITS["test_newstart"][:3] == SPLITS["train"][:3]
    assert START_RANGES["test_newstart"][0] > DEFAULT_START[1]


def test_split_labels_of_generated_splits():
    splits = {
        k: [p.record() for p in v]
        for k, v in generate_splits({"train": 200, "test_id": 50, "test_longer": 50}, 0).items()
    }
    test_id = split_labels(splits["test_id"], splits["train"])
    assert test_id["reachable"] is True and 0 < test_id["chance_level"] < 0.2
    assert split_labels(splits["test_longer"], splits["train"])["reachable"] is False
    with pytest.raises(ValueError, match=r"x.jsonl: expected the records of one testbed split"):
        split_of(splits["test_id"] + splits["test_longer"], "x.jsonl")
    with pytest.raises(ValueError, match=r"found \['None'\]"):
        split_of([{"answer": "1"}], "y")
