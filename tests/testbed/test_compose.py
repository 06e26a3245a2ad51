"""The composition split (test_compose): every part of each problem is a train part, no problem's
combination (a run of three consecutive steps) occurs in a train chain, and adding the split
leaves every other split byte for byte as it was."""

import hashlib
import json

import pytest

from gc2po.testbed.chance import UNREACHABLE, chance_level
from gc2po.testbed.data import read_split, write_compose, write_splits
from gc2po.testbed.generator import (
    COMPOSE,
    RUN,
    CueConfig,
    Problem,
    compose_parts,
    generate_splits,
    is_new_composition,
    missing_parts,
)

# the default config's testbed (config/config.yaml at the commit that added test_compose) and the
# sha256 of each split file the code before test_compose wrote for it
DEFAULT_SIZES = {
    "train": 3000,
    "test_id": 300,
    "test_rephrase": 150,
    "test_distractor": 300,
    "test_longer": 150,
    "test_wrongbet": 300,
    "test_newstart": 150,
}
DEFAULT_CUE = {"frac": 0.5, "accuracy": 0.9}
BEFORE = {
    "train": "df2faf8ede0ab19cd348ef7c1042b8901cdad241e6f7170940772065f837b9c6",
    "test_id": "5b8ba05bbe0fbf5d56938d7d591fbaff57f25e258e88037810fd389060d1321d",
    "test_rephrase": "f72e61fc69c4961d952147c1c44581affe1050d797a8e8cdd08688131f03a697",
    "test_distractor": "38b32b1df473df682939e4173426376247062fd92093d15e4e52351696ea15b5",
    "test_longer": "971459fd781288a764ed66e058b2d22f8bd2c4863e2a57c275620cf966ccf063",
    "test_wrongbet": "cdc768a75fb99ef1031ba846ffa8d9965bd934e6498f8e074d20ae7a7e2ca54d",
    "test_newstart": "2171c07ea0ad270203b5aa8323c970deb44ed506b30aabd48e0cfe6e8a7d09b1",
}


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_existing_splits_are_byte_identical_with_the_composition_split(tmp_path):
    """The default testbed written without and with test_compose: every other split file has the
    sha256 it had before the split existed."""
    without = write_splits(DEFAULT_SIZES, 0, tmp_path / "without", DEFAULT_CUE)
    with_it = write_splits({**DEFAULT_SIZES, COMPOSE: 300}, 0, tmp_path / "with", DEFAULT_CUE)
    for split, digest in BEFORE.items():
        assert without["splits"][split]["sha256"] == digest, split
        assert with_it["splits"][split]["sha256"] == digest, split
        assert sha256(tmp_path / "with" / f"{split}.jsonl") == digest, split
    # the workflow's file of it alone is the split write_splits writes
    written = write_compose(DEFAULT_SIZES, 0, 300, tmp_path / "alone.jsonl", DEFAULT_CUE)
    assert written["sha256"] == with_it["splits"][COMPOSE]["sha256"]
    assert written["count"] == 300


def test_every_part_is_trained_and_no_combination_is():
    splits = generate_splits({"train": 600, "test_id": 60, COMPOSE: 80}, 2, CueConfig(0.5, 0.9))
    train, compose = splits["train"], splits[COMPOSE]
    assert len(compose) == 80
    train_steps = {(i + 1, op, n) for p in train for i, (op, n) in enumerate(p.steps)}
    train_pairs = {(p.steps[i], p.steps[i + 1]) for p in train for i in range(len(p.steps) - 1)}
    train_runs = {
        p.steps[i : i + RUN] for p in train for i in range(len(p.steps) - RUN + 1)
    }  # every run of three consecutive steps of a train chain
    train_chains = {p.steps for p in train}
    train_values = {v for p in train for v in p.values}
    for problem in compose:
        assert problem.cue is None
        assert 3 <= len(problem.steps) <= 4
        assert problem.start in {p.start for p in train}
        assert set(problem.values) <= train_values
        assert all((i + 1, op, n) in train_steps for i, (op, n) in enumerate(problem.steps))
        steps = problem.steps
        assert all((steps[i], steps[i + 1]) in train_pairs for i in range(len(steps) - 1))
        assert all(steps[i : i + RUN] not in train_runs for i in range(len(steps) - RUN + 1))
        assert steps not in train_chains
    # the split is not test_id: test_id has chains whose runs the train split holds
    test_id_runs = [
        p.steps[i : i + RUN] for p in splits["test_id"] for i in range(len(p.steps) - 2)
    ]
    assert any(run in train_runs for run in test_id_runs)


def test_new_composition_by_hand():
    train = [
        Problem("t0", "train", "", 2, (("+", 1), ("*", 2), ("-", 3)), (3, 6, 3)),
        Problem("t1", "train", "", 3, (("*", 2), ("-", 3), ("+", 1)), (6, 3, 4)),
    ]
    parts = compose_parts(train)
    # every step at its tag, each adjacent pair, the start and the values are trained; the run
    # (+1, *2, -3) is the first train chain: not new
    assert missing_parts(2, [("+", 1), ("*", 2), ("-", 3)], [3, 6, 3], parts) == []
    assert not is_new_composition(2, [("+", 1), ("*", 2), ("-", 3)], [3, 6, 3], parts)
    # (*2 at tag 1 is trained, -3 at tag 2, then +1 at tag 3): the second train chain, not new
    assert not is_new_composition(3, [("*", 2), ("-", 3), ("+", 1)], [6, 3, 4], parts)
    # a step at a tag never trained there (+1 at tag 2), a start and a value never seen
    assert missing_parts(4, [("*", 2), ("+", 1)], [8, 9], parts) == [
        "start 4",
        "value 8",
        "value 9",
        "<episode_2> +1",
        "adjacent steps ('*', 2), ('+', 1)",
    ]
    # two steps: no run of three, so no new combination
    assert not is_new_composition(2, [("+", 1), ("*", 2)], [3, 6], parts)


def test_compose_needs_the_train_split_and_a_size():
    with pytest.raises(ValueError, match="size train too"):
        generate_splits({COMPOSE: 5}, 0)
    with pytest.raises(ValueError, match="evaluate.reasoning.compose_size"):
        write_compose({"train": 50}, 0, 0, "unused.jsonl")


def test_compose_is_reachable_with_a_chance_level(tmp_path):
    assert UNREACHABLE[COMPOSE] is None
    write_splits({"train": 600}, 1, tmp_path, DEFAULT_CUE)
    write_compose({"train": 600}, 1, 40, tmp_path / "test_compose.jsonl", DEFAULT_CUE)
    rows = [json.loads(line) for line in (tmp_path / "test_compose.jsonl").read_text().splitlines()]
    train = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    assert {r["meta"]["split"] for r in rows} == {COMPOSE}
    assert 0 < chance_level(rows, train) < 0.2
    assert [p.id for p in read_split(tmp_path / "test_compose.jsonl")][:2] == [
        "test_compose-00000",
        "test_compose-00001",
    ]
