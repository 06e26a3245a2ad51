"""How the code sandbox is set up on this machine (found once per process, with one trial run):
bubblewrap, the user samples run as, the interpreter and what it must see (``view``),
cgroups or rlimits. The per-sample limits and the bubblewrap command line are
``command``; ``launch`` runs samples with them."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace

from gc2po.evaluation.grading_errors import GraderError
from gc2po.evaluation.sandbox.cgroup import detect_cgroup_layout
from gc2po.evaluation.sandbox.command import (
    Limits,
    SandboxSetup,
    bwrap_argv,
    encode_message,
    nobody,
)
from gc2po.evaluation.sandbox.seccomp import host_arch, seccomp_pipe, seccomp_program
from gc2po.evaluation.sandbox.view import (
    PageCacheWarmth,
    eviction_sources,
    proc_masks,
    read_only_view,
    view_files,
)

INTERPRETERS = ("/usr/bin/python3", "/usr/local/bin/python3")  # tried after the grader's own
WEAK_ENV = "GC2PO_ALLOW_WEAK_SANDBOX"
# what an interpreter loads from: its sys.path under -I -S, and, after importing every extension
# module it has (and libgcc_s, which glibc loads when a thread exits), the files it mapped
PROBE = """
import importlib, json, os, sys
paths = [p for p in sys.path if os.path.isdir(p)]
modules = []
for folder in paths:
    for name in sorted(os.listdir(folder)):
        module = name.split(".")[0]
        if name.endswith(".so") and module not in modules:
            try:
                importlib.import_module(module)
                modules.append(module)
            except Exception:
                pass
import ctypes
try:
    ctypes.CDLL("libgcc_s.so.1")
except OSError:
    pass
with open("/proc/self/maps") as maps:
    fields = [line.split(None, 5) for line in maps]
mapped = sorted({f[5].strip() for f in fields if len(f) == 6 and f[5].startswith("/")})
print(json.dumps({"version": sys.version_info[:2], "paths": paths, "modules": modules,
                  "mapped": mapped}))
"""
# the trial run: the sandbox works, and every extension module imports in it
TRIAL = (
    "import importlib\nfor m in {modules!r}:\n    importlib.import_module(m)\nprint('sandbox ok')"
)


class SandboxUnavailable(GraderError):
    """Code cannot be run in the sandbox on this machine (and the weaker mode was not asked for)."""

    def __init__(self, reason: str):
        super().__init__("unavailable", reason)


def _interpreter_view(interpreter: str, as_nobody: bool) -> dict | None:
    """What ``interpreter -I -S`` loads (PROBE's report), or None when the sandbox user cannot
    run it."""
    try:
        done = subprocess.run(
            [interpreter, "-I", "-S", "-c", PROBE],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=60,
            env={"LANG": "C.UTF-8"},  # the sandbox's locale: its files are mapped too
            cwd="/",
            **nobody(as_nobody),
        )
        found = json.loads(done.stdout.splitlines()[-1]) if done.returncode == 0 else None
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None
    return found if found and tuple(found["version"]) >= (3, 9) else None


def _find_interpreter(as_nobody: bool) -> tuple[str, dict]:
    tried = []
    for candidate in dict.fromkeys(
        [os.path.realpath(sys.executable), *map(os.path.realpath, INTERPRETERS)]
    ):
        view = _interpreter_view(candidate, as_nobody) if os.path.isfile(candidate) else None
        if view is not None:
            return candidate, view
        tried.append(candidate)
    user = "nobody" if as_nobody else "this user"
    raise SandboxUnavailable(
        f"no Python >= 3.9 that {user} can run among {tried}; install python3 "
        f"(apt-get install python3-minimal) or make the grader's Python readable by {user}"
    )


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
        interpreter, view = _find_interpreter(as_nobody)
    except SandboxUnavailable as error:
        return str(error)
    arch = host_arch()
    read_only, symlinks, hidden = read_only_view(interpreter, view["paths"], view["mapped"])
    setup = SandboxSetup(
        "bubblewrap",
        interpreter,
        as_nobody,
        read_only,
        symlinks,
        bwrap,
        setpriv,
        seccomp=None if arch is None else seccomp_program(arch),
        hidden=hidden,
        proc_masks=proc_masks(),
        warmth=PageCacheWarmth(view_files(read_only, hidden), eviction_sources()),
    )
    trial = _trial_run(setup, TRIAL.format(modules=view["modules"]))
    if trial.returncode != 0 or not trial.stdout.endswith(b"sandbox ok\n"):
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


def _trial_run(setup: SandboxSetup, program: str) -> subprocess.CompletedProcess:
    """``program`` run in the sandbox, the way ``launch`` runs samples."""
    seccomp_fd = None if setup.seccomp is None else seccomp_pipe(setup.seccomp)
    verdict_read, verdict_write = os.pipe()
    masks = [os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC) for _ in setup.proc_masks]
    message = {"role": "script", "program": program, "verdict_fd": verdict_write}
    extra = () if seccomp_fd is None else (seccomp_fd,)
    try:
        return subprocess.run(
            bwrap_argv(setup, seccomp_fd, mask_fds=masks),
            input=encode_message(setup, message, Limits()),
            capture_output=True,
            timeout=60,
            env={},
            cwd="/",
            pass_fds=(verdict_write, *extra, *masks),
        )
    finally:
        for fd in [verdict_read, verdict_write, *extra, *masks]:
            os.close(fd)


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
