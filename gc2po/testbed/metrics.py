"""Testbed metrics over graded samples (process validity, format compliance, the four groups),
what one sample's record holds, and the oracle's grades of a training batch's completions; the
samples come from ``gc2po.evaluation.run``, the one evaluation path, which imports this module
(never the other way round)."""

from __future__ import annotations

import json
from collections import Counter

from gc2po.testbed.generator import Problem
from gc2po.testbed.mechanism import cue_fields
from gc2po.testbed.oracle import GROUPS, OracleResult, grade


def graded_completions(completions, meta_json, questions=None) -> list[OracleResult]:
    """The oracle's grades of completions [B] of the problems whose records' ``meta`` (JSON text)
    and questions come as TRL passes a dataset's columns to a reward function; a completion is a
    text or a conversation whose last message holds it."""
    out = []
    for completion, meta, question in zip(
        completions, meta_json, questions or [None] * len(completions)
    ):
        record = {"id": "", "question": question or "", "meta": json.loads(meta)}
        text = completion[-1]["content"] if isinstance(completion, list) else completion
        out.append(grade(Problem.from_record(record), text))
    return out


def graded_sample(problem: Problem, completion: str, p_threshold: float = 0.5) -> dict:
    """The fields of a testbed sample's evaluation record: the oracle's grades (``correct``,
    ``process_validity``, ``group``, ``formatted``) and what the completion does with the
    problem's bet (``gc2po.testbed.mechanism.cue_fields``: cued, bet, answer, copies_bet)."""
    result = grade(problem, completion, p_threshold=p_threshold)
    return {
        "correct": bool(result.f),
        "process_validity": result.p,
        "group": result.group,
        "formatted": result.formatted,
        **cue_fields(problem, completion, result.p),
    }


def testbed_metrics(samples: list[dict]) -> dict:
    """Means over the sample records that ``gc2po.evaluation.run`` writes for the testbed."""
    n = max(1, len(samples))
    groups = Counter(s["group"] for s in samples)
    return {
        "process_validity": sum(s["process_validity"] for s in samples) / n,
        "format_compliance": sum(s["formatted"] for s in samples) / n,
        "groups": {name: groups.get(name, 0) / n for name in GROUPS},
    }
