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


def did_you_mean(word, choices) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to a misspelt ``word``
    (``difflib``'s ratio >= 0.6), or "" when none is close; appended to an "unknown ..." message."""
    import difflib

    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
