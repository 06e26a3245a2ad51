"""What a sample does with its problem's bet, and the per-seed mechanism measures, on hand-written
completions."""

import inspect
import math

import pytest

from gc2po.testbed.generator import Problem, solution_text
from gc2po.testbed.mechanism import (
    MEASURE_SPLITS,
    MEASURES,
    VALID_STEPS,
    annotate,
    cue_fields,
    measures_of,
    seed_measures,
)
from gc2po.testbed.metrics import graded_sample
from gc2po.testbed.oracle import assign_group

# 5 apples, +3, *2: values 8, 16
STEPS, VALUES = (("+", 3), ("*", 2)), (8, 16)
RIGHT_BET = Problem("r", "test_id", "...", 5, STEPS, VALUES, 16)
WRONG_BET = Problem("w", "test_wrongbet", "...", 5, STEPS, VALUES, 18)
NO_BET = Problem("n", "test_id", "...", 5, STEPS, VALUES)
SOLVED = "<episode_1>5+3=8</episode_1><episode_2>8*2=16</episode_2>\\boxed{16}"


def test_the_valid_steps_line_is_the_oracles_group_line():
    assert VALID_STEPS == inspect.signature(assign_group).parameters["p_threshold"].default


@pytest.mark.parametrize(
    "problem, completion, expected",
    [
        # the warm start's copy of a right bet: the bet's number, no step of the problem
        (RIGHT_BET, solution_text(RIGHT_BET, "copy"), (True, 16, 16, True)),
        # a correct solution states the right bet's number too, but derives it: not a copy
        (RIGHT_BET, SOLVED, (True, 16, 16, False)),
        # a copied wrong bet; any text whose answer is the bet without valid steps copies it
        (WRONG_BET, solution_text(WRONG_BET, "copy"), (True, 18, 18, True)),
        (WRONG_BET, "<episode_1>5+4=9</episode_1>\\boxed{18}", (True, 18, 18, True)),
        # a slip landing on the wrong bet with valid steps (p = 1/2): not a copy
        (
            WRONG_BET,
            "<episode_1>5+3=8</episode_1><episode_2>8*2=18</episode_2>\\boxed{18}",
            (True, 18, 18, False),
        ),
        (WRONG_BET, SOLVED, (True, 18, 16, False)),
        (WRONG_BET, "no answer", (True, 18, None, False)),
        (NO_BET, SOLVED, (False, None, 16, None)),
    ],
)
def test_cue_fields(problem, completion, expected):
    graded = graded_sample(problem, completion)  # what an evaluation record holds
    fields = cue_fields(problem, completion, graded["process_validity"])
    assert (fields["cued"], fields["bet"], fields["answer"], fields["copies_bet"]) == expected
    assert {k: graded[k] for k in fields} == fields


def sample(problem_id, correct, validity, completion="\\boxed{0}"):
    return {
        "problem_id": problem_id,
        "completion": completion,
        "correct": correct,
        "process_validity": validity,
    }


def test_seed_measures_by_hand():
    problems = {"r": RIGHT_BET, "n": NO_BET}
    test_id = annotate(
        [
            sample("r", True, 0.0, solution_text(RIGHT_BET, "copy")),  # copies, right
            sample("r", True, 1.0, SOLVED),  # solves, right
            sample("r", False, 0.5, "\\boxed{3}"),
            sample("n", True, 1.0, SOLVED),
            sample("n", False, 0.0, "\\boxed{7}"),
        ],
        problems,
    )
    wrongbet = annotate(
        [
            sample("w", False, 0.0, solution_text(WRONG_BET, "copy")),
            sample("w", True, 1.0, SOLVED),
            sample("w", False, 0.0, "\\boxed{1}"),
            sample("w", False, 0.0, solution_text(WRONG_BET, "copy")),
        ],
        {"w": WRONG_BET},
    )
    values = seed_measures({"test_id": test_id, "test_wrongbet": wrongbet})
    assert values == pytest.approx(
        {
            "test_id:process_validity": (0 + 1 + 0.5 + 1 + 0) / 5,
            "test_id:copy_share": 1 / 3,  # of the 3 samples of the problem with a bet
            "test_id:cued_pass@1": 2 / 3,
            "test_id:uncued_pass@1": 1 / 2,
            "test_wrongbet:pass@1": 1 / 4,
            "test_wrongbet:copy_share": 2 / 4,
        }
    )
    # no problem with a bet: its measures are undefined, not 0
    only_uncued = seed_measures({"test_id": [s for s in test_id if not s["cued"]]})
    assert math.isnan(only_uncued["test_id:copy_share"])
    assert set(only_uncued) == {m.key for m in measures_of(["test_id"])}


def test_measures_are_keyed_uniquely_and_a_sample_of_another_split_fails():
    assert len({m.key for m in MEASURES}) == len(MEASURES)
    assert MEASURE_SPLITS == ("test_id", "test_wrongbet")
    with pytest.raises(ValueError, match="problem 'x': not a problem of the split"):
        annotate([sample("x", True, 1.0)], {"r": RIGHT_BET})
