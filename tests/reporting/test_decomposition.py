"""Cue avoidance or accuracy (``gc2po.reporting.decomposition``) and the copy-share family, from
wrong-bet evaluation files written by hand: every part by hand, the parts summing to the
difference of pass@1 exactly, and what a broken input says."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from gc2po.reporting.decomposition import (
    decomposition_rows,
    values_by_seed,
    write_decomposition,
)
from gc2po.reporting.family import Family, compare_family
from gc2po.reporting.tables import EvalFile
from gc2po.testbed.generator import Problem

STEPS, VALUES = (("+", 3), ("*", 2)), (8, 16)
PROBLEMS = {  # two wrong-bet problems, bets 18 and 15
    "w1": Problem("w1", "test_wrongbet", "...", 5, STEPS, VALUES, 18),
    "w2": Problem("w2", "test_wrongbet", "...", 5, STEPS, VALUES, 15),
}
SOLVED = "<episode_1>5+3=8</episode_1><episode_2>8*2=16</episode_2>\\boxed{16}"
SLIP = "<episode_1>5+3=8</episode_1><episode_2>8*2=17</episode_2>\\boxed{17}"
COPY = {
    "w1": "<episode_1>bet=18</episode_1>\\boxed{18}",
    "w2": "<episode_1>bet=15</episode_1>\\boxed{15}",
}
GRADE = {SOLVED: (True, 1.0), SLIP: (False, 0.5)}


def write(root, model, seed, kinds):
    """kinds: 4 entries (2 per problem): "s" solved, "x" a slip, "c" a copy of the bet."""
    path = root / "eval" / "testbed" / model / f"seed{seed}" / "test_wrongbet.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for k, (pid, kind) in enumerate(zip(["w1", "w1", "w2", "w2"], kinds)):
        text = {"s": SOLVED, "x": SLIP, "c": COPY[pid]}[kind]
        correct, validity = GRADE.get(text, (False, 0.0))
        rows.append({"problem_id": pid, "sample_index": k % 2, "completion": text,
                     "correct": correct, "process_validity": validity})  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


# per seed: grpo copies 3 of 4 (its one other answer solved), the run copies 1 (2 of 3 solved)
RUNS = {
    "grpo": {0: "ccsc", 1: "cccs", 2: "ccxs"},
    "run": {0: "cssx", 1: "sxcs", 2: "cssx"},
}


def files(tmp_path):
    return [write(tmp_path, m, s, k) for m, seeds in RUNS.items() for s, k in seeds.items()]


def test_each_seeds_parts_by_hand(tmp_path):
    values = values_by_seed(files(tmp_path), PROBLEMS, "test_wrongbet")
    assert values[("testbed", "grpo")][2] == {"pass": 0.25, "non_copy": 0.5, "accuracy": 0.5}
    assert values[("testbed", "run")][0] == {"pass": 0.5, "non_copy": 0.75, "accuracy": 2 / 3}


def test_the_parts_sum_to_the_difference_and_match_the_hand_computed_means(tmp_path):
    rows = decomposition_rows(values_by_seed(files(tmp_path), PROBLEMS, "test_wrongbet"), "grpo")
    (row,) = rows.to_dict("records")
    # grpo: pass .25 each seed; non-copy .25, .25, .5; accuracy 1, 1, .5
    # run: pass .5 each seed; non-copy .75; accuracy 2/3
    d_non_copy = [0.5, 0.5, 0.25]
    avoidance = [0.5 * 1, 0.5 * 1, 0.25 * 0.5]
    accuracy = [0.75 * (2 / 3 - 1), 0.75 * (2 / 3 - 1), 0.75 * (2 / 3 - 0.5)]
    assert row["d_pass"] == pytest.approx(25.0)
    assert row["d_non_copy"] == pytest.approx(100 * np.mean(d_non_copy))
    assert row["avoidance"] == pytest.approx(100 * np.mean(avoidance))
    assert row["accuracy_part"] == pytest.approx(100 * np.mean(accuracy))
    assert row["avoidance"] + row["accuracy_part"] == pytest.approx(row["d_pass"])
    assert row["avoidance_share"] == pytest.approx(row["avoidance"] / 25.0)
    assert row["seeds"] == "0,1,2" and row["d_pass_ci_low"] == row["d_pass_ci_high"]


def test_the_markdown_names_the_reference_and_every_part(tmp_path):
    md, csv = tmp_path / "t" / "decomposition.md", tmp_path / "t" / "decomposition.csv"
    write_decomposition(files(tmp_path), PROBLEMS, reference="grpo", benchmark="test_wrongbet",
                        md=md, csv=csv)  # fmt: skip
    text = md.read_text()
    assert "each run against GRPO" in text and "| testbed | run | 50.0 / 25.0 |" in text
    assert pd.read_csv(csv).run.tolist() == ["run"]


def test_a_missing_reference_fails_naming_it(tmp_path):
    paths = [write(tmp_path, "run", 0, "cssx")]
    with pytest.raises(ValueError, match="no evaluation of the reference 'grpo'"):
        decomposition_rows(values_by_seed(paths, PROBLEMS, "test_wrongbet"), "grpo")


def test_a_copy_share_family_pairs_each_seeds_share(tmp_path):
    evals = [EvalFile.from_path(p) for p in files(tmp_path)]
    family = Family("copies", "test_wrongbet", "grpo", ("run",), margin=5.0, measure="copy_share")
    (row,) = compare_family(evals, family, PROBLEMS).to_dict("records")
    # copy shares: run .25 each seed; grpo .75, .75, .5 -> differences -.5, -.5, -.25
    assert row["mean_run"] == pytest.approx(25.0) and row["mean_reference"] == pytest.approx(
        200 / 3
    )
    assert row["diff"] == pytest.approx(-125 / 3)
    with pytest.raises(ValueError, match="copy_share needs the split's problems"):
        compare_family(evals, family)
