"""Normalised record files: read back, and a bad row named with its file and row."""

from __future__ import annotations

import pytest

from gc2po.data.jsonl import read_jsonl


def test_records_are_read_and_blank_lines_skipped(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"id": "a", "question": "q", "answer": "1", "meta": {}}\n\n'
        '{"id": "b", "question": "r", "answer": 2}\n'
    )
    assert [r["id"] for r in read_jsonl(path)] == ["a", "b"]


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"id": "a", "question": "q"}\n', "row 1: missing field 'answer'"),
        ('{"id": "a", "question": "q", "answer": 1}\n{oops\n', "row 2: invalid JSON"),
    ],
)
def test_a_bad_row_fails_naming_the_file_and_row(tmp_path, text, message):
    path = tmp_path / "d.jsonl"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"^{path}: {message}"):
        read_jsonl(path)


def test_a_missing_file_fails_naming_it(tmp_path):
    with pytest.raises(ValueError, match="nope.jsonl: cannot read"):
        read_jsonl(tmp_path / "nope.jsonl")
