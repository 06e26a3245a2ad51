"""One sample's run as a sandbox setup describes it: the per-sample ``Limits``, the
``SandboxSetup`` found on this machine (``gc2po.evaluation.sandbox.host``) with the rlimits each
process sets, the bubblewrap and interpreter command line, and the message the sandbox reads
(the harness's sources, the sample, the limits). ``launch`` runs samples with them.
"""

from __future__ import annotations

import marshal
from dataclasses import dataclass, field
from pathlib import Path

from gc2po.evaluation.sandbox import harness, wire
from gc2po.evaluation.sandbox.cgroup import CgroupLayout
from gc2po.evaluation.sandbox.view import PageCacheWarmth

NOBODY = 65534
TMPFS_MB = 64  # the sample's only writable place, /tmp
OPEN_FILES = 64
# glibc reserves a 64 MB malloc arena per thread: address space RLIMIT_AS counts though it is never
# used, so 16 threads would exhaust a 1 GB limit; two arenas serve a test's few threads
MALLOC_ARENA_MAX = "2"
# executed in this order in one namespace inside the sandbox
HARNESS_SOURCES = [Path(m.__file__).read_text() for m in (wire, harness)]


@dataclass(frozen=True)
class Limits:
    """Per-sample limits. ``memory_mb``, ``max_processes`` and ``max_threads`` hold for the
    whole sample. A cgroup's pids.max counts threads, so in a cgroup the bound is ``max_threads``
    tasks (processes and threads together, a fork bomb stops there); without one RLIMIT_NPROC,
    which counts threads too, is ``max_processes``, since each process gets 1/max_processes of
    the memory."""

    timeout: float = 10.0
    cpu_seconds: int = 10
    memory_mb: int = 1024
    max_output_bytes: int = 1 << 20
    max_processes: int = 8
    max_threads: int = 64

    def __post_init__(self):
        for name in (
            "timeout",
            "cpu_seconds",
            "memory_mb",
            "max_output_bytes",
            "max_processes",
            "max_threads",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"sandbox limit {name}={value!r} must be a positive number")
        if self.memory_mb < 2 * TMPFS_MB or self.max_processes < 4:
            raise ValueError(
                f"sandbox limits memory_mb={self.memory_mb} and max_processes={self.max_processes} "
                f"are below the minimum ({2 * TMPFS_MB} MB, 4 processes: bubblewrap's init, "
                f"the harness, the candidate and one spare)"
            )
        if self.max_threads < self.max_processes:
            raise ValueError(
                f"sandbox limit max_threads={self.max_threads} is below "
                f"max_processes={self.max_processes} (each process has a thread)"
            )


@dataclass(frozen=True)
class SandboxSetup:
    """How samples run here: ``bubblewrap`` or (asked for) ``weak``."""

    mode: str
    interpreter: str
    as_nobody: bool  # the grader is root: samples run as nobody
    read_only: tuple[tuple[str, str], ...] = ()  # (host path, sandbox path) bound read-only
    # (target, link) as on the host, e.g. (usr/lib, /lib)
    symlinks: tuple[tuple[str, str], ...] = ()
    bwrap: str | None = None
    setpriv: str | None = None  # drops root to nobody before bubblewrap
    cgroups: CgroupLayout | None = None
    seccomp: bytes | None = None  # the BPF program (seccomp); None where no table fits
    hidden: tuple[str, ...] = ()  # folders of the view covered by an empty read-only one
    proc_masks: tuple[str, ...] = ()  # /proc files covered by an empty one (view)
    warmth: PageCacheWarmth | None = field(default=None, compare=False, repr=False)
    description: str = ""

    def rlimits(self, limits: Limits) -> dict:
        """The rlimits each process sets; without a cgroup a process cap times an address space
        that together (with the tmpfs) fit in memory_mb (in a fresh user namespace RLIMIT_NPROC
        counts the sample's processes only)."""
        address_space, processes = limits.memory_mb << 20, None
        if self.mode == "bubblewrap" and self.cgroups is None:
            address_space = ((limits.memory_mb - TMPFS_MB) << 20) // limits.max_processes
            processes = limits.max_processes
        return {
            "cpu_seconds": int(limits.cpu_seconds),
            "address_space_bytes": address_space,
            "file_bytes": TMPFS_MB << 20,
            "open_files": OPEN_FILES,
            "processes": processes,
        }


def nobody(as_nobody: bool) -> dict:
    """Popen arguments that drop root to nobody."""
    return dict(user=NOBODY, group=NOBODY, extra_groups=[]) if as_nobody else {}


def bwrap_argv(
    setup: SandboxSetup, seccomp_fd: int | None, info_fd: int | None = None, mask_fds=()
) -> list[str]:
    """The command line; ``seccomp_fd`` (inherited by bubblewrap) holds ``setup.seccomp``,
    ``info_fd`` gets bubblewrap's report of the sandbox's init (its host pid), ``mask_fds`` (one
    per ``setup.proc_masks``) are empty. The interpreter runs as the sandbox's pid 1
    (``--as-pid-1``): the harness is its init, non-dumpable, so no sample can write its memory or
    take its descriptors, and when it exits the kernel kills every process of the sample."""
    argv = [
        setup.bwrap,
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
    ]
    for source, destination in setup.read_only:
        argv += ["--ro-bind", source, destination]
    for target, link in setup.symlinks:
        argv += ["--symlink", target, link]
    for path in setup.hidden:
        argv += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
    argv += ["--proc", "/proc"]
    for fd, path in zip(mask_fds, setup.proc_masks, strict=True):
        argv += ["--ro-bind-data", str(fd), path]
    argv += [
        "--dev",
        "/dev",
        "--size",
        str(TMPFS_MB << 20),
        "--tmpfs",
        "/tmp",
        "--remount-ro",
        "/dev",
        "--remount-ro",
        "/",
        "--chdir",
        "/tmp",
        "--clearenv",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "TMPDIR",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "MALLOC_ARENA_MAX",
        MALLOC_ARENA_MAX,
    ]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    if info_fd is not None:
        argv += ["--info-fd", str(info_fd)]
    if setup.as_nobody:
        argv = [
            setup.setpriv,
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            "--",
            *argv,
        ]
    return argv + python_argv(setup)


def python_argv(setup: SandboxSetup) -> list[str]:
    return [setup.interpreter, "-I", "-S", "-B", "-X", "utf8", "-c", harness.BOOTSTRAP]


def encode_message(setup: SandboxSetup, message: dict, limits: Limits) -> bytes:
    message = {**message, "sources": HARNESS_SOURCES, "limits": setup.rlimits(limits)}
    return marshal.dumps(message, harness.MARSHAL_VERSION)
