"""The mechanism table and the dose-response table and figure, from evaluation files written by
hand in the workflow's layout."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from scipy import stats

from gc2po.reporting.dose_response import swept_runs, write_dose_response
from gc2po.reporting.mechanism import read_samples, seed_values, write_mechanism
from gc2po.testbed.generator import Problem, solution_text
from gc2po.testbed.mechanism import measures_of

STEPS, VALUES = (("+", 3), ("*", 2)), (8, 16)
PROBLEMS = {
    "test_id": {
        "a": Problem("a", "test_id", "...", 5, STEPS, VALUES, 16),  # a right bet
        "b": Problem("b", "test_id", "...", 5, STEPS, VALUES),  # no bet
    },
    "test_wrongbet": {"w": Problem("w", "test_wrongbet", "...", 5, STEPS, VALUES, 18)},
}
SOLVED = "<episode_1>5+3=8</episode_1><episode_2>8*2=16</episode_2>\\boxed{16}"
COPY_A, COPY_W = (
    solution_text(PROBLEMS["test_id"]["a"], "copy"),
    "<episode_1>bet=18</episode_1>\\boxed{18}",
)
WRONG = "\\boxed{3}"
GRADES = {SOLVED: (True, 1.0), COPY_A: (True, 0.0), COPY_W: (False, 0.0), WRONG: (False, 0.0)}

# model -> seed -> split -> completions of its problems (2 samples each, problems in order)
EVALS = {
    "base": {
        0: {"test_id": [COPY_A, SOLVED, SOLVED, WRONG], "test_wrongbet": [COPY_W, WRONG]},
        1: {"test_id": [COPY_A, COPY_A, WRONG, WRONG], "test_wrongbet": [COPY_W, COPY_W]},
    },
    "grpo": {
        0: {"test_id": [COPY_A, COPY_A, SOLVED, SOLVED], "test_wrongbet": [COPY_W, COPY_W]},
        1: {"test_id": [COPY_A, COPY_A, SOLVED, WRONG], "test_wrongbet": [COPY_W, SOLVED]},
    },
}


def write_samples(root, model, seed, split, completions):
    path = root / "eval" / "testbed" / model / f"seed{seed}" / f"{split}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    ids = [i for i in PROBLEMS[split] for _ in range(2)]
    rows = [
        {
            "problem_id": i,
            "sample_index": k % 2,
            "completion": c,
            "correct": GRADES[c][0],
            "process_validity": GRADES[c][1],
        }
        for k, (i, c) in enumerate(zip(ids, completions))
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def write_all(root, evals):
    return [
        write_samples(root, model, seed, split, completions)
        for model, seeds in evals.items()
        for seed, splits in seeds.items()
        for split, completions in splits.items()
    ]


def t_interval(values):
    mean = sum(values) / len(values)
    half = stats.t.ppf(0.975, len(values) - 1) * pd.Series(values).std() / math.sqrt(len(values))
    return 100 * mean, 100 * (mean - half), 100 * (mean + half)


def test_the_mechanism_table_by_hand(tmp_path):
    paths = write_all(tmp_path, EVALS)
    out = {"md": tmp_path / "mechanism.md", "csv": tmp_path / "mechanism.csv"}
    write_mechanism(paths, PROBLEMS, **out)
    cells = pd.read_csv(out["csv"]).set_index(["model", "split", "measure"])

    def cell(model, split, measure):
        return cells.loc[(model, split, measure)]

    # copy share on test_id (problem a's 2 samples): base 1/2, 1; GRPO 1, 1
    base_copy = cell("base", "test_id", "copy_share")
    # the t-interval of 1/2 and 1 (2 seeds) reaches past 0 and 100: clipped to what a share can be
    mean, low, high = t_interval([0.5, 1.0])
    assert low < 0 and high > 100
    assert (base_copy["mean"], base_copy.ci_low, base_copy.ci_high) == pytest.approx((mean, 0, 100))
    assert base_copy.seed_values == "0:50.0000;1:100.0000" and base_copy.seeds == "0,1"
    grpo_copy = cell("grpo", "test_id", "copy_share")
    assert grpo_copy["mean"] == pytest.approx(100) and math.isnan(base_copy["diff"])
    # a difference is not clipped
    assert (grpo_copy["diff"], grpo_copy.diff_ci_low, grpo_copy.diff_ci_high) == pytest.approx(
        t_interval([0.5, 0.0])
    )
    assert grpo_copy.diff_ci_low < 0
    # process validity over all 4 samples; uncued pass@1 on problem b
    assert cell("base", "test_id", "process_validity")["mean"] == pytest.approx(100 * (2 / 4) / 2)
    assert cell("grpo", "test_id", "uncued_pass@1")["mean"] == pytest.approx(100 * 0.75)
    assert cell("grpo", "test_id", "cued_pass@1")["mean"] == pytest.approx(100)
    # the wrong-bet split: GRPO seed 1 solves one of two, copies the other
    assert cell("grpo", "test_wrongbet", "pass@1")["mean"] == pytest.approx(25)
    assert cell("grpo", "test_wrongbet", "copy_share")["mean"] == pytest.approx(75)
    md = out["md"].read_text()
    assert "| Model | Test (ID): process validity | Test (ID): copy share |" in md
    assert "Wrong bet: copy share |" in md
    grpo_row = next(line for line in md.splitlines() if line.startswith("| + GRPO |"))
    # uncued pass@1: 1, 1/2 against the base's 1/2, 0: the same +50 on both seeds
    assert "75.0 [" in grpo_row and "(+50.0 [+50.0, +50.0])" in grpo_row
    assert "t-interval" in md


def test_one_seed_has_no_interval_and_a_bad_file_is_named(tmp_path):
    paths = write_all(tmp_path, {"base": {0: EVALS["base"][0]}})
    rows = write_mechanism(paths, PROBLEMS, md=tmp_path / "m.md", csv=tmp_path / "m.csv")
    assert rows.ci_low.isna().all() and rows["mean"].notna().all()
    assert "n/a" in (tmp_path / "m.md").read_text()
    paths[0].write_text('{"problem_id": "a", "correct": true}\n')
    with pytest.raises(ValueError, match=r"test_id.jsonl: row 1: missing \['completion', "):
        read_samples(paths[0])
    paths[0].write_text(
        json.dumps({"problem_id": "zz", "completion": "", "correct": True, "process_validity": 0.0})
        + "\n"
    )
    with pytest.raises(ValueError, match=r"test_id.jsonl: .*problem 'zz': not a problem"):
        seed_values(paths, PROBLEMS)


SWEEP = {  # the lambda_cf sweep of a tiny config: run label -> its method and own settings
    "grpo": {"method": "grpo", "trainer": {}},
    "gc2po": {"method": "gc2po", "trainer": {}},
    "gc2po_lambda_cf_0.5": {"method": "gc2po", "trainer": {"lambda_cf": 0.5}},
    "gc2po_lambda_cf_0.2": {"method": "gc2po", "trainer": {"lambda_cf": 0.2}},
    "gc2po_lambda_exp_0.5": {"method": "gc2po", "trainer": {"lambda_exp": 0.5}},
}


def test_dose_response_over_a_lambda_cf_sweep(tmp_path):
    assert swept_runs(SWEEP, "gc2po", "lambda_cf") == {
        "gc2po_lambda_cf_0.2": 0.2,
        "gc2po_lambda_cf_0.5": 0.5,
    }
    evals = {
        "base": EVALS["base"],
        "gc2po_lambda_cf_0.5": EVALS["grpo"],
        "gc2po_lambda_cf_0.2": EVALS["base"],
    }
    values = seed_values(write_all(tmp_path, evals), PROBLEMS)
    out = {ext: tmp_path / f"dose.{ext}" for ext in ("md", "csv", "png")}
    rows = write_dose_response(
        values,
        SWEEP,
        measures_of(PROBLEMS),
        method="gc2po",
        key="lambda_cf",
        markers={"R_cf (audited)": 0.07},
        **out,
    )
    copy = rows[rows.measure.eq("copy_share") & rows.split.eq("test_id")]
    assert list(copy.run) == ["base", "gc2po_lambda_cf_0.2", "gc2po_lambda_cf_0.5"]
    assert copy["value"].iloc[1:].tolist() == [0.2, 0.5] and math.isnan(copy["value"].iloc[0])
    assert copy["mean"].tolist() == pytest.approx([75.0, 75.0, 100.0])
    md = out["md"].read_text()
    assert "### Dose response: GC2PO (paper) against lambda_cf" in md
    assert "| testbed | 0.2 | gc2po_lambda_cf_0.2 |" in md and "R_cf (audited) at 0.07" in md
    assert out["png"].stat().st_size > 1000 and out["png"].with_suffix(".pdf").exists()


def test_dose_response_refuses_a_setting_no_run_sweeps_or_a_non_number(tmp_path):
    with pytest.raises(ValueError, match="no run of 'gc2po' sets 'beta'"):
        write_dose_response(
            {},
            SWEEP,
            [],
            method="gc2po",
            key="beta",
            md=tmp_path / "a.md",
            csv=tmp_path / "a.csv",
            png=tmp_path / "a.png",
        )
    bad = {"x": {"method": "gc2po", "trainer": {"cf_state": "result"}}}
    with pytest.raises(ValueError, match="run 'x' sets cf_state to 'result', not a number"):
        swept_runs(bad, "gc2po", "cf_state")
