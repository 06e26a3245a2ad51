"""Graders on every gold answer of the shared mirrors, equivalent forms and wrong answers."""

from pathlib import Path

import pytest

from gc2po.data import load_benchmark
from gc2po.evaluation.graders import grade_choice, grade_label, grade_math, grade_none_answer

MIRRORS = Path(__file__).resolve().parents[3] / "shared" / "data" / "benchmarks"
FILES = {
    "aime2024": "aime2024.json", "aime2025": "aime2025.jsonl", "amc2023": "amc2023.jsonl", "math500": "math500.json",
    "minerva": "minerva.json", "gsm8k": "gsm8k_test.json", "gsmplus": "gsmplus_testmini.jsonl",
    "commonsenseqa": "commonsenseqa_validation.jsonl", "folio": "folio_validation.jsonl",
    "aime_train": "aime_1983_2023.json", "numinamath": "numinamath_cot_2k_sample.jsonl",
}
# Gold answers math-verify cannot parse as one expression; graded by exact match instead.
KNOWN_UNPARSEABLE = {"numinamath-00235": "multi-part answer (two parameter ranges with their solutions)"}

pytestmark = pytest.mark.skipif(not MIRRORS.exists(), reason=f"shared mirrors not found at {MIRRORS}")


def wrap(record):
    grader = record["meta"]["grader"]
    return f"The final answer is \\boxed{{{record['answer']}}}." if grader != "code" else None


@pytest.mark.parametrize("name", sorted(FILES))
def test_every_gold_answer_grades_correct_against_itself(name):
    records = load_benchmark(name, MIRRORS / FILES[name])
    failures = []
    for record in records:
        grader, completion = record["meta"]["grader"], wrap(record)
        if grader == "math":
            ok = grade_math(completion, record["answer"], exact_match_fallback=False)
            if not ok and record["id"] in KNOWN_UNPARSEABLE:
                ok = grade_math(completion, record["answer"])  # the exact-match path must hold
        elif grader == "choice":
            ok = grade_choice(completion, record["answer"])
        elif grader == "label":
            ok = grade_label(completion, record["answer"])
        elif grader == "none_answer":
            ok = grade_none_answer(completion, record["answer"])
        else:
            raise AssertionError(f"unexpected grader {grader}")
        if not ok:
            failures.append((record["id"], record["answer"]))
    assert failures == []


@pytest.mark.parametrize(
    "completion, gold, expected",
    [
        ("\\boxed{0.5}", "\\frac{1}{2}", True),
        ("\\boxed{\\frac{1}{2}}", "0.5", True),
        ("\\boxed{(3,\\frac{\\pi}{2})}", "\\left( 3, \\frac{\\pi}{2} \\right)", True),
        ("so it costs \\boxed{18 \\text{ dollars}}", "18", True),
        ("\\boxed{142}", "142.0", True),
        ("\\boxed{19}", "18", False),
        ("\\boxed{(3, \\pi)}", "\\left( 3, \\frac{\\pi}{2} \\right)", False),
        ("no answer given", "18", False),
        ("so m+n=13, and then we continue without concluding", "13", False),  # numbers in passing do not count
        ("The final answer is 13.", "13", True),
        ("The answer is $\\frac{1}{2}$", "0.5", True),
        ("", "18", False),
    ],
)
def test_math_equivalences_and_wrong_answers(completion, gold, expected):
    assert grade_math(completion, gold) is expected


def test_choice_label_and_none_graders():
    assert grade_choice("\\boxed{B}", "B") and grade_choice("The answer is (c)", "C")
    assert not grade_choice("\\boxed{C}", "B") and not grade_choice("no idea", "B")
    assert grade_label("\\boxed{Unknown}", "Uncertain") and grade_label("\\boxed{\\text{True}}", "True")
    assert not grade_label("\\boxed{True}", "False")
    assert grade_none_answer("\\boxed{None}", "None") and not grade_none_answer("\\boxed{5}", "None")
