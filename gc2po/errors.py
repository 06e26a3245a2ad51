"""Errors shown to a user in one line."""

from __future__ import annotations


def one_line(err: Exception) -> str:
    """An OSError or YAML error in one line: a YAML parse error's problem and where it is."""
    mark = getattr(err, "problem_mark", None)
    if getattr(err, "problem", None) and mark is not None:
        return f"line {mark.line + 1}, column {mark.column + 1}: {err.problem}"
    return " ".join(str(err).split())
