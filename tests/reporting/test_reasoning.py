"""pass@k (Chen et al. 2021), the parse-failure and truncation shares, and the reasoning table
from evaluation files written by hand in the workflow's layout."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gc2po.layout import EvalFile, reasoning_root
from gc2po.reporting.pass_at_k import (
    mean_pass_at_k,
    parse_failure_share,
    pass_at_k,
    truncation_share,
)
from gc2po.reporting.reasoning import write_reasoning
from gc2po.testbed.generator import Problem


def test_pass_at_k_by_hand():
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(1 - 3 / 6)  # 1 - C(3,2)/C(4,2)
    assert pass_at_k(8, 2, 4) == pytest.approx(1 - 15 / 70)  # 1 - C(6,4)/C(8,4)
    assert pass_at_k(8, 0, 8) == 0.0
    assert pass_at_k(8, 1, 8) == 1.0
    assert pass_at_k(5, 3, 3) == 1.0  # every draw of 3 holds one of the 3 correct


@pytest.mark.parametrize(
    "args, message",
    [
        ((4, 1, 5), r"pass@5: needs 1 <= k <= n .* n = 4"),
        ((4, 5, 1), "c = 5"),
        ((4, 1, 0), "pass@0: needs 1 <= k"),
    ],
)
def test_pass_at_k_refuses_what_it_cannot_estimate(args, message):
    with pytest.raises(ValueError, match=message):
        pass_at_k(*args)


@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_k_is_the_binomial_formula_monotone_in_k_and_a_probability(nc):
    n, c = nc
    values = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    exact = [1 - math.comb(n - c, k) / math.comb(n, k) for k in range(1, n + 1)]
    assert values == pytest.approx(exact, abs=1e-12)
    assert values[0] == pytest.approx(c / n)
    assert all(math.isfinite(v) and 0 <= v <= 1 for v in values)
    assert all(a <= b + 1e-12 for a, b in zip(values, values[1:]))


@given(st.lists(st.lists(st.booleans(), min_size=8, max_size=8), min_size=1, max_size=12))
def test_mean_pass_at_k_over_problems(grid):
    """Problems of 8 samples each: at k = 1 the mean correct share; monotone in k; in [0, 1]."""
    samples = [{"problem_id": f"p{i}", "correct": c} for i, row in enumerate(grid) for c in row]
    values = [mean_pass_at_k(samples, k) for k in (1, 2, 4, 8)]
    assert values[0] == pytest.approx(sum(map(sum, grid)) / (8 * len(grid)))
    assert all(math.isfinite(v) and 0 <= v <= 1 for v in values)
    assert all(a <= b + 1e-12 for a, b in zip(values, values[1:]))
    assert values[-1] == pytest.approx(sum(any(row) for row in grid) / len(grid))  # k = n


def test_mean_pass_at_k_names_a_problem_with_too_few_samples():
    samples = [{"problem_id": "p0", "correct": True}] * 8 + [{"problem_id": "p1", "correct": 0}]
    with pytest.raises(ValueError, match=r"pass@4: problem p1 has 1 samples.*evaluate\.reasoning"):
        mean_pass_at_k(samples, 4)


def test_shares_by_hand():
    samples = [
        {"answer": None, "finished": False},
        {"answer": 3, "finished": True},
        {"answer": None, "finished": True},
        {"answer": 0, "finished": True},
    ]
    assert parse_failure_share(samples) == 0.5
    assert truncation_share(samples) == 0.25
    with pytest.raises(ValueError, match="no samples"):
        parse_failure_share([])


STEPS, VALUES = (("+", 3), ("*", 2)), (8, 16)
PROBLEMS = {
    "test_id": {
        "a": Problem("a", "test_id", "...", 5, STEPS, VALUES, 16),  # a bet: left out
        "b": Problem("b", "test_id", "...", 5, STEPS, VALUES),
        "c": Problem("c", "test_id", "...", 4, STEPS, (7, 14)),
    },
    "test_compose": {"d": Problem("d", "test_compose", "...", 5, STEPS, VALUES)},
}
SOLVED = "<episode_1>5+3=8</episode_1><episode_2>8*2=16</episode_2>\\boxed{16}"
WRONG = "\\boxed{3}"
CUT = "<episode_1>5+3=8</episode_1><episode_2>8*"  # no answer, truncated
TRAIN = [{"answer": "16"}, {"answer": "14"}, {"answer": "16"}, {"answer": "3"}]


def write(root, model, seed, split, completions, greedy=False):
    """``completions``: problem id -> its completions (correct where SOLVED, or 14 for c)."""
    path = EvalFile("testbed", model, seed, split).path(reasoning_root(root, greedy))
    rows = [
        {
            "problem_id": pid,
            "sample_index": k,
            "completion": text,
            "correct": text == SOLVED and pid != "c" or (pid == "c" and text == "\\boxed{14}"),
            "process_validity": 1.0,
            "finished": text != CUT,
        }
        for pid, texts in completions.items()
        for k, text in enumerate(texts)
    ]
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_reasoning_table_by_hand(tmp_path):
    """Two seeds of the base and one run; n = 4, ks 1 and 4; the cued problem a is left out."""
    sampled, greedy = [], []
    # base: b solved 1 of 4 both seeds, c never (one truncated); greedy solves b only
    # run: b solved 4 of 4, c 2 of 4 (seed 0) / 0 of 4 (seed 1); greedy solves both
    plan = {
        ("base", 0): ([SOLVED, WRONG, WRONG, CUT], [WRONG] * 4, [SOLVED, WRONG], [WRONG] * 4),
        ("base", 1): ([WRONG, SOLVED, WRONG, WRONG], [WRONG] * 4, [SOLVED, WRONG], [SOLVED] * 4),
        ("grpo", 0): (
            [SOLVED] * 4,
            ["\\boxed{14}", WRONG, "\\boxed{14}", WRONG],
            [SOLVED, "\\boxed{14}"],
            [SOLVED] * 4,
        ),
        ("grpo", 1): ([SOLVED] * 4, [WRONG] * 4, [SOLVED, "\\boxed{14}"], [SOLVED] * 4),
    }
    for (model, seed), (b, c, greedy_bc, d) in plan.items():
        sampled.append(write(tmp_path, model, seed, "test_id", {"a": [SOLVED] * 4, "b": b, "c": c}))
        sampled.append(write(tmp_path, model, seed, "test_compose", {"d": d}))
        ids = {"a": [WRONG], "b": greedy_bc[:1], "c": greedy_bc[1:]}
        greedy.append(write(tmp_path, model, seed, "test_id", ids, greedy=True))
        greedy.append(write(tmp_path, model, seed, "test_compose", {"d": d[:1]}, greedy=True))
    md, csv = tmp_path / "reasoning.md", tmp_path / "reasoning.csv"
    rows = write_reasoning(sampled, greedy, PROBLEMS, TRAIN, ks=[4, 1], n=4, md=md, csv=csv)
    frame = pd.read_csv(csv)
    assert len(frame) == len(rows) == 2 * 2 * 5  # models x splits x (greedy, pass@1, @4, 2 shares)

    def cell(model, split, measure):
        return frame[(frame.model == model) & (frame.split == split) & (frame.measure == measure)]

    # base test_id pass@1: seed means (1/4 + 0)/2 = 12.5% both seeds; pass@4: (1 + 0)/2 = 50%
    assert cell("base", "test_id", "pass@1")["mean"].item() == pytest.approx(12.5)
    assert cell("base", "test_id", "pass@4")["mean"].item() == pytest.approx(50.0)
    assert cell("base", "test_id", "greedy_pass@1")["mean"].item() == pytest.approx(50.0)
    # parse failures: seed 0 one CUT of 8 samples (12.5%), seed 1 none: mean 6.25
    assert cell("base", "test_id", "parse_failure")["mean"].item() == pytest.approx(6.25)
    assert cell("base", "test_id", "truncated")["seed_values"].item() == "0:12.5000;1:0.0000"
    # the run: pass@1 seeds (1 + 1/2)/2 = 75%, (1 + 0)/2 = 50%; pass@4 100% and 50%
    run = cell("grpo", "test_id", "pass@1")
    assert run["seed_values"].item() == "0:75.0000;1:50.0000"
    assert run["diff"].item() == pytest.approx(50.0)  # paired with the base's 12.5, 12.5
    assert cell("grpo", "test_id", "pass@4")["mean"].item() == pytest.approx(75.0)
    assert cell("grpo", "test_id", "greedy_pass@1")["mean"].item() == pytest.approx(100.0)
    # the compositions: the base's seed 0 never, seed 1 always
    assert cell("base", "test_compose", "pass@4")["seed_values"].item() == "0:0.0000;1:100.0000"
    # chance over the uncued problems: answers 16 (b), 14 (c); P_train 16 = 1/2, 14 = 1/4
    assert cell("base", "test_id", "pass@1")["chance_level"].item() == pytest.approx(37.5)
    assert cell("base", "test_compose", "pass@1")["chance_level"].item() == pytest.approx(50.0)
    text = md.read_text()
    assert "#### Test (ID), problems without a bet" in text and "#### New compositions" in text
    assert "| greedy pass@1 | pass@1 | pass@4 | no parseable answer | truncated |" in text
    assert "n = 4 samples" in text and "Test (ID), problems without a bet: 37.5%" in text


def test_reasoning_table_needs_both_files(tmp_path):
    sampled = [write(tmp_path, "base", 0, "test_id", {"b": [SOLVED] * 4, "c": [WRONG] * 4})]
    with pytest.raises(ValueError, match=r"testbed/base/seed0/test_id: no greedy file"):
        write_reasoning(
            sampled,
            [],
            {"test_id": PROBLEMS["test_id"]},
            TRAIN,
            ks=[1],
            n=4,
            md=tmp_path / "r.md",
            csv=tmp_path / "r.csv",
        )
