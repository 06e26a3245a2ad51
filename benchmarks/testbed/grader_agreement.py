"""Agreement of gc2po's math grader with other projects' grader verdicts
(tests/evaluation/peer_grader_cases.jsonl): on every case, and on the cases that do not come from
math-verify's own test suite (our grader calls math-verify, so those agree largely by
construction).

    python3 benchmarks/testbed/grader_agreement.py
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout's tests package
from tests.evaluation.test_grader_agreement import (  # noqa: E402
    MATH_VERIFY,
    load_cases,
    report,
    tally,
)


def main() -> None:
    cases = load_cases()
    print(f"cases per repository: {dict(Counter(c['repo'] for c in cases).most_common())}")
    for name, chosen in (
        ("all", cases),
        ("not math-verify's", [c for c in cases if c["repo"] != MATH_VERIFY]),
    ):
        agree, total, disagreements = tally(chosen)
        print(report(name, agree, total) + f"; disagreements: {', '.join(disagreements)}")


if __name__ == "__main__":
    main()
