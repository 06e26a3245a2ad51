"""Agreement of grade_math with other projects' grader verdicts on a held set of cases.

``peer_grader_cases.jsonl`` holds the parametrised cases of math-verify's test suite, the MATH
authors' ``is_equiv`` tests (hendrycks/math), open-r1's and TRL's accuracy-reward tests,
simple-evals' equality examples and NeMo-Skills' ``math_equal`` tests, each with its repository,
path, commit, test and licence (rebuilt by ``build_peer_grader_cases.py``; selection rule in its
docstring). Where peers disagree with each other (order of a list, a judge that refuses nontrivial
simplification) or with our principle (a number the text merely ends near, without stating it) we
disagree too; the rest must agree. Every disagreement is named, with its class, in
``grader_disagreements.jsonl`` (written by ``classify_grader_disagreements.py``).
"""

import json
from collections import Counter
from pathlib import Path

import pytest

from gc2po.evaluation.graders import grade_math

CASES = Path(__file__).with_name("peer_grader_cases.jsonl")
DISAGREEMENTS = Path(__file__).with_name("grader_disagreements.jsonl")
MATH_VERIFY = "huggingface/Math-Verify"
FIELDS = {
    "id",
    "completion",
    "gold",
    "peer_verdict",
    "kind",
    "repo",
    "path",
    "commit",
    "test",
    "licence",
    "config",
}


def load_cases() -> list[dict]:
    return [
        json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def test_every_case_names_its_source_and_licence():
    cases = load_cases()
    assert len(cases) >= 250 and len({c["id"] for c in cases}) == len(cases)
    for case in cases:
        assert set(case) == FIELDS, case["id"]
        assert case["repo"] and case["path"] and len(case["commit"]) == 40 and case["licence"], (
            case["id"]
        )
        assert case["kind"] == ("boxed" if "\\boxed" in case["completion"] else "unboxed"), case[
            "id"
        ]
    assert {c["repo"] for c in cases} >= {
        "huggingface/Math-Verify",
        "hendrycks/math",
        "huggingface/open-r1",
        "openai/simple-evals",
        "huggingface/trl",
        "NVIDIA/NeMo-Skills",
    }


def tally(cases: list[dict]) -> tuple[Counter, Counter, list[str]]:
    """(agreeing cases per kind, cases per kind, ids of the disagreements) of grade_math."""
    agree, total, disagreements = Counter(), Counter(), []
    for case in cases:
        total[case["kind"]] += 1
        if grade_math(case["completion"], case["gold"]) == case["peer_verdict"]:
            agree[case["kind"]] += 1
        else:
            disagreements.append(case["id"])
    return agree, total, disagreements


def report(name: str, agree: Counter, total: Counter) -> str:
    boxed, every = agree["boxed"] / total["boxed"], sum(agree.values()) / sum(total.values())
    return (
        f"{name}: boxed {agree['boxed']}/{total['boxed']} = {boxed:.3f}, overall "
        f"{sum(agree.values())}/{sum(total.values())} = {every:.3f}"
    )


@pytest.mark.slow
def test_agreement_with_peer_verdicts():
    """On every case, and on the cases outside math-verify's own suite: grade_math calls
    math-verify, so its suite's cases agree largely by construction; the others are the test."""
    cases = load_cases()
    agree, total, disagreements = tally(cases)
    others = [c for c in cases if c["repo"] != MATH_VERIFY]
    agree_others, total_others, _ = tally(others)
    summary = [report("all", agree, total), report("not math-verify's", agree_others, total_others)]
    print(*summary, *disagreements, sep="\n")
    boxed = agree["boxed"] / total["boxed"]
    assert boxed >= 0.97 and sum(agree.values()) / len(cases) >= 0.92, summary + disagreements
    assert len(others) >= 90 and sum(agree_others.values()) / len(others) >= 0.95, summary
    classified = [
        json.loads(line) for line in DISAGREEMENTS.read_text(encoding="utf-8").splitlines()
    ]
    assert [row["id"] for row in classified] == disagreements, (
        "grader_disagreements.jsonl is stale: run tests/evaluation/classify_grader_disagreements.py"
    )
    assert all(row["class"] and row["why"] for row in classified)
