"""The candidate rule (a family's ``candidates``): the three conditions by hand, each failing
alone, and a rule that cannot check a condition never passes the run."""

import math

import pandas as pd
import pytest

from gc2po.reporting.candidates import (
    candidate_rows,
    paired,
    parse_seed_values,
    write_candidates,
)

SPLIT = "test_wrongbet"


def _family(verdicts: dict[str, str]) -> pd.DataFrame:
    """Family rows (gc2po.reporting.family's columns the rule reads), one per run vs grpo."""
    return pd.DataFrame(
        [
            {
                "block": "testbed",
                "run": run,
                "reference": "grpo",
                "diff": 10.0,
                "holm_p": 0.01,
                "verdict": verdict,
                "seeds": "0,1,2",
            }  # fmt: skip
            for run, verdict in verdicts.items()
        ]
    )


def _cell(model, split, measure, values):
    return {
        "block": "testbed",
        "model": model,
        "split": split,
        "measure": measure,
        "seed_values": ";".join(f"{s}:{v:.4f}" for s, v in enumerate(values)),
    }


def _mechanism(cells: dict[str, tuple[list[float], list[float]]]) -> pd.DataFrame:
    """model -> (copy share on wrong bet per seed, uncued test_id pass@1 per seed), in %."""
    rows = []
    for model, (copy, uncued) in cells.items():
        rows += [
            _cell(model, SPLIT, "copy_share", copy),
            _cell(model, "test_id", "uncued_pass@1", uncued),
        ]
    return pd.DataFrame(rows)


GRPO = ([50.0, 60.0, 70.0], [70.0, 70.0, 70.0])


def test_the_three_conditions_by_hand():
    mechanism = _mechanism(
        {
            "grpo": GRPO,
            # copies less (-20 each seed), uncued -1, -1, -1: the lower end is -1 > -2
            "good": ([30.0, 40.0, 50.0], [69.0, 69.0, 69.0]),
            # copies more on average: +5, -5, +3 -> +1 > 0
            "copier": ([55.0, 55.0, 73.0], [70.0, 71.0, 72.0]),
            # uncued -1, -5, -3: mean -3, its lower end far below -2
            "forgets": ([30.0, 40.0, 50.0], [69.0, 65.0, 67.0]),
            # every condition but the first
            "not_higher": ([30.0, 40.0, 50.0], [70.0, 70.0, 70.0]),
        }
    )
    family = _family(
        {
            "good": "higher (Holm)",
            "copier": "higher (Holm)",
            "forgets": "higher (Holm)",
            "not_higher": "not decided",
        }  # fmt: skip
    )
    rows = candidate_rows(family, mechanism, split=SPLIT, uncued_margin=2).set_index("run")
    assert rows.loc["good", "copy_diff"] == pytest.approx(-20.0)
    assert rows.loc["good", "uncued_diff"] == pytest.approx(-1.0)
    # three identical differences: a zero-width interval at -1
    assert rows.loc["good", "uncued_diff_ci_low"] == pytest.approx(-1.0)
    assert rows.loc["copier", "copy_diff"] == pytest.approx(1.0)
    forgets_low = rows.loc["forgets", "uncued_diff_ci_low"]
    # t(0.975, 2) = 4.303; sd of (-1, -5, -3) = 2: -3 - 4.303 * 2 / sqrt(3)
    assert forgets_low == pytest.approx(-3 - 4.302653 * 2 / math.sqrt(3), abs=1e-4)
    assert rows.passes.to_dict() == {"good": True, "copier": False, "forgets": False,
                                     "not_higher": False}  # fmt: skip
    assert not rows.loc["copier", "copies_no_more"] and rows.loc["copier", "uncued_holds"]
    assert rows.loc["forgets", "copies_no_more"] and not rows.loc["forgets", "uncued_holds"]
    assert not rows.loc["not_higher", "beats"]


def test_lower_is_not_higher():
    mechanism = _mechanism({"grpo": GRPO, "r": ([30.0, 40.0, 50.0], [70.0, 70.0, 70.0])})
    rows = candidate_rows(_family({"r": "lower (Holm)"}), mechanism, split=SPLIT, uncued_margin=2)
    assert not rows.passes.iloc[0]


def test_what_cannot_be_checked_does_not_pass():
    """One seed: no interval, condition 3 unchecked; a run missing from the mechanism table:
    no copy share. Neither passes, and nothing is NaN-compared into a yes."""
    one_seed = pd.DataFrame(
        [
            _cell("grpo", SPLIT, "copy_share", [50.0]),
            _cell("grpo", "test_id", "uncued_pass@1", [70.0]),
            _cell("r", SPLIT, "copy_share", [10.0]),
            _cell("r", "test_id", "uncued_pass@1", [90.0]),
        ]
    )
    rows = candidate_rows(_family({"r": "higher (Holm)"}), one_seed, split=SPLIT, uncued_margin=2)
    assert rows.copies_no_more.iloc[0] and not rows.uncued_holds.iloc[0]
    assert not rows.passes.iloc[0]
    missing = candidate_rows(
        _family({"absent": "higher (Holm)"}),
        _mechanism({"grpo": GRPO}),
        split=SPLIT,
        uncued_margin=2,
    )
    assert not missing.copies_no_more.iloc[0] and not missing.passes.iloc[0]
    assert math.isnan(missing.copy_diff.iloc[0])


def test_pairing_is_by_seed():
    assert parse_seed_values("0:1.5;2:3.0") == {0: 1.5, 2: 3.0}
    assert parse_seed_values(float("nan")) == {}
    # seeds 0 and 2 shared; seed 1 of the run has no partner and is left out
    mean, low, high = paired({0: 10.0, 1: 99.0, 2: 20.0}, {0: 5.0, 2: 5.0})
    assert mean == pytest.approx(10.0)


def test_markdown_names_the_rule_and_who_passed(tmp_path):
    mechanism = _mechanism({"grpo": GRPO, "good": ([30.0, 40.0, 50.0], [69.0, 69.0, 69.0])})
    md, csv = tmp_path / "t" / "candidates_f.md", tmp_path / "t" / "candidates_f.csv"
    write_candidates(
        _family({"good": "higher (Holm)"}), mechanism, family="f", split=SPLIT,
        uncued_margin=2, md=md, csv=csv,
    )  # fmt: skip
    text = md.read_text()
    assert "| **yes** |" in text and "Passed: " in text and "above -2 points" in text
    assert pd.read_csv(csv).passes.tolist() == [True]
