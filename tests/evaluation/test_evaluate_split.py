"""The in-memory testbed evaluation (gc2po.evaluation.run.evaluate_split) and the testbed's own
metrics, which the testbed computes without importing evaluation (no import circle)."""

from __future__ import annotations

import subprocess
import sys

from gc2po.evaluation.backends import Generation, SamplingConfig
from gc2po.evaluation.run import evaluate_split
from gc2po.testbed.generator import generate_splits, solution_text


class AnswerKey:
    """A backend whose first sample of every problem is the correct solution, the rest empty."""

    def __init__(self, problems):
        self.solutions = [solution_text(problem, "correct") for problem in problems]

    def generate(self, prompts, sampling, progress=None):
        return [
            Generation(i, k, self.solutions[i] if k == 0 else "", 10, True)
            for i in range(len(prompts))
            for k in range(sampling.n)
        ]


def test_evaluate_split_grades_with_the_oracle_and_adds_the_testbed_metrics():
    problems = generate_splits({"test_id": 3}, seed=0)["test_id"]
    result = evaluate_split(AnswerKey(problems), problems, SamplingConfig(n=2))
    counts = [result[key] for key in ("problems", "samples", "accuracy", "mean_tokens")]
    assert counts == [3, 6, 0.5, 10]
    assert result["process_validity"] == 0.5 and result["format_compliance"] == 0.5
    assert sum(result["groups"].values()) == 1.0


def test_the_testbed_metrics_import_no_evaluation_module():
    code = (
        "import sys, gc2po.testbed.metrics\n"
        "print(sorted(m for m in sys.modules if m.startswith('gc2po.evaluation')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
