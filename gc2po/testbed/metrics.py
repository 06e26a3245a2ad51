"""Testbed metrics over graded samples (process validity, format compliance, the four groups);
the samples come from ``gc2po.evaluation.run``, the one evaluation path, which imports this
module (never the other way round)."""

from __future__ import annotations

from collections import Counter

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
