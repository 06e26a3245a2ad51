"""Normalised record files (JSONL, one ``{id, question, answer, ...}`` record a line): what
training, evaluation, the testbed and the audit read."""

from __future__ import annotations

import json
from pathlib import Path


def read_jsonl(path: str | Path) -> list[dict]:
    """The records of ``path``; a row that is not JSON or lacks id, question or answer fails
    naming the file and the (1-based) row."""
    path = Path(path)
    records = []
    try:
        lines = path.read_text().splitlines()
    except OSError as err:
        raise ValueError(f"{path}: cannot read: {err}") from err
    for row, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: row {row}: invalid JSON: {err}") from err
        for key in ("id", "question", "answer"):
            if key not in record:
                raise ValueError(f"{path}: row {row}: missing field {key!r}")
        records.append(record)
    return records
