"""Write ``grader_disagreements.jsonl``: every peer-verdict case where grade_math disagrees with
the peer, with its class and why we keep that verdict. Not a test (pytest does not collect it);
``test_grader_agreement`` checks that the file names exactly the cases that disagree today.

Usage: PYTHONPATH=. python3 tests/evaluation/classify_grader_disagreements.py
(exits 1, writing nothing, when a disagreement has no class below: classify it first).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
CASES = HERE / "peer_grader_cases.jsonl"
OUTPUT = HERE / "grader_disagreements.jsonl"

CLASSES = {  # class -> (why our verdict stands, the cases)
    "decimal comma": (
        "math-verify reads '1000,99' and '2,74' as decimals; we read a comma as a thousands "
        "or list "
        "separator (-2,1 is two answers, as the MATH golds write lists), never a decimal comma",
        ["peer-0006", "peer-0007", "peer-0008"],
    ),
    "number the text only ends near": (
        "the completion ends '... there are 12 distinct arithmetic sequences ... I hope it is "
        "correct. <|im_start|>user': no box, answer phrase or closing expression states 12; we "
        "grade only a stated final answer",
        ["peer-0141"],
    ),
    "gold boxes joined by a non-connector": (
        "the gold is '$\\boxed{35 cm} ++++++ \\boxed{4}$' (a math-verify test artefact): '++++++' "
        "joins no multi-part answer, so the gold is its last box, 4, and {35 cm, 4} is not 4",
        ["peer-0185"],
    ),
    "order of a list (peers disagree)": (
        "hendrycks/math compares strings, so '10, 4, -2' != '4, 10, -2'; math-verify, which "
        "we use, "
        "compares the answers as a set, as a problem asking for all solutions means",
        ["peer-0263", "peer-0270"],
    ),
    "judge refuses a simplification": (
        "simple-evals' judge example says 649 != 3245/5, though 3245/5 = 649 exactly; "
        "math-verify's symbolic equality says equal",
        ["peer-0285"],
    ),
}


def disagreements() -> list[dict]:
    from gc2po.evaluation.graders import grade_math

    cases = [
        json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    return [
        case
        for case in cases
        if grade_math(case["completion"], case["gold"]) != case["peer_verdict"]
    ]


def classified(found: list[dict]) -> tuple[list[dict], list[str]]:
    """(one row per disagreement with its class, the ids no class names)."""
    class_of = {case_id: name for name, (_, ids) in CLASSES.items() for case_id in ids}
    rows, missing = [], []
    for case in found:
        name = class_of.get(case["id"])
        if name is None:
            missing.append(case["id"])
            continue
        rows.append(
            {
                "id": case["id"],
                "class": name,
                "why": CLASSES[name][0],
                "kind": case["kind"],
                "peer_verdict": case["peer_verdict"],
                "repo": case["repo"],
                "path": case["path"],
                "test": case["test"],
            }
        )
    return rows, missing


def main() -> int:
    rows, missing = classified(disagreements())
    if missing:
        print(f"unclassified disagreements: {missing}; add them to CLASSES", file=sys.stderr)
        return 1
    OUTPUT.write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8"
    )
    print(f"{len(rows)} disagreements in {len(CLASSES)} classes -> {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
