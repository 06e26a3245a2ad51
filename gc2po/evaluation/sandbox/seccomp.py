"""The seccomp filter every sandboxed sample runs under (bubblewrap's ``--seccomp FD``): a classic
BPF program, built here with no dependency, that makes the syscalls a Python test never needs
fail with EPERM and lets the rest through.

Blocked, and why: the keyring (``add_key``, ``request_key``, ``keyctl``: keys are not
namespaced by bubblewrap, so a key's description written by one sample shows in ``/proc/keys``
to the next sample and to host processes of the same uid, and samples share its quota);
``ptrace``, ``process_vm_readv``/``writev``, ``kcmp``, ``pidfd_getfd``, ``process_madvise``,
``process_mrelease`` (reaching into another process: stopping the sandbox's init, reading or
writing its memory, taking its descriptors); ``perf_event_open``, ``bpf``, ``userfaultfd``,
``io_uring_*`` (kernel attack surface with a history of exploits, the reasons Docker's default
profile blocks them); the mount, module, kexec, swap, reboot, accounting and handle syscalls
(all need capabilities the sample lacks: blocking them costs nothing). The page cache, which
every sample shares through the interpreter's files, must not carry a message from one sample
to the next: ``mincore`` and ``cachestat`` (they tell which pages are cached), ``preadv2`` and
``pwritev2`` with any flag (``RWF_NOWAIT`` fails on an uncached page; with no flag they are
``preadv``/``pwritev``), ``fadvise64`` with DONTNEED, NOREUSE or an unknown advice and
``madvise`` with MADV_COLD or MADV_PAGEOUT (they evict pages); ``sysinfo`` tells host load and
task counts. x86_64 and aarch64; on x86_64 the x32 ABI is refused as a whole (its syscall
numbers are a second way in). A process of another architecture is killed.
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
    "pidfd_getfd": (438, 438),
    "process_madvise": (440, 440),
    "process_mrelease": (448, 448),
    "mincore": (27, 232),
    "cachestat": (451, 451),
    "sysinfo": (99, 179),
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
# refused when an argument's low 32 bits (the int the kernel reads) fall in [lowest, highest]:
# name -> ((x86_64, aarch64) numbers, argument index, (lowest, highest))
ARGUMENT_CHECKS = {
    "preadv2": ((327, 286), 5, (1, 0xFFFFFFFF)),  # any RWF_* flag
    "pwritev2": ((328, 287), 5, (1, 0xFFFFFFFF)),
    "fadvise64": ((221, 223), 3, (4, 0xFFFFFFFF)),  # DONTNEED 4, NOREUSE 5, unknown advice
    "madvise": ((28, 233), 2, (20, 21)),  # MADV_COLD, MADV_PAGEOUT
}
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}  # <linux/audit.h>
X32_SYSCALL_BIT = 0x40000000

# <linux/filter.h>, <linux/seccomp.h>
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_JGT_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x25, 0x06
SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_ERRNO, SECCOMP_RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
ARCH_OFFSET, NR_OFFSET, ARGS_OFFSET = 4, 0, 16  # in struct seccomp_data (args: u64 each)


def _instruction(code: int, k: int, jump_true: int = 0, jump_false: int = 0) -> bytes:
    if not (0 <= jump_true <= 255 and 0 <= jump_false <= 255):
        raise ValueError(f"a BPF jump of {max(jump_true, jump_false)} is out of range")
    return struct.pack("=HBBI", code, jump_true, jump_false, k)  # struct sock_filter


def host_arch() -> str | None:
    """The arch this filter is built for (the machine's), or None where it has no table."""
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(
        platform.machine().lower(), platform.machine()
    )
    return machine if machine in AUDIT_ARCH else None


def _argument_block(index: int, lowest: int, highest: int) -> list[bytes]:
    """Refuse when argument ``index`` (low word, little-endian) is in [lowest, highest]."""
    return [
        _instruction(BPF_LD_W_ABS, ARGS_OFFSET + 8 * index),
        _instruction(BPF_JGE_K, lowest, 0, 2),  # below: to allow
        _instruction(BPF_JGT_K, highest, 1, 0),  # above: to allow
        _instruction(BPF_RET_K, SECCOMP_RET_ERRNO | errno.EPERM),
        _instruction(BPF_RET_K, SECCOMP_RET_ALLOW),
    ]


def seccomp_program(arch: str) -> bytes:
    """The BPF program (concatenated ``struct sock_filter``) for ``arch`` ("x86_64"/"aarch64").

    Layout: arch load, arch check, nr load, the checks (x32, one per blocked number, one per
    argument-checked number), allow, errno, kill, then one block per argument-checked number."""
    column = 0 if arch == "x86_64" else 1
    numbers = sorted({nrs[column] for nrs in BLOCKED_SYSCALLS.values() if nrs[column] is not None})
    blocks = [
        (nrs[column], _argument_block(index, *bounds))
        for nrs, index, bounds in ARGUMENT_CHECKS.values()
    ]
    checks = [(BPF_JGE_K, X32_SYSCALL_BIT, None)] if arch == "x86_64" else []
    checks += [(BPF_JEQ_K, number, None) for number in numbers]
    checks += [(BPF_JEQ_K, number, block) for block, (number, _) in enumerate(blocks)]
    program = [
        _instruction(BPF_LD_W_ABS, ARCH_OFFSET),
        # wrong arch: jump over the nr load, the checks, allow and errno, to kill
        _instruction(BPF_JEQ_K, AUDIT_ARCH[arch], 0, len(checks) + 3),
        _instruction(BPF_LD_W_ABS, NR_OFFSET),
    ]
    block_size = len(blocks[0][1])
    for index, (code, number, block) in enumerate(checks):
        to_errno = len(checks) - index
        target = to_errno if block is None else to_errno + 2 + block_size * block
        program.append(_instruction(code, number, target, 0))
    program += [
        _instruction(BPF_RET_K, SECCOMP_RET_ALLOW),
        _instruction(BPF_RET_K, SECCOMP_RET_ERRNO | errno.EPERM),
        _instruction(BPF_RET_K, SECCOMP_RET_KILL_PROCESS),
    ]
    for _, block in blocks:
        program += block
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
