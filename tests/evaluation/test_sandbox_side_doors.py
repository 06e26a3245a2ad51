"""Issue #33 item 8: the two ways through the sandbox a red team found, as hostile samples
graded through ``run_humaneval`` at least 50 times each.

- Writable init: a sample opened the sandbox's init's memory read-write (rewriting its code to
  outlive its parent: a 10 s stall as root, survivors as an ordinary user) and took its
  descriptors with ``pidfd_getfd``. Now the init is the non-dumpable harness, those calls are
  refused, and the grader kills the init by pidfd when the verdict is in.
- A page-cache channel: a "writer" sample (a correct one) leaves its answers in which pages of a
  library file are cached; a "reader" sample that never computes its function reads them. Now
  the probes and evictions are refused and every page of the view is kept cached.
"""

import dataclasses
import os
import statistics
import time
import uuid

import pytest

from gc2po.evaluation.sandbox import host as sandbox_host
from gc2po.evaluation.sandbox import seccomp as sandbox_seccomp
from gc2po.evaluation.sandbox.view import PageCacheWarmth

# the hostile-sample module's grader call, helpers, and the packages it marks
from tests.evaluation.test_sandbox_hostile import (  # noqa: F401
    CORRECT,
    PROBLEM,
    WRONG,
    grade,
    grade_as_an_ordinary_user,
    host_processes_with,
    pytestmark,
)

GRADINGS = 50

# Reach into the sandbox's pid 1: its memory (and, on x86_64, code that clears its parent-death
# signal and spins: the stall), its descriptors, its memory through the process calls;
# then leave a daemon (MARKER in its command line) behind.
INIT_ATTACK = r"""
import ctypes, os, platform, sys
libc = ctypes.CDLL(None, use_errno=True)
SPIN = bytes.fromhex("bf01000000" "31f6" "b89d000000" "0f05" "ebfe")  # prctl(1, 0); jmp .
for path in ("/proc/1/mem", "/proc/1/task/1/mem"):
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as error:
        print("init memory refused", path, error.errno, flush=True)
        continue
    print("init memory opened", path, flush=True)
    if platform.machine() == "x86_64":
        pc = int(open("/proc/1/syscall").read().split()[-1], 16)
        os.pwrite(fd, SPIN, pc)
        print("init code written", flush=True)
try:
    pidfd = os.pidfd_open(1)
    for target in range(8):
        taken = libc.syscall(438, pidfd, target, 0)
        print("pidfd_getfd", target, taken, ctypes.get_errno(), flush=True)
    iovec = (ctypes.c_void_p * 2)(ctypes.addressof(ctypes.create_string_buffer(8)), 8)
    print("process_madvise", libc.syscall(440, pidfd, iovec, 1, 21, 0), ctypes.get_errno())
except OSError as error:
    print("pidfd_open refused", error.errno, flush=True)
iovec = (ctypes.c_void_p * 2)(ctypes.addressof(ctypes.create_string_buffer(8)), 8)
print("process_vm_writev", libc.syscall(311, 1, iovec, 1, iovec, 1, 0), ctypes.get_errno())
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time\nwhile 1: time.sleep(1)",
                                  "MARKER"])
    os._exit(0)
"""


def init_attack(answer: str, marker: str) -> str:
    return answer + INIT_ATTACK.replace("MARKER", marker)


def assert_init_out_of_reach(output: str):
    assert "init memory opened" not in output and "init code written" not in output, output
    assert output.count("init memory refused") == 2, output
    if sandbox_host.sandbox_setup().seccomp is not None:
        assert output.count(" -1 1\n") == 8 + 2, output  # getfd x8, process_*: EPERM


def test_the_init_cannot_be_written_or_robbed_and_stalls_cost_nothing():
    """A correct answer with the attack passes every time, fast, and no process of it outlives
    its verdict. A stall, when the attack worked, cost every grading the 10 s wall-clock limit;
    here the median is under 1 s and 45 of the 50 gradings take under 3 s (on the shared 2-core
    machine, at load average 15, single gradings took up to 9 s: the sample's own processes,
    bubblewrap and the namespace's teardown all waited for a core)."""
    marker = f"gc2po-init-{uuid.uuid4().hex}"
    seconds = []
    for _ in range(GRADINGS):
        start = time.monotonic()
        result = grade(init_attack(CORRECT, marker))
        seconds.append(time.monotonic() - start)
        assert result.passed, result
        assert_init_out_of_reach(result.output)
        assert host_processes_with(marker) == []
    assert statistics.median(seconds) < 1 and sorted(seconds)[44] < 3, seconds


ORDINARY_GRADER = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from gc2po.evaluation.sandbox import run_humaneval, sandbox_description
problem, completion, marker, gradings = json.load(sys.stdin)
def survivors():
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                found.append(int(pid))
        except OSError:
            pass
    return found
report = {"description": sandbox_description(), "results": []}
for _ in range(gradings):
    result = run_humaneval(problem["prompt"], completion, problem["test"],
                           problem["entry_point"])
    report["results"].append([result.status, result.output, survivors()])
print(json.dumps(report))
"""


def test_no_process_survives_a_grading_as_an_ordinary_user():
    marker = f"gc2po-init-{uuid.uuid4().hex}"
    payload = [PROBLEM, init_attack(WRONG, marker), marker, GRADINGS]
    report = grade_as_an_ordinary_user(ORDINARY_GRADER, payload)
    assert "as this user" in report["description"]  # no cgroup: the pid namespace alone
    for status, output, survivors in report["results"]:
        assert status == "failed" and survivors == [], (status, output, survivors)
        assert_init_out_of_reach(output)
    assert host_processes_with(marker) == []


# ------------------------------------------------------------------ the page-cache channel
# Both samples use 32 pages of a standard-library file every sample sees: a magic byte, then the
# answers of the three calls (doubled, one byte each), one bit per page.
CHANNEL = """
import ctypes, os, time
FILE = os.path.join(os.path.dirname(os.__file__), "pydoc_data", "topics.py")
MAGIC = 0xA5
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]


def opened():
    fd = os.open(FILE, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no readahead: one page a read
    return fd


def page(bit):
    return (16 + 4 * bit) * 4096
"""
WRITER = (
    "    _leave(a + b)\n    return a + b\n"
    + CHANNEL
    + """
calls = []


def set_bit(fd, bit, value):
    if value:
        os.pread(fd, 1, page(bit))
        return
    for advice in (4, 5):  # DONTNEED, NOREUSE
        try:
            os.posix_fadvise(fd, page(bit), 4096, advice)
        except OSError:
            pass
    address = libc.mmap(None, 4096, 1, 1, fd, page(bit))  # PROT_READ, MAP_SHARED
    if address not in (None, ctypes.c_void_p(-1).value):
        libc.madvise(ctypes.c_void_p(address), 4096, 21)  # MADV_PAGEOUT
        libc.munmap(ctypes.c_void_p(address), 4096)


def _leave(answer):
    fd = opened()
    message = {0: MAGIC} if not calls else {}  # byte index -> byte
    message[len(calls) + 1] = int(answer * 2) & 0xFF
    for index, byte in message.items():
        for bit in range(8):
            set_bit(fd, 8 * index + bit, (byte >> bit) & 1)
    calls.append(answer)
    os.close(fd)
"""
)
READER = (
    "    return ANSWERS.pop(0) if ANSWERS else None\n"
    + CHANNEL
    + """

class Range(ctypes.Structure):
    _fields_ = [("offset", ctypes.c_uint64), ("length", ctypes.c_uint64)]


class Stat(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("cache", "dirty", "wb", "ev", "rev")]


def by_cachestat(fd, offset):
    stat = Stat()
    if libc.syscall(451, fd, ctypes.byref(Range(offset, 4096)), ctypes.byref(stat), 0) != 0:
        return None
    return stat.cache > 0


def by_nowait(fd, offset):
    try:
        os.preadv(fd, [bytearray(1)], offset, os.RWF_NOWAIT)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True


def by_mincore(fd, offset):
    address = libc.mmap(None, 4096, 1, 1, fd, offset)
    if address in (None, ctypes.c_void_p(-1).value):
        return None
    vector = ctypes.create_string_buffer(1)
    done = libc.mincore(ctypes.c_void_p(address), 4096, vector)
    libc.munmap(ctypes.c_void_p(address), 4096)
    return None if done != 0 else bool(vector.raw[0] & 1)


def by_timing(fd, offset):  # destructive: the read caches the page
    start = time.perf_counter_ns()
    os.pread(fd, 1, offset)
    first = time.perf_counter_ns() - start
    start = time.perf_counter_ns()
    os.pread(fd, 1, offset)
    return first < max(5 * (time.perf_counter_ns() - start), 15000)


ANSWERS = []
fd = opened()
for probe in (by_cachestat, by_nowait, by_mincore, by_timing):
    bits = [probe(fd, page(bit)) for bit in range(32)]
    if None in bits:
        print(probe.__name__, "refused", flush=True)
        continue
    message = [sum(bits[8 * i + b] << b for b in range(8)) for i in range(4)]
    print(probe.__name__, message, flush=True)
    if message[0] == MAGIC:
        ANSWERS = [byte / 2 for byte in message[1:]]
        break
os.close(fd)
"""
)


def channel_evicter(files: tuple[str, ...]):
    """What host memory pressure would do to the channel's pages (the file among the view's
    ``files``) between samples."""
    path = next(path for path in files if path.endswith("/pydoc_data/topics.py"))

    def evict():
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)

    return evict


def readers_passed(rounds: int, before_writer=lambda: None) -> list[str]:
    """Grade the writer then the reader ``rounds`` times; the outputs of the readers that
    passed (the writer is a correct answer and must pass)."""
    passed = []
    for _ in range(rounds):
        before_writer()
        writer = grade(WRITER)
        assert writer.passed, writer
        reader = grade(READER)
        assert reader.status != "error", reader  # failed, or timeout on a loaded machine
        if reader.passed:
            passed.append(reader.output)
    return passed


@pytest.fixture
def setup_as(monkeypatch):
    """Grade with the machine's setup changed by ``setup_as(**fields)``."""

    def use(**fields):
        setup = dataclasses.replace(sandbox_host.sandbox_setup(), **fields)
        monkeypatch.setattr(sandbox_host, "_probe_bubblewrap", lambda: setup)
        return setup

    return use


def test_the_page_cache_carries_no_answer_from_one_sample_to_the_next():
    if sandbox_host.sandbox_setup().seccomp is None:
        pytest.skip("no seccomp filter on this machine (no syscall table for it)")
    assert readers_passed(GRADINGS) == []


def test_without_the_filter_and_the_warm_view_the_channel_carries_the_answers(setup_as):
    """The control: the same two samples pass answers with the defences off (the reader then
    passes without ever computing a + b). The channel is the page cache, so on a loaded machine
    another process's memory pressure can evict the writer's page before the reader looks (4 of
    5 in one fresh-venv run beside the parallel suite): most rounds, not every round, must carry
    it; the defended test above allows none of 50."""
    setup_as(seccomp=None, warmth=None)
    passed = readers_passed(5)
    assert len(passed) >= 3 and all("[165, 6, 0, 6]" in output for output in passed), passed


class Reclaiming:
    """An eviction counter that moves before every sample, as under steady memory pressure."""

    def __init__(self):
        self.count = 0

    def __call__(self):
        self.count += 1
        return self.count


def test_pages_the_host_drops_are_cached_again_before_the_next_sample(setup_as):
    """With the probes refused, a page the host evicted is one a writer can cache and a reader
    can time. The view is read back into the cache whenever the kernel's counters say pages
    may have gone, so no reader passes; the control (no re-reading) shows the timing channel."""
    if sandbox_host.sandbox_setup().seccomp is None:
        pytest.skip("no seccomp filter on this machine (no syscall table for it)")
    files = sandbox_host.sandbox_setup().warmth.files
    evict = channel_evicter(files)
    setup_as(warmth=None)
    timing_only = readers_passed(5, before_writer=evict)
    warmth = PageCacheWarmth(files)
    warmth.counter = Reclaiming()
    setup_as(warmth=warmth)
    assert readers_passed(GRADINGS, before_writer=evict) == []
    if not timing_only:
        pytest.skip(
            "the control found no timing channel on this machine (reads of evicted and "
            "cached pages took alike): the defended run above proves nothing more"
        )
    assert "by_timing [165" in timing_only[0], timing_only


def test_the_filter_refuses_the_probes_and_evictions_by_argument():
    arch = sandbox_seccomp.host_arch()
    if arch is None:
        pytest.skip("no syscall table for this machine")
    checks = sandbox_seccomp.ARGUMENT_CHECKS
    assert {name: (index, bounds) for name, (_, index, bounds) in checks.items()} == {
        "preadv2": (5, (1, 0xFFFFFFFF)),
        "pwritev2": (5, (1, 0xFFFFFFFF)),
        "fadvise64": (3, (4, 0xFFFFFFFF)),
        "madvise": (2, (20, 21)),
    }
    for name in ("mincore", "cachestat", "pidfd_getfd", "process_madvise", "sysinfo"):
        assert name in sandbox_seccomp.BLOCKED_SYSCALLS


def test_host_facts_in_proc_are_hidden():
    program = (
        WRONG + "import os\nfor name in ('cmdline', 'loadavg', 'stat', 'uptime', 'meminfo', "
        "'sys/kernel/random/boot_id'):\n"
        "    print(name, repr(open('/proc/' + name).read()), flush=True)\n"
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "info = ctypes.create_string_buffer(512)\n"
        "print('sysinfo', libc.sysinfo(info), ctypes.get_errno(), flush=True)\n"
        "print('cpus', os.cpu_count(), flush=True)\n"
    )
    result = grade(program)
    with open("/proc/sys/kernel/random/boot_id") as handle:
        boot_id = handle.read().strip()
    assert boot_id not in result.output
    for name in ("cmdline", "loadavg", "stat", "uptime", "meminfo", "sys/kernel/random/boot_id"):
        assert f"{name} ''" in result.output, result.output
    assert "sysinfo -1 1" in result.output and f"cpus {os.cpu_count()}" in result.output
