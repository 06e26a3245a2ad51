"""How the code sandbox is set up on this machine (found once per process, with one trial run):
bubblewrap, the user samples run as, the interpreter and what it must see, cgroups or rlimits.
The per-sample limits and the bubblewrap command line are ``sandbox_command``; ``sandbox_launch``
runs samples with them."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace

from gc2po.evaluation.sandbox_cgroup import detect_cgroup_layout
from gc2po.evaluation.sandbox_command import (
    Limits,
    SandboxSetup,
    bwrap_argv,
    encode_message,
    nobody,
)
from gc2po.evaluation.sandbox_seccomp import host_arch, seccomp_pipe, seccomp_program

INTERPRETERS = ("/usr/bin/python3", "/usr/local/bin/python3")  # tried after the grader's own
WEAK_ENV = "GC2PO_ALLOW_WEAK_SANDBOX"
# what an interpreter loads from: its sys.path under -I -S, and LIBDIR (libpython, libffi, ...)
PROBE = (
    "import json, os, sys, sysconfig; paths = [*sys.path, "
    "sysconfig.get_config_var('LIBDIR') or ''];"
    "print(json.dumps({'version': sys.version_info[:2], 'paths': [p for p in paths if "
    "os.path.isdir(p)]}))"
)


class SandboxUnavailable(RuntimeError):
    """Code cannot be run in the sandbox on this machine (and the weaker mode was not asked for)."""


def _interpreter_paths(interpreter: str, as_nobody: bool) -> list[str] | None:
    """The directories ``interpreter -I -S`` loads from,
    or None when the sandbox user cannot run it."""
    try:
        done = subprocess.run(
            [interpreter, "-I", "-S", "-c", PROBE],
            capture_output=True,
            text=True,
            timeout=60,
            env={},
            cwd="/",
            **nobody(as_nobody),
        )
        found = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return found["paths"] if found and tuple(found["version"]) >= (3, 9) else None


def _find_interpreter(as_nobody: bool) -> tuple[str, list[str]]:
    tried = []
    for candidate in dict.fromkeys(
        [os.path.realpath(sys.executable), *map(os.path.realpath, INTERPRETERS)]
    ):
        paths = _interpreter_paths(candidate, as_nobody) if os.path.isfile(candidate) else None
        if paths is not None:
            return candidate, paths
        tried.append(candidate)
    user = "nobody" if as_nobody else "this user"
    raise SandboxUnavailable(
        f"no Python >= 3.9 that {user} can run among {tried}; install python3 "
        f"(apt-get install python3-minimal) or make the grader's Python readable by {user}"
    )


def _read_only_view(
    interpreter: str, paths: list[str]
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Bind the interpreter, its library directories and the C libraries; /lib* as on the host."""
    wanted = [
        interpreter,
        *paths,
        *(p for p in ("/usr/lib", "/usr/lib64", "/usr/lib32") if os.path.isdir(p)),
    ]
    symlinks = []
    for top in ("/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(top):
            symlinks.append((os.readlink(top), top))
        elif os.path.isdir(top):
            wanted.append(top)
    wanted = sorted({os.path.realpath(p) for p in wanted})
    outermost = [
        p for p in wanted if not any(p.startswith(other.rstrip("/") + "/") for other in wanted)
    ]
    return tuple(outermost), tuple(symlinks)


def _probe_bubblewrap() -> SandboxSetup | str:
    """The bubblewrap setup after one trial run, or why bubblewrap cannot run here.

    Only a working setup is remembered: a "cannot run" answer is probed again next time, so a
    process that graded before bubblewrap was installed works once it is."""
    global _working_setup
    if _working_setup is None:
        probe = _probe_bubblewrap_once()
        if not isinstance(probe, SandboxSetup):
            return probe
        _working_setup = probe
    return _working_setup


_working_setup: SandboxSetup | None = None


def _probe_bubblewrap_once() -> SandboxSetup | str:
    bwrap, setpriv, as_nobody = shutil.which("bwrap"), shutil.which("setpriv"), os.geteuid() == 0
    if bwrap is None:
        return "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
    if as_nobody and setpriv is None:
        return "running as root needs setpriv (util-linux) to drop to nobody before bubblewrap"
    try:
        interpreter, paths = _find_interpreter(as_nobody)
    except SandboxUnavailable as error:
        return str(error)
    arch = host_arch()
    setup = SandboxSetup(
        "bubblewrap",
        interpreter,
        as_nobody,
        *_read_only_view(interpreter, paths),
        bwrap,
        setpriv,
        seccomp=None if arch is None else seccomp_program(arch),
    )
    message = {"role": "script", "program": "print('sandbox ok')"}
    seccomp_fd = None if setup.seccomp is None else seccomp_pipe(setup.seccomp)
    try:
        trial = subprocess.run(
            bwrap_argv(setup, seccomp_fd),
            input=encode_message(setup, message, Limits()),
            capture_output=True,
            timeout=60,
            env={},
            cwd="/",
            pass_fds=() if seccomp_fd is None else (seccomp_fd,),
        )
    finally:
        if seccomp_fd is not None:
            os.close(seccomp_fd)
    if trial.returncode != 0 or trial.stdout.strip() != b"sandbox ok":
        return (
            f"bubblewrap cannot start a sandbox here (exit status {trial.returncode}: "
            f"{trial.stderr.decode(errors='replace').strip()[-500:]}); it needs user namespaces "
            f"(sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0)"
        )
    cgroups, bound = detect_cgroup_layout()
    user = "nobody" if as_nobody else "this user"
    filtered = (
        f"seccomp filter for {arch}"
        if arch
        else "NO seccomp filter (no syscall table for this machine)"
    )
    return replace(
        setup,
        cgroups=cgroups,
        description=f"bubblewrap ({bwrap}) as {user}, {interpreter}; {filtered}; {bound}",
    )


def sandbox_setup(allow_weak: bool = False) -> SandboxSetup:
    """The setup every sample uses; raises SandboxUnavailable where bubblewrap cannot run, unless
    the weaker mode is asked for (``allow_weak`` or the environment variable
    GC2PO_ALLOW_WEAK_SANDBOX=1)."""
    probe = _probe_bubblewrap()
    if isinstance(probe, SandboxSetup):
        return probe
    if not (allow_weak or os.environ.get(WEAK_ENV) == "1"):
        raise SandboxUnavailable(
            f"refusing to run model-written code: {probe}. To run it anyway with a weaker "
            f"sandbox (no namespaces), pass allow_weak_sandbox=True or set {WEAK_ENV}=1"
        )
    return _weak_setup(probe)


@functools.cache
def _weak_setup(why: str) -> SandboxSetup:
    as_nobody = os.geteuid() == 0
    interpreter, _ = _find_interpreter(as_nobody)
    return SandboxSetup(
        "weak",
        interpreter,
        as_nobody,
        description=f"WEAK sandbox ({why}): no namespaces, rlimits and the harness's verdict only"
        + ("" if as_nobody else "; a program run as this same user can reach the grader"),
    )
