"""Hostile programs, one test per class of issue #19, each through the grader's own path with its
default limits (a shorter wall-clock limit only where the program is meant to hang); after each
one a wrong solution must still fail and a correct one pass (``grade_code``). Hostile samples go
through ``run_humaneval``, what ``grade_code`` runs (their code has no fenced block for
``extract_code`` to take), to see the status, reason and output as well."""

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from gc2po.evaluation.sandbox import grade_code, run_humaneval
from gc2po.evaluation.sandbox import host as sandbox_host

PROBLEM = {
    "prompt": 'def add(a, b):\n    """Return a + b."""\n',
    "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, "
    "1) == 0\n"
    "    assert candidate(2.5, 0.5) == 3.0\n",
    "entry_point": "add",
}
CORRECT = "    return a + b\n"
# the sandbox's packages, and coreutils for the host-side peers (sleep)
pytestmark = pytest.mark.system("bubblewrap", "util-linux", "python3-minimal", "coreutils")
WRONG = "    return a - b\n"
CHECKOUT = Path(__file__).resolve().parents[2]
NOBODY = 65534


def grade(completion: str, **limits):
    return run_humaneval(
        PROBLEM["prompt"], completion, PROBLEM["test"], PROBLEM["entry_point"], **limits
    )


def assert_later_samples_graded_right():
    assert grade_code(WRONG, PROBLEM) is False
    assert grade_code(CORRECT, PROBLEM) is True


def as_sample_user() -> dict:
    """Popen arguments for the host user samples run as (nobody when the grader is root)."""
    return dict(user=NOBODY, group=NOBODY, extra_groups=[]) if os.geteuid() == 0 else {}


def test_the_problem_itself_grades_right():
    assert grade(CORRECT).passed and grade(WRONG).status == "failed"


EARLY_EXITS = {
    "sys.exit(0) at import": WRONG + "import sys\nsys.exit(0)\n",
    "os._exit(0) at import": WRONG + "import os\nos._exit(0)\n",
    "raise SystemExit(0) inside the function": "    raise SystemExit(0)\n",
    "excepthook calling os._exit(0)": "    import os, sys\n    sys.excepthook = lambda *a: "
    "os._exit(0)\n    raise ValueError\n",
    "atexit handler calling os._exit(0)": WRONG
    + "import atexit, os\natexit.register(os._exit, 0)\n",
    "bare exit() inside the function": "    exit()\n",
    "os._exit(0) inside the function": "    import os\n    os._exit(0)\n",
}


@pytest.mark.parametrize("completion", EARLY_EXITS.values(), ids=EARLY_EXITS.keys())
def test_exiting_early_never_passes(completion):
    result = grade(completion)
    assert result.status == "failed" and not result.passed, result
    assert_later_samples_graded_right()


HARNESS_PATCHES = {
    "always-equal object": "    class Yes:\n        def __eq__(self, other):\n            return "
    "True\n    return Yes()\n",
    "str subclass equal to anything": "    class S(str):\n        def __eq__(self, "
    "other):\n            return True\n"
    "    return S('x')\n",
    "repr that lies": "    class R:\n        def __repr__(self):\n            return '3'\n    "
    "return R()\n",
    "patched AssertionError": WRONG
    + "import builtins\nbuiltins.AssertionError = type('Quiet', (Exception,), {})\n",
    "patched check, sys.exit, os._exit": WRONG + "import os, sys\ncheck = lambda candidate: None\n"
    "sys.exit = os._exit = lambda *a: None\n",
    "prints a verdict": WRONG + "print('passed')\nprint('passed', file=__import__('sys').stderr)\n",
}


@pytest.mark.parametrize("completion", HARNESS_PATCHES.values(), ids=HARNESS_PATCHES.keys())
def test_the_candidate_cannot_patch_or_fool_the_harness(completion):
    result = grade(completion)
    assert result.status == "failed", result
    assert_later_samples_graded_right()


def test_the_verdict_channel_cannot_be_forged():
    program = (
        WRONG
        + """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
# PTRACE_ATTACH the harness
print("ptrace", libc.ptrace(16, os.getppid(), 0, 0), ctypes.get_errno(), flush=True)
try:
    open(f"/proc/{os.getppid()}/mem", "rb")
    print("harness memory opened", flush=True)
except OSError as error:
    print("harness memory refused", error.errno, flush=True)
for pid in sorted(p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()):
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError as error:
        print("fd list refused", pid, error.errno, flush=True)
        continue
    for name in names:
        try:
            fd = os.open(f"/proc/{pid}/fd/{name}", os.O_WRONLY | os.O_NONBLOCK)
            os.write(fd, b"passed\\nforged")
            print("wrote", pid, name, flush=True)
        except OSError:
            pass
os._exit(0)
"""
    )
    result = grade(program)
    assert result.status == "failed" and "forged" not in result.reason, result
    assert "ptrace -1 1" in result.output  # EPERM: the harness is not dumpable
    assert (
        "harness memory refused" in result.output and "harness memory opened" not in result.output
    )
    # the harness (the sandbox's pid 1) keeps its fds, the verdict pipe among them, to itself
    assert "fd list refused 1" in result.output
    assert_later_samples_graded_right()


def host_processes_with(marker: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found


ATTACKER = """
import os, time
while True:  # signal everything it can see, again and again
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                os.kill(int(pid), 9)
            except OSError:
                pass
    time.sleep(0.05)
"""


def test_a_daemon_dies_with_its_sample_and_cannot_reach_the_next():
    marker = f"gc2po-daemon-{uuid.uuid4().hex}"
    program = (
        WRONG
        + f"""
import os, sys, time
ATTACKER = {ATTACKER!r}
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        print("daemon running", flush=True)
        os.execv(sys.executable, [sys.executable, "-c", ATTACKER, {marker!r}])
    os._exit(0)
time.sleep(0.5)
"""
    )
    result = grade(program)
    assert "daemon running" in result.output and result.status == "failed"
    assert host_processes_with(marker) == []  # no process of the sample survives it
    assert_later_samples_graded_right()
    time.sleep(1)
    assert host_processes_with(marker) == []


def test_kill_minus_one_reaches_only_the_sample():
    bystander = subprocess.Popen(
        ["sleep", "60"], **as_sample_user()
    )  # a host process of the sample's own user
    try:
        result = grade(WRONG + "import os\nos.kill(-1, 9)\n")
        assert result.status == "failed"
        assert bystander.poll() is None
        assert_later_samples_graded_right()
    finally:
        bystander.kill()
        bystander.wait()


@pytest.fixture(params=["bubblewrap", "weak"])
def mode(request, monkeypatch, tmp_path):
    if request.param == "weak":  # a work dir on the host exists only here
        monkeypatch.setattr(
            sandbox_host, "_probe_bubblewrap", lambda: "pretend bubblewrap is missing"
        )
        monkeypatch.setenv(sandbox_host.WEAK_ENV, "1")
        workdirs = tmp_path / "workdirs"
        workdirs.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(workdirs))
    return request.param


def test_the_grader_never_opens_what_the_sample_controls(mode, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text(f"root-only-{uuid.uuid4().hex}")
    secret.chmod(0o600)
    tricks = {
        "fifo": "os.mkfifo('output.txt')\nos.mkfifo('/tmp/output.txt')",
        "deleted": "for name in os.listdir('.'):\n    os.remove(name)\nos.rmdir(os.getcwd())",
        "symlinked": f"os.symlink({str(secret)!r}, 'output.txt')\nos.symlink({str(secret)!r}, "
        "'/tmp/out')",
        "unremovable": "os.makedirs('a/b')\nos.mkfifo('a/b/f')\nos.chmod('a', 0)",
    }
    for trick in tricks.values():
        start = time.monotonic()
        result = grade(
            WRONG
            + "import os\ntry:\n"
            + "".join(f"    {line}\n" for line in trick.splitlines())
            + "except OSError as error:\n    print(error)\n"
        )
        assert time.monotonic() - start < 10 and result.status == "failed", result
        assert secret.read_text() not in result.output
    if mode == "weak":
        assert os.listdir(tmp_path / "workdirs") == []  # removed whatever the sample did
    assert_later_samples_graded_right()


def test_host_paths_are_out_of_reach():
    run_lock = Path("/run/lock")
    canary = (
        run_lock / f"gc2po-canary-{uuid.uuid4().hex}"
        if run_lock.is_dir() and os.access(run_lock, os.W_OK)
        else None
    )
    if canary is not None:
        canary.write_text("keep me")
    marker = f"{time.time() % 1000 + 100:.6f}"
    bystander = subprocess.Popen(["sleep", marker])  # its command line must stay invisible
    try:
        program = (
            WRONG
            + f"""
import os
for path in ["/run/lock", "/run", "/work", "/root", "/home", "/etc", "/var",
             {str(CHECKOUT)!r}, {str(canary)!r}]:
    print("visible" if os.path.exists(path) else "absent", path)
os.chdir("/")
for path in ["run/lock/gc2po-written", "/run/lock/gc2po-written", "/usr/lib/gc2po-written"]:
    try:
        open(path, "w").write("x")
        print("wrote", path)
    except OSError as error:
        print("refused", path, error.errno)
pids = [p for p in os.listdir("/proc") if p.isdigit()]
print("processes", len(pids))
for pid in pids:
    print(open(f"/proc/{{pid}}/cmdline", "rb").read())
"""
        )
        result = grade(program)
        assert result.status == "failed"
        assert "visible" not in result.output and "wrote" not in result.output
        assert (
            int(result.output.split("processes ")[1].split()[0]) <= 8
        )  # bubblewrap's init, harness, candidate
        assert marker not in result.output and "pytest" not in result.output
        if canary is not None:
            assert canary.read_text() == "keep me"
        assert not Path("/run/lock/gc2po-written").exists()
        assert_later_samples_graded_right()
    finally:
        bystander.kill()
        bystander.wait()
        if canary is not None:
            canary.unlink()


CONNECT = """
import socket
for family, address in {targets!r}:
    sock = socket.socket(getattr(socket, family))
    sock.settimeout(2)
    try:
        sock.connect(address)
        print("connected", family)
    except OSError as error:
        print("refused", family, error.errno)
"""


def test_no_socket_reaches_a_host_listener():
    tag = uuid.uuid4().hex
    path = f"/tmp/gc2po-listener-{tag}.sock"
    listeners = [
        socket.socket(socket.AF_UNIX),
        socket.socket(socket.AF_UNIX),
        socket.socket(socket.AF_INET),
    ]
    try:
        listeners[0].bind(path)
        os.chmod(path, 0o777)
        listeners[1].bind(f"\0gc2po-listener-{tag}")
        listeners[2].bind(("127.0.0.1", 0))
        for listener in listeners:
            listener.listen(8)
            listener.setblocking(False)
        targets = [
            ("AF_UNIX", path),
            ("AF_UNIX", f"\0gc2po-listener-{tag}"),
            ("AF_INET", listeners[2].getsockname()),
        ]
        program = CONNECT.format(targets=targets)
        # control: the same program outside the sandbox, as the same host user, does connect
        interpreter = sandbox_host.sandbox_setup().interpreter
        outside = subprocess.run(
            [interpreter, "-I", "-S", "-c", program],
            capture_output=True,
            text=True,
            timeout=30,
            cwd="/",
            **as_sample_user(),
        )
        assert outside.stdout.count("connected") == 3, outside
        for listener in listeners:
            listener.accept()[0].close()
        result = grade(WRONG + program)
        assert result.status == "failed" and "connected" not in result.output
        assert result.output.count("refused") == 3
        for listener in listeners:
            with pytest.raises(BlockingIOError):
                listener.accept()
        assert_later_samples_graded_right()
    finally:
        for listener in listeners:
            listener.close()
        if os.path.exists(path):
            os.unlink(path)


@pytest.fixture(params=["as-detected", "rlimits-only"])
def memory_mode(request, monkeypatch):
    setup = sandbox_host.sandbox_setup()
    if request.param == "rlimits-only":
        setup = dataclasses.replace(setup, cgroups=None)
        monkeypatch.setattr(sandbox_host, "_probe_bubblewrap", lambda: setup)
    return setup


def test_memory_is_bounded_per_sample_not_per_process(memory_mode):
    program = (
        WRONG
        + """
import os, time
for _ in range(12):
    try:
        pid = os.fork()
    except OSError:
        print("fork refused", flush=True)
        break
    if pid == 0:
        try:
            block = b"\\1" * (300 << 20)
            print("held", flush=True)
            time.sleep(60)
        except MemoryError:
            print("memory refused", flush=True)
        os._exit(0)
time.sleep(60)
"""
    )
    start = time.monotonic()
    result = grade(program, timeout=5)  # the program holds its memory until killed
    seconds = time.monotonic() - start
    assert result.status in ("timeout", "failed") and seconds < 15, (seconds, result)
    memory_mb = 1024  # the default limit
    assert_later_samples_graded_right()
    if (
        memory_mode.cgroups is None
    ):  # each process may hold (1024 - 64) / 8 MB, so no 300 MB block fits
        assert result.output.count("held") == 0 and "memory refused" in result.output, result
    elif result.memory_peak_bytes is not None:  # the kernel's count for the whole sample
        assert 300 << 20 <= result.memory_peak_bytes <= memory_mb << 20, result
    else:
        pytest.skip(
            "this kernel's cgroup v2 has no memory.peak (Linux < 5.19): the sample's peak "
            "is unknown"
        )


def test_a_correct_answer_that_prints_a_lot_passes():
    result = grade(
        "    print('y' * (1 << 20))\n" + CORRECT
    )  # 3 calls: 3 MB against the default 1 MB cap
    assert result.passed and len(result.output) == 1 << 20
    assert_later_samples_graded_right()


def test_the_harness_cannot_be_stopped_and_a_hang_is_a_timeout():
    # the harness is the sandbox's pid 1: a signal from inside its namespace cannot stop it, so
    # this correct answer passes at once
    stopper = "    import os, signal\n    os.kill(os.getppid(), signal.SIGSTOP)\n    return a + b\n"
    start = time.monotonic()
    result = grade(stopper, timeout=3)
    assert result.passed and time.monotonic() - start < 3, result
    start = time.monotonic()
    result = grade(CORRECT + "while True:\n    pass\n", timeout=3)
    assert result.status == "timeout" and time.monotonic() - start < 6
    assert_later_samples_graded_right()


ORDINARY_GRADER = """
import json, sys
sys.path.insert(0, sys.argv[1])
from gc2po.evaluation.sandbox import grade_code, sandbox_description
problem, completions = json.load(sys.stdin)
print(json.dumps({"description": sandbox_description(),
                  "verdicts": [grade_code(completion, problem) for completion in completions]}))
"""


def grade_as_an_ordinary_user(grader: str, payload) -> dict:
    """Run the Python program ``grader`` (its argv[1]: a folder holding the gc2po package; its
    stdin: ``payload`` as JSON; its stdout: one JSON object, returned) as an ordinary user: this
    user, or nobody (from a copy of the package nobody can read) when the tests run as root."""
    if os.geteuid() != 0:
        grader_user, package_root = {}, CHECKOUT  # we are the ordinary user
    else:
        grader_user = as_sample_user()
        package_root = Path(tempfile.mkdtemp(prefix="gc2po-ordinary-"))
        (package_root / "gc2po" / "evaluation" / "sandbox").mkdir(parents=True)
        source = CHECKOUT / "gc2po"
        for module in [
            source / "__init__.py",
            source / "layout.py",
            source / "evaluation" / "__init__.py",
            source / "evaluation" / "code_extraction.py",
            source / "evaluation" / "grading_errors.py",
            *(source / "evaluation" / "sandbox").glob("*.py"),
        ]:
            shutil.copy(module, package_root / module.relative_to(CHECKOUT))
        os.chmod(package_root, 0o755)
    try:
        interpreter = sandbox_host.sandbox_setup().interpreter  # one the sample user can run
        done = subprocess.run(
            [interpreter, "-I", "-c", grader, str(package_root)],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=600,
            cwd="/",
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            **grader_user,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)
    finally:
        if package_root != CHECKOUT:
            shutil.rmtree(package_root)


def test_killing_the_parent_as_an_ordinary_user_harms_no_one():
    hostile = WRONG + (
        "import ctypes, os\nctypes.CDLL(None).kill(os.getppid(), 9)\nos.kill(os.getppid(), 9)\n"
        "os.kill(1, 9)\nos.kill(-1, 9)\n"
    )
    report = grade_as_an_ordinary_user(ORDINARY_GRADER, [PROBLEM, [hostile, WRONG, CORRECT]])
    assert (
        report["description"].startswith("bubblewrap") and "as this user" in report["description"]
    )
    assert report["verdicts"] == [False, False, True]


def test_the_sandbox_python_is_not_the_graders_environment():
    result = grade(WRONG + "import sys\nprint(sys.path, flush=True)\nimport pytest\n")
    assert (
        result.status == "failed"
        and "ModuleNotFoundError: No module named 'pytest'" in result.reason
    )
    assert "site-packages" not in result.output and "'/" in result.output
