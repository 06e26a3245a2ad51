"""Evaluation files in the workflow's layout, written from chosen per-problem correctness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PROTOCOL = {
    "n": 1,
    "temperature": 0.6,
    "top_p": 0.95,
    "max_new_tokens": 96,
    "seed": 0,
    "stop": [],
    "backend": "transformers",
    "prompt": "testbed",
    "grader": "testbed oracle",
    "grader_versions": {"gc2po-graders": "0123456789ab"},
}


def write_eval(
    root: Path,
    block: str,
    model: str,
    seed: int,
    benchmark: str,
    correct: list[int],
    protocol: dict | None = None,
    labels: dict | None = None,
) -> Path:
    """One sample per problem p0, p1, ...; the summary carries ``protocol`` (and ``labels``: a
    testbed split's chance level and reachability)."""
    path = root / "eval" / block / model / f"seed{seed}" / f"{benchmark}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            json.dumps({"problem_id": f"p{i}", "sample_index": 0, "correct": bool(c)}) + "\n"
            for i, c in enumerate(correct)
        )
    )
    summary = {
        "pass@1": sum(correct) / len(correct),
        "protocol": {**PROTOCOL, **(protocol or {}), "seed": seed},
        **(labels or {}),
    }
    Path(str(path) + ".summary.json").write_text(json.dumps(summary))
    return path


@pytest.fixture
def eval_root(tmp_path):
    return tmp_path
