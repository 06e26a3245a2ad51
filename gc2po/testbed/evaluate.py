"""Evaluate a model on testbed splits with the oracle: accuracy, process validity, groups."""

from __future__ import annotations

from collections import Counter

from gc2po.evaluation.backends import SamplingConfig
from gc2po.testbed.generator import Problem
from gc2po.testbed.oracle import GROUPS, grade
from gc2po.testbed.warmstart import prompt_messages


def evaluate_split(backend, problems: list[Problem], sampling: SamplingConfig, p_threshold: float = 0.5) -> dict:
    """Sample ``sampling.n`` completions per problem and grade them with the oracle."""
    generations = backend.generate([prompt_messages(p) for p in problems], sampling)
    results = [grade(problems[g.prompt_index], g.text, p_threshold=p_threshold) for g in generations]
    groups = Counter(r.group for r in results)
    n = len(results)
    return {
        "problems": len(problems),
        "samples": n,
        "accuracy": sum(r.f for r in results) / n,
        "process_validity": sum(r.p for r in results) / n,
        "format_compliance": sum(r.formatted for r in results) / n,
        "mean_tokens": sum(g.num_tokens for g in generations) / n,
        "groups": {name: groups.get(name, 0) / n for name in GROUPS},
    }
