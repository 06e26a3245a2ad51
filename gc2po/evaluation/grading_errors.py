"""Grader errors: a sample whose grading failed for a reason outside the candidate (no sandbox
on this machine, a cgroup that cannot be made or entered, bubblewrap, seccomp, the limits or the
interpreter failing before the test harness ran, processes that outlive the sample) has no
verdict. It is neither right nor wrong: the per-sample file records it as ``status: "error"``
with its kind and reason, the summary counts the errors per kind, and an evaluation with more
errors than its budget (``evaluate.max_grader_errors``, default 0) fails naming the first.
"""

from __future__ import annotations

from gc2po.layout import is_error

ERROR_KINDS = {
    "unavailable": "no sandbox can run code on this machine and the weaker mode was not asked for",
    "cgroup": "the sample's cgroup could not be made or entered",
    "start": "bubblewrap, seccomp, the limits or the interpreter failed before the test harness "
    "ran (none of the candidate's code had run)",
    "cleanup": "processes of the sample outlived it",
    "grader": "the grader itself failed (pipes, processes)",
}


class GraderError(RuntimeError):
    """Grading could not give a verdict, for a reason outside the candidate."""

    def __init__(self, kind: str, reason: str):
        if kind not in ERROR_KINDS:
            raise ValueError(f"grader error kind {kind!r} is not one of {sorted(ERROR_KINDS)}")
        super().__init__(reason)
        self.kind, self.reason = kind, reason


class GraderErrorBudgetExceeded(RuntimeError):
    """An evaluation had more grader errors than it allows."""


def error_fields(error: GraderError) -> dict:
    """The fields of a per-sample record whose grading failed (``correct`` is null: no grade;
    ``gc2po.layout.is_error`` tells such a record)."""
    return {"correct": None, "status": "error", "error_kind": error.kind, "reason": error.reason}


def error_summary(grades: list[dict]) -> dict:
    """``{"count", "by_kind", "first"}`` over per-sample grade records (``first``: the first
    error's ``[kind] reason``, None without errors)."""
    errors = [grade for grade in grades if is_error(grade)]
    by_kind: dict[str, int] = {}
    for grade in errors:
        by_kind[grade["error_kind"]] = by_kind.get(grade["error_kind"], 0) + 1
    first = f"[{errors[0]['error_kind']}] {errors[0]['reason']}" if errors else None
    return {"count": len(errors), "by_kind": dict(sorted(by_kind.items())), "first": first}


def check_error_budget(summary: dict, budget: int, where: str) -> None:
    """Raise when ``summary`` (of :func:`error_summary`) counts more errors than ``budget``."""
    if summary["count"] > budget:
        raise GraderErrorBudgetExceeded(
            f"{where}: {summary['count']} sample(s) could not be graded {summary['by_kind']}, "
            f"more than evaluate.max_grader_errors={budget} allows; the first: "
            f"{summary['first']}. They are recorded with status 'error' (not as wrong answers); "
            f"fix the grader and evaluate again"
        )
