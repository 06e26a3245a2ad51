"""Running one sample in the sandbox set up by ``sandbox_host`` and collecting what it leaves:
a bounded, deadline-driven read of its output and verdict pipes, then every process and the
cgroup or work dir gone. The public interface is ``gc2po.evaluation.sandbox``."""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass

from gc2po.evaluation.sandbox_cgroup import SampleCgroup, create_sample_cgroup
from gc2po.evaluation.sandbox_command import (
    MALLOC_ARENA_MAX,
    NOBODY,
    Limits,
    SandboxSetup,
    bwrap_argv,
    encode_message,
    nobody,
    python_argv,
)
from gc2po.evaluation.sandbox_seccomp import seccomp_pipe

MAX_VERDICT_BYTES = 1 << 16
# as root: enter the sample's cgroups (one procs file per hierarchy), then exec the rest
ENTER_CGROUPS = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; '
    'n=$((n-1)); done; exec "$@"'
)


@dataclass
class RawRun:
    """What one sandboxed run left: exit status, the head of its output, the harness's verdict."""

    returncode: int | None
    output: bytes
    verdict: bytes
    timed_out: bool
    memory_peak_bytes: int | None = None
    problem: str | None = None


def run_contained(setup: SandboxSetup, message: dict, limits: Limits, with_verdict: bool) -> RawRun:
    """Run one sample (``message`` for sandbox_harness.main) and collect its pipes until it ends or
    the wall-clock limit passes; every process of the sample is gone when this returns."""
    cgroup = workdir = process = None
    fds: list[int] = []
    try:
        if setup.cgroups is not None:
            cgroup = create_sample_cgroup(setup.cgroups, limits.memory_mb << 20, limits.max_threads)
        if setup.mode == "weak":
            workdir = tempfile.mkdtemp(prefix="gc2po-sandbox-")
        verdict_read, verdict_write = os.pipe()
        fds += [verdict_read, verdict_write]
        output_read, output_write = os.pipe()
        fds += [output_read, output_write]
        if with_verdict:
            message = {**message, "verdict_fd": verdict_write}
        process = _start(
            setup, cgroup, workdir, output_write, verdict_write if with_verdict else None
        )
        for fd in (output_write, verdict_write):  # the sandbox holds the only write ends now
            os.close(fd)
            fds.remove(fd)
        run = _collect(
            process, encode_message(setup, message, limits), output_read, verdict_read, limits
        )
        if cgroup is not None:
            run.memory_peak_bytes = cgroup.memory_peak_bytes()
            run.problem, cgroup = cgroup.remove(), None
        return run
    finally:
        if process is not None:
            _kill(process)
            process.stdin.close()
        for fd in fds:
            os.close(fd)
        if cgroup is not None:
            cgroup.remove()
        if workdir is not None:
            _remove_tree(workdir)


def _remove_tree(path: str) -> None:
    """Remove the weak mode's work dir whatever the sample left there. Root removes any folder;
    another user first makes the sample's folders searchable (the sample ran as that same user,
    so chmod grants it nothing)."""
    if os.geteuid() != 0:
        for root, dirs, _ in os.walk(path):
            for name in dirs:
                if not os.path.islink(os.path.join(root, name)):
                    os.chmod(os.path.join(root, name), 0o700)
    shutil.rmtree(path, ignore_errors=True)


def _start(
    setup: SandboxSetup,
    cgroup: SampleCgroup | None,
    workdir: str | None,
    output: int,
    verdict: int | None,
) -> subprocess.Popen:
    pass_fds = () if verdict is None else (verdict,)
    common = dict(
        stdin=subprocess.PIPE,
        stdout=output,
        stderr=output,
        pass_fds=pass_fds,
        close_fds=True,
        start_new_session=True,
    )
    if setup.mode == "weak":
        if setup.as_nobody:
            os.chown(workdir, NOBODY, NOBODY)
        env = {"HOME": workdir, "LANG": "C.UTF-8", "MALLOC_ARENA_MAX": MALLOC_ARENA_MAX}
        return subprocess.Popen(
            python_argv(setup), cwd=workdir, env=env, **common, **nobody(setup.as_nobody)
        )
    seccomp_fd = None if setup.seccomp is None else seccomp_pipe(setup.seccomp)
    try:
        argv = bwrap_argv(setup, seccomp_fd)
        if (
            cgroup is not None
        ):  # enter the cgroups as root, then drop to nobody and start bubblewrap
            argv = [
                "/bin/sh",
                "-c",
                ENTER_CGROUPS,
                "gc2po-sandbox",
                str(len(cgroup.procs_files)),
                *cgroup.procs_files,
                *argv,
            ]
        if seccomp_fd is not None:
            common["pass_fds"] = (*pass_fds, seccomp_fd)
        return subprocess.Popen(
            argv, cwd="/", env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, **common
        )
    finally:
        if seccomp_fd is not None:
            os.close(seccomp_fd)


def _kill(process: subprocess.Popen) -> None:
    """Kill the sample's process group (bubblewrap's --die-with-parent then takes the sandbox down).
    Not once reaped: the number may then belong to another process."""
    if process.returncode is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


def _collect(
    process: subprocess.Popen, payload: bytes, output_fd: int, verdict_fd: int, limits: Limits
) -> RawRun:
    deadline = time.monotonic() + limits.timeout
    stdin_fd = process.stdin.fileno()
    os.set_blocking(stdin_fd, False)
    output, verdict, pending = bytearray(), bytearray(), memoryview(payload)
    with selectors.DefaultSelector() as selector:
        selector.register(stdin_fd, selectors.EVENT_WRITE)
        selector.register(output_fd, selectors.EVENT_READ, (output, limits.max_output_bytes))
        selector.register(verdict_fd, selectors.EVENT_READ, (verdict, MAX_VERDICT_BYTES))
        while len(selector.get_map()) and (remaining := deadline - time.monotonic()) > 0:
            for key, _ in selector.select(remaining):
                if key.fd == stdin_fd:
                    try:
                        pending = pending[os.write(stdin_fd, pending[: 1 << 16]) :]
                    except BrokenPipeError:
                        pending = pending[:0]
                    if not pending:
                        selector.unregister(stdin_fd)
                        process.stdin.close()
                    continue
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fd)
                buffer, cap = key.data
                buffer += chunk[: max(0, cap - len(buffer))]  # keep the head, drain the rest
    timed_out = time.monotonic() >= deadline
    if not timed_out:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    if timed_out:
        _kill(process)
    return RawRun(process.returncode, bytes(output), bytes(verdict), timed_out)
