"""Errors shown to a user in one line, and the type rule every setting's value is checked by."""

from __future__ import annotations


def one_line(err: Exception) -> str:
    """An OSError or YAML error in one line: a YAML parse error's problem and where it is."""
    mark = getattr(err, "problem_mark", None)
    if getattr(err, "problem", None) and mark is not None:
        return f"line {mark.line + 1}, column {mark.column + 1}: {err.problem}"
    return " ".join(str(err).split())


def as_type(value, kind: type):
    """``value`` as a setting of type ``kind``: an int is taken for a float, a bool is never a
    number (run configs' trainer values, a method's ``method_args``); TypeError when it is not
    one (the caller names the key)."""
    if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, kind) and not (kind in (int, float) and isinstance(value, bool)):
        return value
    raise TypeError(f"{value!r} is not {kind.__name__}")


PROJECT_NAME = "gc2po"  # the paper's method: preferred among equally close suggestions


def edits(a: str, b: str) -> int:
    """Edits that turn ``a`` into ``b``: insertions, deletions, substitutions and swaps of two
    adjacent characters (optimal string alignment distance)."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(
                rows[i - 1][j] + 1,
                row[j - 1] + 1,
                rows[i - 1][j - 1] + (a[i - 1] != b[j - 1]),
            )
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[i - 2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def did_you_mean(word, choices) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to a misspelt ``word``
    (``difflib``'s ratio >= 0.6), or "" when none is close; appended to an "unknown ..." message.

    A name of the project's own (containing ``gc2po``) that is no more edits away than the
    closest by ratio wins: ``gcp2o`` is one edit from the ``gcpo`` baseline and one swap from
    ``gc2po``, and means the paper's method more often."""
    import difflib

    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, [str(c) for c in choices], n=3)
    if not close:
        return ""
    nearest = edits(word, close[0])
    own = [c for c in close if PROJECT_NAME in c and edits(word, c) <= nearest]
    return f" (did you mean {(own or close)[0]!r}?)"
