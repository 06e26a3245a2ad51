"""Running one sample in the sandbox set up by ``host`` and collecting what it leaves:
a bounded, deadline-driven read of its output and verdict pipes, then every process and the
cgroup or work dir gone. Bubblewrap reports the sandbox's init (the harness, pid 1 inside) on an
info pipe; when the verdict is in, the grader kills that init by a pidfd (the kernel then kills
every process of its pid namespace) and waits until it is gone, so no process of the sample
outlives its verdict, root or not. The public interface is ``gc2po.evaluation.sandbox``."""

from __future__ import annotations

import json
import os
import select
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass

from gc2po.evaluation.grading_errors import GraderError
from gc2po.evaluation.sandbox.cgroup import EMPTY_WAIT_SECONDS, SampleCgroup, create_sample_cgroup
from gc2po.evaluation.sandbox.command import (
    MALLOC_ARENA_MAX,
    NOBODY,
    Limits,
    SandboxSetup,
    bwrap_argv,
    encode_message,
    nobody,
    python_argv,
)
from gc2po.evaluation.sandbox.seccomp import seccomp_pipe

MAX_VERDICT_BYTES = 1 << 16
# once the harness closed its verdict pipe, how long its sandbox may take to end by itself
EXIT_GRACE_SECONDS = 0.5
# as root: enter the sample's cgroups (one procs file per hierarchy), then exec the rest
ENTER_CGROUPS = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; '
    'n=$((n-1)); done; exec "$@"'
)
CGROUP_ENTRY_FAILED = 125  # ENTER_CGROUPS' exit status when a procs file refused it


@dataclass
class RawRun:
    """What one sandboxed run left: exit status, the head of its output, the verdict pipe."""

    returncode: int | None
    output: bytes
    verdict: bytes
    timed_out: bool
    memory_peak_bytes: int | None = None
    problem: str | None = None  # processes of the sample that outlived it


def run_contained(setup: SandboxSetup, message: dict, limits: Limits) -> RawRun:
    """Run one sample (``message`` for harness.main) and collect its pipes until it ends,
    its harness closed the verdict pipe, or the wall-clock limit passes; every process of the
    sample is gone when this returns. Raises GraderError where its cgroup cannot be made."""
    cgroup = workdir = process = init = None
    fds: list[int] = []
    try:
        if setup.warmth is not None:
            setup.warmth.ensure()
        if setup.cgroups is not None:
            try:
                cgroup = create_sample_cgroup(
                    setup.cgroups, limits.memory_mb << 20, limits.max_threads
                )
            except OSError as error:
                raise GraderError("cgroup", f"cannot make the sample's cgroup: {error}") from None
        if setup.mode == "weak":
            workdir = tempfile.mkdtemp(prefix="gc2po-sandbox-")
        pipes = []
        for _ in range(3 if setup.mode == "bubblewrap" else 2):
            pipes.append(os.pipe())
            fds += pipes[-1]
        (verdict_read, verdict_write), (output_read, output_write) = pipes[:2]
        info_read, info_write = pipes[2] if len(pipes) == 3 else (None, None)
        process = _start(setup, cgroup, workdir, output_write, verdict_write, info_write)
        for fd in (output_write, verdict_write, info_write):  # the sandbox holds them now
            if fd is not None:
                os.close(fd)
                fds.remove(fd)
        deadline = time.monotonic() + limits.timeout
        if info_read is not None:
            init = _sandbox_init(info_read, process.pid, deadline)
        message = {**message, "verdict_fd": verdict_write}
        output, verdict, timed_out = _collect(
            process,
            encode_message(setup, message, limits),
            (output_read, verdict_read),
            deadline,
            limits.max_output_bytes,
            until_verdict=message["role"] == "harness",
        )
        problem = _end_sample(process, init)
        _drain(output_read, output, limits.max_output_bytes)
        run = RawRun(process.returncode, bytes(output), bytes(verdict), timed_out, problem=problem)
        if cgroup is not None:
            run.memory_peak_bytes = cgroup.memory_peak_bytes()
            removal, cgroup = cgroup.remove(), None
            run.problem = run.problem or removal
        return run
    finally:
        if process is not None:
            _kill(process)
            process.stdin.close()
        for fd in fds + ([] if init is None else [init]):
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
    verdict: int,
    info: int | None,
) -> subprocess.Popen:
    common = dict(
        stdin=subprocess.PIPE,
        stdout=output,
        stderr=output,
        pass_fds=(verdict,),
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
    mask_fds = [os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC) for _ in setup.proc_masks]
    try:
        argv = bwrap_argv(setup, seccomp_fd, info, mask_fds)
        if cgroup is not None:  # enter the cgroups as root, then drop to nobody and start bwrap
            argv = [
                "/bin/sh",
                "-c",
                ENTER_CGROUPS,
                "gc2po-sandbox",
                str(len(cgroup.procs_files)),
                *cgroup.procs_files,
                *argv,
            ]
        extra = [fd for fd in (seccomp_fd, info) if fd is not None] + mask_fds
        common["pass_fds"] = (verdict, *extra)
        return subprocess.Popen(
            argv, cwd="/", env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, **common
        )
    finally:
        for fd in mask_fds + ([] if seccomp_fd is None else [seccomp_fd]):
            os.close(fd)


def _sandbox_init(info_fd: int, bwrap_pid: int, deadline: float) -> int | None:
    """A pidfd of the sandbox's init, from bubblewrap's ``--info-fd`` report (written before
    the init runs); None where bubblewrap ended before making one."""
    report = bytearray()
    while (remaining := deadline - time.monotonic()) > 0:
        if not select.select([info_fd], [], [], remaining)[0]:
            break
        chunk = os.read(info_fd, 4096)
        if not chunk:
            break
        report += chunk
    try:
        pid = int(json.loads(report)["child-pid"])
        pidfd = os.pidfd_open(pid)
    except (ValueError, KeyError, TypeError, OSError):
        return None
    try:  # the pidfd is the init only while bubblewrap is its parent (else the number was reused)
        with open(f"/proc/{pid}/status") as status:
            parent = next(int(line.split()[1]) for line in status if line.startswith("PPid:"))
    except (OSError, StopIteration, ValueError):
        parent = None
    if parent != bwrap_pid:
        os.close(pidfd)
        return None
    return pidfd


def _end_sample(process: subprocess.Popen, init: int | None) -> str | None:
    """Kill the sandbox's init (the kernel kills the rest of its pid namespace before the init
    is gone) and bubblewrap; a problem description when the namespace outlived the wait."""
    problem = None
    if init is not None:
        try:
            signal.pidfd_send_signal(init, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if not select.select([init], [], [], EMPTY_WAIT_SECONDS)[0]:
            problem = f"the sandbox's init outlived SIGKILL by {EMPTY_WAIT_SECONDS} s"
    _kill(process)
    return problem


def _kill(process: subprocess.Popen) -> None:
    """Kill the sample's process group (bubblewrap's --die-with-parent then takes the sandbox down).
    Not once reaped: the number may then belong to another process."""
    if process.returncode is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


def _drain(fd: int, buffer: bytearray, cap: int) -> None:
    """Read what is left in a pipe whose writers are gone (without blocking: in the weak mode a
    daemon of the sample may still hold it)."""
    os.set_blocking(fd, False)
    try:
        while chunk := os.read(fd, 1 << 16):
            buffer += chunk[: max(0, cap - len(buffer))]
    except BlockingIOError:
        pass


def _collect(
    process: subprocess.Popen,
    payload: bytes,
    pipes: tuple[int, int],
    deadline: float,
    max_output_bytes: int,
    until_verdict: bool,
) -> tuple[bytearray, bytearray, bool]:
    """(output head, verdict, timed out): the pipes read until the sandbox ended or, with
    ``until_verdict``, until EXIT_GRACE_SECONDS after the harness closed its verdict pipe."""
    (output_fd, verdict_fd), end = pipes, deadline
    stdin_fd = process.stdin.fileno()
    os.set_blocking(stdin_fd, False)
    output, verdict, pending = bytearray(), bytearray(), memoryview(payload)
    verdict_closed = False
    with selectors.DefaultSelector() as selector:
        selector.register(stdin_fd, selectors.EVENT_WRITE)
        selector.register(output_fd, selectors.EVENT_READ, (output, max_output_bytes))
        selector.register(verdict_fd, selectors.EVENT_READ, (verdict, MAX_VERDICT_BYTES))
        while len(selector.get_map()) and (remaining := end - time.monotonic()) > 0:
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
                    if key.fd == verdict_fd and until_verdict:
                        verdict_closed = True
                        end = min(end, time.monotonic() + EXIT_GRACE_SECONDS)
                buffer, cap = key.data
                buffer += chunk[: max(0, cap - len(buffer))]  # keep the head, drain the rest
    timed_out = not verdict_closed and time.monotonic() >= deadline
    if not timed_out:
        try:
            process.wait(timeout=max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = not verdict_closed
    return output, verdict, timed_out
