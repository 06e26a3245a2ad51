from gc2po.testbed.generator import SPLITS, Problem, generate_splits, solution_text
from gc2po.testbed.oracle import grade

SIZES = {"train": 300, "test_id": 60, "test_rephrase": 60, "test_distractor": 60, "test_longer": 60}


def test_generator_is_deterministic_per_seed():
    a, b, c = generate_splits(SIZES, 3), generate_splits(SIZES, 3), generate_splits(SIZES, 4)
    assert a == b
    assert [p.question for p in a["train"]] != [p.question for p in c["train"]]


def test_no_problem_text_in_two_splits():
    splits = generate_splits(SIZES, 0)
    seen = {}
    for name, problems in splits.items():
        for problem in problems:
            assert problem.question not in seen, f"{problem.question!r} in {seen.get(problem.question)} and {name}"
            seen[problem.question] = name


def test_split_properties():
    splits = generate_splits(SIZES, 0)
    assert all(2 <= len(p.steps) <= 4 for p in splits["train"] + splits["test_id"])
    assert all(len(p.steps) >= 5 for p in splits["test_longer"])  # longer than anything in training
    train_text = " ".join(p.question for p in splits["train"])
    assert "At first" not in train_text and any("At first" in p.question or "collects" in p.question for p in splits["test_rephrase"])
    # distractors add sentences with numbers that are not part of the chain
    extra = [p for p in splits["test_distractor"] if p.question.count(".") >= len(p.steps) + 3]
    assert len(extra) == len(splits["test_distractor"])


def test_reference_solutions_and_records_round_trip():
    for problem in generate_splits({"train": 50}, 1)["train"]:
        assert Problem.from_record(problem.record()) == problem
        result = grade(problem, solution_text(problem, "correct"))
        assert result.f == 1 and result.p == 1.0 and result.group == "near_ideal"
        slip = grade(problem, solution_text(problem, "slip"))
        assert slip.f == 0 and slip.group == "near_miss" or (slip.f == 0 and len(problem.steps) == 1)
        shortcut = grade(problem, solution_text(problem, "shortcut"))
        assert shortcut.f == 1 and shortcut.p < 0.5 and shortcut.group == "lucky_guess"


def test_unknown_split_raises():
    import pytest

    with pytest.raises(ValueError, match="unknown testbed split"):
        generate_splits({"validation": 3}, 0)
    assert set(SPLITS) == {"train", "test_id", "test_rephrase", "test_distractor", "test_longer"}
