"""The process-validity oracle on hand-written completions, malformed ones included."""

import pytest

from gc2po.testbed.generator import Problem
from gc2po.testbed.oracle import assign_group, grade

# 5 apples, +3, *2, -4: values 8, 16, 12
PROBLEM = Problem(
    "p", "test_id", "Ana has 5 apples. ...", 5, (("+", 3), ("*", 2), ("-", 4)), (8, 16, 12)
)


@pytest.mark.parametrize(
    "completion, f, valid, group",
    [
        (
            "<episode_1>5+3=8</episode_1><episode_2>8*2=16</episode_2><episode_3>16-4=12</episode_3>\\boxed{12}",
            1,
            (True, True, True),
            "near_ideal",
        ),
        # slip in step 2; step 3 is valid given the model's own earlier value (18), answer wrong
        (
            "<episode_1>5+3=8</episode_1><episode_2>8*2=18</episode_2><episode_3>18-4=14</episode_3>\\boxed{14}",
            0,
            (True, False, True),
            "near_miss",
        ),
        # right answer, invalid steps (wrong operands)
        (
            "<episode_1>5+4=8</episode_1><episode_2>8*3=16</episode_2><episode_3>16-4=12</episode_3>\\boxed{12}",
            1,
            (False, False, True),
            "lucky_guess",
        ),
        ("<episode_1>1+1=3</episode_1>\\boxed{7}", 0, (False,), "fully_bad"),
        # unclosed tags and spaces still parse
        (
            "<episode_1> 5 + 3 = 8 <episode_2> 8 * 2 = 16 <episode_3> 16 - 4 = 12 \\boxed{ 12 }",
            1,
            (True, True, True),
            "near_ideal",
        ),
        # no tags: blank-line fallback episodes
        ("5+3=8\n\n8*2=16\n\n16-4=12 \\boxed{12}", 1, (True, True, True), "near_ideal"),
        # no boxed answer, no equations, empty
        ("<episode_1>5+3=8</episode_1>", 0, (True,), "fully_bad"),
        ("garbage", 0, (False,), "fully_bad"),
        ("", 0, (False,), "fully_bad"),
    ],
)
def test_hand_written_completions(completion, f, valid, group):
    result = grade(PROBLEM, completion)
    assert result.f == f
    assert result.episode_valid == valid
    assert result.p == pytest.approx(sum(valid) / max(3, len(valid)))
    assert result.group == group


def test_extra_episodes_dilute_validity():
    text = (
        "<episode_1>5+3=8</episode_1><episode_2>8*2=16</episode_2><episode_3>16-4=12</episode_3>"
        "<episode_4>12+0=12</episode_4>\\boxed{12}"
    )
    assert grade(PROBLEM, text).p == pytest.approx(3 / 4)


def test_group_thresholds():
    assert assign_group(1, 0.5, 0.5) == "near_ideal"
    assert assign_group(1, 0.49, 0.5) == "lucky_guess"
    assert assign_group(0, 0.8, 0.9) == "fully_bad"
