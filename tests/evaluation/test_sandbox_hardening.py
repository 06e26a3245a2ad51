"""Issue #26's sandbox hardening: threads do not fail correct code in a per-sample cgroup while a
fork or thread bomb is still stopped; the seccomp filter refuses the keyring and ptrace (its
BPF checked on its own in a plain process, then through the grader's own path)."""

import ctypes
import dataclasses
import errno
import multiprocessing
import os
import subprocess
import time
import uuid

import pytest

from gc2po.evaluation.sandbox import (
    command as sandbox_command,
)
from gc2po.evaluation.sandbox import (
    host as sandbox_host,
)
from gc2po.evaluation.sandbox import run_python
from gc2po.evaluation.sandbox import (
    seccomp as sandbox_seccomp,
)

# the hostile-sample module's grader call (its problem)
from tests.evaluation.test_sandbox_hostile import NOBODY, grade

# the sandbox's packages, and coreutils for the host-side peer (cat)
pytestmark = pytest.mark.system("bubblewrap", "util-linux", "python3-minimal", "coreutils")

# 16 threads alive at once (they meet at a barrier), as a worker pool's are
THREADED = """    import threading
    parts, barrier = [0] * 16, threading.Barrier(16, timeout=5)
    def work(index):
        barrier.wait()
        parts[index] = a if index == 0 else b if index == 1 else 0
    threads = [threading.Thread(target=work, args=(index,)) for index in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(parts)
"""


def test_a_correct_solution_with_16_threads_passes_every_time():
    if sandbox_host.sandbox_setup().cgroups is None:
        pytest.skip(
            "no per-sample cgroup here: RLIMIT_NPROC (which counts threads) bounds the sample"
        )
    results = [grade(THREADED) for _ in range(6)]
    assert all(result.passed for result in results), [result.reason for result in results]
    # the same code under the old bound (8 tasks, threads included) is the failure the issue saw
    assert not grade(THREADED, max_threads=8).passed


def test_a_thread_bomb_is_stopped():
    program = (
        "import threading, time\nstarted = 0\ntry:\n    while True:\n"
        "        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "        started += 1\nexcept RuntimeError:\n    print('thread refused after', started)\n"
    )
    start = time.monotonic()
    result = run_python(program, timeout=5, memory_mb=512)
    assert time.monotonic() - start < 10 and "thread refused after" in result.output, result
    started = int(result.output.split()[-1])
    assert started < sandbox_command.Limits().max_threads, (
        result
    )  # the harness and init hold tasks too


def test_limits_refuse_fewer_threads_than_processes():
    with pytest.raises(ValueError, match="max_threads=4 is below max_processes=8"):
        sandbox_command.Limits(max_threads=4)


def _call_under_filter(program: bytes, results) -> None:
    """In a child process: install ``program`` as the seccomp filter, then try the calls."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog_bytes = bytearray(
        16
    )  # struct sock_fprog {unsigned short len; struct sock_filter *filter}
    fprog_bytes[:2] = (len(program) // 8).to_bytes(2, "little")
    fprog_bytes[8:16] = ctypes.addressof(buffer).to_bytes(8, "little")
    fprog = ctypes.create_string_buffer(bytes(fprog_bytes), 16)
    assert libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) == 0
    assert libc.prctl(pr_set_seccomp, seccomp_mode_filter, fprog, 0, 0) == 0, ctypes.get_errno()
    column = 0 if sandbox_seccomp.host_arch() == "x86_64" else 1
    outcome = {}
    for name in ("add_key", "keyctl", "ptrace", "process_vm_readv", "perf_event_open", "bpf"):
        number = sandbox_seccomp.BLOCKED_SYSCALLS[name][column]
        outcome[name] = (libc.syscall(number, 0, 0, 0, 0, 0), ctypes.get_errno())
    outcome["getpid"] = (libc.getpid() == os.getpid(), 0)  # an ordinary call still works
    results.put(outcome)


@pytest.mark.skipif(sandbox_seccomp.host_arch() is None, reason="no syscall table for this machine")
def test_the_filter_refuses_the_blocked_calls_and_allows_the_rest():
    program = sandbox_seccomp.seccomp_program(sandbox_seccomp.host_arch())
    results = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(
        target=_call_under_filter, args=(program, results)
    )
    child.start()
    outcome = results.get(timeout=30)
    child.join()
    assert outcome.pop("getpid") == (True, 0)
    assert outcome == {name: (-1, errno.EPERM) for name in outcome}


def test_a_sample_cannot_add_a_key():
    if sandbox_host.sandbox_setup().seccomp is None:
        pytest.skip("no seccomp filter on this machine")
    marker = f"gc2po-{uuid.uuid4().hex}"
    add_key = sandbox_seccomp.BLOCKED_SYSCALLS["add_key"][sandbox_seccomp.host_arch() == "aarch64"]
    program = (
        f"import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"  # -4: the user keyring
        f"key = libc.syscall({add_key}, b'user', b'{marker}', b'x', 1, -4)\n"
        f"print('add_key', key, ctypes.get_errno())\n"
    )
    result = run_python(program)
    assert "add_key -1 1" in result.output, result  # EPERM
    keys_as = dict(user=NOBODY, group=NOBODY, extra_groups=[]) if os.geteuid() == 0 else {}
    seen = subprocess.run(["cat", "/proc/keys"], capture_output=True, text=True, **keys_as)
    assert marker not in seen.stdout


PTRACE_INIT = (
    "    return a + b\nimport ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "print('ptrace', libc.ptrace(16, 1, 0, 0), ctypes.get_errno(), flush=True)\n"
)  # PTRACE_ATTACH to the sandbox's pid 1


def test_ptrace_of_the_sandbox_init_fails_fast():
    """Issue #26: a sample that stopped bubblewrap's init held the output pipe until the
    wall-clock limit (10 s). The filter refuses the attach: grading takes well under 1 s on a
    quiet machine (3 s allowed on a shared one)."""
    if sandbox_host.sandbox_setup().seccomp is None:
        pytest.skip("no seccomp filter on this machine")
    start = time.monotonic()
    result = grade(PTRACE_INIT)
    seconds = time.monotonic() - start
    assert result.passed and "ptrace -1 1" in result.output, result
    assert seconds < 3, seconds


def test_without_the_filter_the_init_still_refuses_the_attach(monkeypatch):
    """The second wall (issue #33): the sandbox's pid 1 is the harness, non-dumpable, so even
    with the filter left out the attach fails with EPERM and the correct answer passes fast."""
    setup = dataclasses.replace(sandbox_host.sandbox_setup(), seccomp=None)
    monkeypatch.setattr(sandbox_host, "_probe_bubblewrap", lambda: setup)
    start = time.monotonic()
    result = grade(PTRACE_INIT, timeout=3)
    assert result.passed and "ptrace -1 1" in result.output, result
    assert time.monotonic() - start < 3
