"""Testbed metrics over graded samples (accuracy, process validity, format compliance, the four
groups); the samples come from ``gc2po.evaluation.run``, the one evaluation path."""

from __future__ import annotations

from collections import Counter

from gc2po.testbed.generator import Problem
from gc2po.testbed.oracle import GROUPS


def testbed_metrics(samples: list[dict]) -> dict:
    """Means over the sample records that ``gc2po.evaluation.run`` writes for the testbed."""
    n = max(1, len(samples))
    groups = Counter(s["group"] for s in samples)
    return {
        "process_validity": sum(s["process_validity"] for s in samples) / n,
        "format_compliance": sum(s["formatted"] for s in samples) / n,
        "groups": {name: groups.get(name, 0) / n for name in GROUPS},
    }


def evaluate_split(backend, problems: list[Problem], sampling, p_threshold: float = 0.5) -> dict:
    """Sample ``sampling.n`` completions per problem and grade them with the oracle (in memory;
    the workflow and ``gc2po eval`` write files through ``gc2po.evaluation.run.evaluate``)."""
    from gc2po.evaluation.run import generate_and_grade

    _, samples = generate_and_grade(backend, [p.record() for p in problems], "testbed", sampling,
                                    p_threshold=p_threshold)
    n = max(1, len(samples))
    return {"problems": len(problems), "samples": len(samples), "accuracy": sum(s["correct"] for s in samples) / n,
            "mean_tokens": sum(s["tokens"] for s in samples) / n, **testbed_metrics(samples)}
