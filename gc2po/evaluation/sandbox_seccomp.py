"""The seccomp filter every sandboxed sample runs under (bubblewrap's ``--seccomp FD``): a classic
BPF program, built here with no dependency, that makes the syscalls a Python test never needs
fail with EPERM and lets the rest through.

Blocked, and why: the keyring (``add_key``, ``request_key``, ``keyctl``: keys are not
namespaced by bubblewrap, so a key's description written by one sample shows in ``/proc/keys``
to the next sample and to host processes of the same uid, and samples share its quota);
``ptrace``, ``process_vm_readv``/``writev`` and ``kcmp`` (a sample could stop the sandbox's init
and hold its output pipe until the wall-clock limit, or read another process's memory);
``perf_event_open``, ``bpf``, ``userfaultfd``, ``io_uring_*`` (kernel attack surface with a
history of exploits, the reasons Docker's default profile blocks them); and the mount, module,
kexec, swap, reboot, accounting and handle syscalls (all need capabilities the sample lacks:
blocking them costs nothing). x86_64 and aarch64; on x86_64 the x32 ABI is refused as a whole
(its syscall numbers are a second way in). A process of another architecture is killed.
"""

from __future__ import annotations

import errno
import os
import platform
import struct

# (x86_64, aarch64) numbers, from <asm/unistd_64.h> and <asm-generic/unistd.h>; None: no such call
BLOCKED_SYSCALLS = {
    "add_key": (248, 217),
    "request_key": (249, 218),
    "keyctl": (250, 219),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kcmp": (312, 272),
    "perf_event_open": (298, 241),
    "bpf": (321, 280),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "setns": (308, 268),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "reboot": (169, 142),
    "acct": (163, 89),
    "syslog": (103, 116),
    "quotactl": (179, 60),
    "lookup_dcookie": (212, 18),
    "fanotify_init": (300, 262),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "uselib": (134, None),
    "iopl": (172, None),
    "ioperm": (173, None),
}
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}  # <linux/audit.h>
X32_SYSCALL_BIT = 0x40000000

# <linux/filter.h>, <linux/seccomp.h>
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x06
SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_ERRNO, SECCOMP_RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
ARCH_OFFSET, NR_OFFSET = 4, 0  # in struct seccomp_data


def _instruction(code: int, k: int, jump_true: int = 0, jump_false: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jump_true, jump_false, k)  # struct sock_filter


def host_arch() -> str | None:
    """The arch this filter is built for (the machine's), or None where it has no table."""
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(
        platform.machine().lower(), platform.machine()
    )
    return machine if machine in AUDIT_ARCH else None


def seccomp_program(arch: str) -> bytes:
    """The BPF program (concatenated ``struct sock_filter``) for ``arch`` ("x86_64"/"aarch64")."""
    column = 0 if arch == "x86_64" else 1
    numbers = sorted({nrs[column] for nrs in BLOCKED_SYSCALLS.values() if nrs[column] is not None})
    # layout: [arch load, arch check, nr load, (x32 check), one check per number, allow,
    # errno, kill]
    checks = [(BPF_JGE_K, X32_SYSCALL_BIT)] if arch == "x86_64" else []
    checks += [(BPF_JEQ_K, number) for number in numbers]
    program = [
        _instruction(BPF_LD_W_ABS, ARCH_OFFSET),
        # wrong arch: jump over the nr load, the checks, allow and errno, to kill
        _instruction(BPF_JEQ_K, AUDIT_ARCH[arch], 0, len(checks) + 3),
        _instruction(BPF_LD_W_ABS, NR_OFFSET),
    ]
    for index, (code, number) in enumerate(checks):
        program.append(_instruction(code, number, len(checks) - index, 0))  # match: to errno
    program += [
        _instruction(BPF_RET_K, SECCOMP_RET_ALLOW),
        _instruction(BPF_RET_K, SECCOMP_RET_ERRNO | errno.EPERM),
        _instruction(BPF_RET_K, SECCOMP_RET_KILL_PROCESS),
    ]
    return b"".join(program)


def seccomp_pipe(program: bytes) -> int:
    """A pipe's read end holding ``program`` whole (bubblewrap reads the fd to its end); the
    caller passes it to bubblewrap and closes it after the start."""
    read_end, write_end = os.pipe()
    try:
        if len(program) > 4096:  # PIPE_BUF: one write, never a partial one
            raise ValueError(f"seccomp program of {len(program)} bytes does not fit one pipe write")
        os.write(write_end, program)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    return read_end
