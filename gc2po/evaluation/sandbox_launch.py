"""Starting one sandboxed process and collecting what it leaves: how the sandbox is set up on this
machine (found once per process), the bubblewrap command line, and a bounded, deadline-driven read
of its output and verdict pipes. The public interface is ``gc2po.evaluation.sandbox``."""

from __future__ import annotations

import functools
import json
import marshal
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from gc2po.evaluation import sandbox_harness
from gc2po.evaluation.sandbox_cgroup import (
    CgroupLayout,
    SampleCgroup,
    create_sample_cgroup,
    detect_cgroup_layout,
)

NOBODY = 65534
TMPFS_MB = 64  # the sample's only writable place, /tmp
OPEN_FILES = 64
MAX_VERDICT_BYTES = 1 << 16
INTERPRETERS = ("/usr/bin/python3", "/usr/local/bin/python3")  # tried after the grader's own
WEAK_ENV = "GC2PO_ALLOW_WEAK_SANDBOX"
HARNESS_SOURCE = Path(sandbox_harness.__file__).read_text()
ENTER_CGROUPS = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"'
# what an interpreter loads from: its sys.path under -I -S, and LIBDIR (libpython, libffi, ...)
PROBE = ("import json, os, sys, sysconfig; paths = [*sys.path, sysconfig.get_config_var('LIBDIR') or ''];"
         "print(json.dumps({'version': sys.version_info[:2], 'paths': [p for p in paths if os.path.isdir(p)]}))")


class SandboxUnavailable(RuntimeError):
    """Code cannot be run in the sandbox on this machine (and the weaker mode was not asked for)."""


@dataclass(frozen=True)
class Limits:
    """Per-sample limits. ``memory_mb`` and ``max_processes`` hold for the whole sample."""

    timeout: float = 10.0
    cpu_seconds: int = 10
    memory_mb: int = 1024
    max_output_bytes: int = 1 << 20
    max_processes: int = 8

    def __post_init__(self):
        for name in ("timeout", "cpu_seconds", "memory_mb", "max_output_bytes", "max_processes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"sandbox limit {name}={value!r} must be a positive number")
        if self.memory_mb < 2 * TMPFS_MB or self.max_processes < 4:
            raise ValueError(f"sandbox limits memory_mb={self.memory_mb} and max_processes={self.max_processes} "
                             f"are below the minimum ({2 * TMPFS_MB} MB, 4 processes: bubblewrap's init, "
                             f"the harness, the candidate and one spare)")


@dataclass(frozen=True)
class SandboxSetup:
    """How samples run here: ``bubblewrap`` or (asked for) ``weak``."""

    mode: str
    interpreter: str
    as_nobody: bool  # the grader is root: samples run as nobody
    read_only: tuple[str, ...] = ()  # host paths bound read-only at the same place
    symlinks: tuple[tuple[str, str], ...] = ()  # (target, link) as on the host, e.g. (usr/lib, /lib)
    bwrap: str | None = None
    setpriv: str | None = None  # drops root to nobody before bubblewrap
    cgroups: CgroupLayout | None = None
    description: str = ""

    def rlimits(self, limits: Limits) -> dict:
        """The rlimits each process sets; without a cgroup a process cap times an address space
        that together (with the tmpfs) fit in memory_mb (in a fresh user namespace RLIMIT_NPROC
        counts the sample's processes only)."""
        address_space, processes = limits.memory_mb << 20, None
        if self.mode == "bubblewrap" and self.cgroups is None:
            address_space = ((limits.memory_mb - TMPFS_MB) << 20) // limits.max_processes
            processes = limits.max_processes
        return {"cpu_seconds": int(limits.cpu_seconds), "address_space_bytes": address_space,
                "file_bytes": TMPFS_MB << 20, "open_files": OPEN_FILES, "processes": processes}


def _nobody(as_nobody: bool) -> dict:
    """Popen arguments that drop root to nobody."""
    return dict(user=NOBODY, group=NOBODY, extra_groups=[]) if as_nobody else {}


def _interpreter_paths(interpreter: str, as_nobody: bool) -> list[str] | None:
    """The directories ``interpreter -I -S`` loads from, or None when the sandbox user cannot run it."""
    try:
        done = subprocess.run([interpreter, "-I", "-S", "-c", PROBE], capture_output=True, text=True, timeout=60,
                              env={}, cwd="/", **_nobody(as_nobody))
        found = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return found["paths"] if found and tuple(found["version"]) >= (3, 9) else None


def _find_interpreter(as_nobody: bool) -> tuple[str, list[str]]:
    tried = []
    for candidate in dict.fromkeys([os.path.realpath(sys.executable), *map(os.path.realpath, INTERPRETERS)]):
        paths = _interpreter_paths(candidate, as_nobody) if os.path.isfile(candidate) else None
        if paths is not None:
            return candidate, paths
        tried.append(candidate)
    user = "nobody" if as_nobody else "this user"
    raise SandboxUnavailable(f"no Python >= 3.9 that {user} can run among {tried}; install python3 "
                             f"(apt-get install python3-minimal) or make the grader's Python readable by {user}")


def _read_only_view(interpreter: str, paths: list[str]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Bind the interpreter, its library directories and the C libraries; /lib* as on the host."""
    wanted = [interpreter, *paths, *(p for p in ("/usr/lib", "/usr/lib64", "/usr/lib32") if os.path.isdir(p))]
    symlinks = []
    for top in ("/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(top):
            symlinks.append((os.readlink(top), top))
        elif os.path.isdir(top):
            wanted.append(top)
    wanted = sorted({os.path.realpath(p) for p in wanted})
    outermost = [p for p in wanted if not any(p.startswith(other.rstrip("/") + "/") for other in wanted)]
    return tuple(outermost), tuple(symlinks)


def _bwrap_argv(setup: SandboxSetup) -> list[str]:
    argv = [setup.bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
            "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox"]
    for path in setup.read_only:
        argv += ["--ro-bind", path, path]
    for target, link in setup.symlinks:
        argv += ["--symlink", target, link]
    argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(TMPFS_MB << 20), "--tmpfs", "/tmp",
             "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp", "--clearenv",
             "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp", "--setenv", "LANG", "C.UTF-8"]
    if setup.as_nobody:
        argv = [setup.setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--", *argv]
    return argv + _python(setup)


def _python(setup: SandboxSetup) -> list[str]:
    return [setup.interpreter, "-I", "-S", "-B", "-X", "utf8", "-c", sandbox_harness.BOOTSTRAP]


@functools.cache
def _probe_bubblewrap() -> SandboxSetup | str:
    """The bubblewrap setup after one trial run, or why bubblewrap cannot run here."""
    bwrap, setpriv, as_nobody = shutil.which("bwrap"), shutil.which("setpriv"), os.geteuid() == 0
    if bwrap is None:
        return "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
    if as_nobody and setpriv is None:
        return "running as root needs setpriv (util-linux) to drop to nobody before bubblewrap"
    try:
        interpreter, paths = _find_interpreter(as_nobody)
    except SandboxUnavailable as error:
        return str(error)
    setup = SandboxSetup("bubblewrap", interpreter, as_nobody, *_read_only_view(interpreter, paths), bwrap, setpriv)
    message = {"role": "script", "program": "print('sandbox ok')"}
    trial = subprocess.run(_bwrap_argv(setup), input=_encode(setup, message, Limits()), capture_output=True,
                           timeout=60, env={}, cwd="/")
    if trial.returncode != 0 or trial.stdout.strip() != b"sandbox ok":
        return (f"bubblewrap cannot start a sandbox here (exit status {trial.returncode}: "
                f"{trial.stderr.decode(errors='replace').strip()[-500:]}); it needs user namespaces "
                f"(sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0)")
    cgroups, bound = detect_cgroup_layout()
    user = "nobody" if as_nobody else "this user"
    return replace(setup, cgroups=cgroups, description=f"bubblewrap ({bwrap}) as {user}, {interpreter}; {bound}")


def sandbox_setup(allow_weak: bool = False) -> SandboxSetup:
    """The setup every sample uses; raises SandboxUnavailable where bubblewrap cannot run, unless
    the weaker mode is asked for (``allow_weak`` or the environment variable GC2PO_ALLOW_WEAK_SANDBOX=1)."""
    probe = _probe_bubblewrap()
    if isinstance(probe, SandboxSetup):
        return probe
    if not (allow_weak or os.environ.get(WEAK_ENV) == "1"):
        raise SandboxUnavailable(f"refusing to run model-written code: {probe}. To run it anyway with a weaker "
                                 f"sandbox (no namespaces), pass allow_weak_sandbox=True or set {WEAK_ENV}=1")
    return _weak_setup(probe)


@functools.cache
def _weak_setup(why: str) -> SandboxSetup:
    as_nobody = os.geteuid() == 0
    interpreter, _ = _find_interpreter(as_nobody)
    return SandboxSetup("weak", interpreter, as_nobody,
                        description=f"WEAK sandbox ({why}): no namespaces, rlimits and the harness's verdict only"
                                    + ("" if as_nobody else "; a program run as this same user can reach the grader"))


def _encode(setup: SandboxSetup, message: dict, limits: Limits) -> bytes:
    message = {**message, "source": HARNESS_SOURCE, "limits": setup.rlimits(limits)}
    return marshal.dumps(message, sandbox_harness.MARSHAL_VERSION)


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
            cgroup = create_sample_cgroup(setup.cgroups, limits.memory_mb << 20, limits.max_processes)
        if setup.mode == "weak":
            workdir = tempfile.mkdtemp(prefix="gc2po-sandbox-")
        verdict_read, verdict_write = os.pipe()
        fds += [verdict_read, verdict_write]
        output_read, output_write = os.pipe()
        fds += [output_read, output_write]
        if with_verdict:
            message = {**message, "verdict_fd": verdict_write}
        process = _start(setup, cgroup, workdir, output_write, verdict_write if with_verdict else None)
        for fd in (output_write, verdict_write):  # the sandbox holds the only write ends now
            os.close(fd)
            fds.remove(fd)
        run = _collect(process, _encode(setup, message, limits), output_read, verdict_read, limits)
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


def _start(setup: SandboxSetup, cgroup: SampleCgroup | None, workdir: str | None, output: int,
           verdict: int | None) -> subprocess.Popen:
    pass_fds = () if verdict is None else (verdict,)
    common = dict(stdin=subprocess.PIPE, stdout=output, stderr=output, pass_fds=pass_fds, close_fds=True,
                  start_new_session=True)
    if setup.mode == "weak":
        if setup.as_nobody:
            os.chown(workdir, NOBODY, NOBODY)
        return subprocess.Popen(_python(setup), cwd=workdir, env={"HOME": workdir, "LANG": "C.UTF-8"}, **common,
                                **_nobody(setup.as_nobody))
    argv = _bwrap_argv(setup)
    if cgroup is not None:  # enter the cgroups as root, then drop to nobody and start bubblewrap
        argv = ["/bin/sh", "-c", ENTER_CGROUPS, "gc2po-sandbox", str(len(cgroup.procs_files)),
                *cgroup.procs_files, *argv]
    return subprocess.Popen(argv, cwd="/", env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, **common)


def _kill(process: subprocess.Popen) -> None:
    """Kill the sample's process group (bubblewrap's --die-with-parent then takes the sandbox down).
    Not once reaped: the number may then belong to another process."""
    if process.returncode is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


def _collect(process: subprocess.Popen, payload: bytes, output_fd: int, verdict_fd: int, limits: Limits) -> RawRun:
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
                        pending = pending[os.write(stdin_fd, pending[:1 << 16]):]
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
                buffer += chunk[:max(0, cap - len(buffer))]  # keep the head, drain the rest
    timed_out = time.monotonic() >= deadline
    if not timed_out:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    if timed_out:
        _kill(process)
    return RawRun(process.returncode, bytes(output), bytes(verdict), timed_out)
