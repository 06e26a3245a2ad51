"""What a signal makes of the cue (``gc2po.audit.cue_view``): the copy-vs-derived gap of its z
among right answers, by hand and as properties; rho given f over problems with and without a bet;
and operand sensitivity read over equation steps alone."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gc2po.audit.cue_view import copy_gap, problem_gaps, rho_by_cue
from gc2po.audit.signals import signal_audit
from gc2po.audit.training_stats import BonusTransform

TRANSFORM = BonusTransform(group_size=4, cf_std_floor=1e-6, cf_z_clip=10.0)


def test_problem_gaps_by_hand():
    completions = pd.DataFrame(
        {
            "problem_id": ["a"] * 4 + ["b"] * 4 + ["c"] * 4,
            "f": [1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 1, 1],
            "cued": [True] * 8 + [False] * 4,
            "copy": [True, False, False, False, True, True, False, False, False] + [False] * 3,
            "z": [2.0, -1.0, 0.0, 5.0, 1.0, 1.0, -3.0, 0.0, 9.0, 1.0, 1.0, 1.0],
        }
    )
    # a: copy 2.0 against derived mean -0.5 (the f = 0 row takes no part) -> 2.5;
    # b: no derived answer among its right ones -> left out; c: no bet -> left out
    assert problem_gaps(completions).tolist() == [2.5]


def frame_of(signal_of, problems: int = 30, seed: int = 0) -> pd.DataFrame:
    """Cued problems of 4 completions with 1-2 episodes each: two right copies (one episode,
    invalid), two right derivations (two valid episodes); the signal ``signal_of(row)``."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(problems):
        for sample in range(4):
            copy = sample < 2
            for episode in range(1 if copy else 2):
                row = {"problem_id": f"p{p}", "prompt_index": p, "sample_index": sample,
                       "episode": episode, "tokens": 5, "f": 1, "valid": 0 if copy else 1,
                       "cued": True, "copy": copy, "noise": rng.normal()}  # fmt: skip
                row["signal"] = signal_of(row)
                rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    "signal_of, sign",
    [
        (lambda row: float(row["copy"]) + 0.1 * row["noise"], 1),  # favours the copy
        (lambda row: float(row["valid"]) + 0.1 * row["noise"], -1),  # favours the derivation
    ],
)
def test_the_gap_has_the_sign_of_what_the_signal_favours(signal_of, sign):
    found = copy_gap(frame_of(signal_of), "signal", TRANSFORM, num_resamples=200)
    assert found["copy_gap_problems"] == 30
    assert sign * found["copy_gap_ci_low"] > 0 and sign * found["copy_gap_ci_high"] > 0


def test_a_signal_blind_to_the_copy_has_no_gap_and_a_constant_one_exactly_none():
    blind = copy_gap(frame_of(lambda row: row["noise"]), "signal", TRANSFORM, num_resamples=200)
    assert blind["copy_gap_ci_low"] < 0 < blind["copy_gap_ci_high"]
    constant = copy_gap(frame_of(lambda row: 1.0), "signal", TRANSFORM, num_resamples=50)
    assert constant["copy_gap"] == 0.0


def test_no_problem_with_both_kinds_gives_nan_and_zero_problems():
    frame = frame_of(lambda row: row["noise"])
    frame["copy"] = False
    found = copy_gap(frame, "signal", TRANSFORM, num_resamples=10)
    assert found["copy_gap_problems"] == 0 and np.isnan(found["copy_gap"])


def test_rho_over_cued_and_uncued_problems():
    # problem a (cued): signal follows validity (+1); problem b (no bet): against it (-1)
    frame = pd.DataFrame(
        {
            "problem_id": ["a"] * 4 + ["b"] * 4,
            "f": [1] * 8,
            "valid": [1, 0, 1, 0, 1, 0, 1, 0],
            "s": [2.0, 1.0, 2.0, 1.0, 1.0, 2.0, 1.0, 2.0],
            "cued": [True] * 4 + [False] * 4,
        }
    )
    found = rho_by_cue(frame, "s")
    assert found["rho_cued"] == pytest.approx(1.0) and found["rho_uncued"] == pytest.approx(-1.0)
    assert found["rho_sd"] == pytest.approx(1.0)  # per-problem correlations +1 and -1


def test_the_audit_reads_operand_sensitivity_over_equation_steps_too():
    frame = frame_of(lambda row: row["valid"] + 0.1 * row["noise"])
    frame["operand_sensitivity"] = frame.signal
    frame["equation"] = ~frame["copy"]
    rows = {
        row["signal"]: row for row in signal_audit(frame, num_resamples=20, transform=TRANSFORM)
    }
    assert set(rows) == {"operand_sensitivity", "operand_sensitivity|equation"}
    assert rows["operand_sensitivity"]["episodes"] == len(frame)
    assert rows["operand_sensitivity|equation"]["episodes"] == int(frame.equation.sum())
    assert rows["operand_sensitivity"]["copy_gap"] < 0  # the copies' steps score lower
    assert "copy_gap" in rows["operand_sensitivity|equation"]
