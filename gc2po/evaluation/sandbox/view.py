"""What a sandboxed sample sees of the host: only the files the interpreter needs, read-only, with
every page of them kept in the page cache; a /proc without host facts.

Every sample reads the same files, so their page cache is shared: a sample that could evict a
page, or tell whether one is cached, could leave a message for the next sample (one bit a page).
The seccomp filter refuses the calls that evict or probe (``seccomp``); what is left is
timing a read, which tells only whether a page was cached. So the view is small (the
interpreter, its standard library less installed packages, the shared objects and locale files
it and its extension modules map, as found by a trial run, not the whole of /usr/lib) and every
page of it is read into the cache
before the first sample and again whenever the kernel may have dropped some since: its reclaim
and drop_caches counters (``/proc/vmstat``) and those of the grader's own memory cgroup, where
a limit would reclaim without the global counters moving (v2 ``memory.stat`` pgsteal, v1
``memory.failcnt``). A sample finds every page cached and can cache none. Not seen: reclaim
forced by a limit on an ancestor cgroup the grader cannot see, and host processes evicting
these files themselves. Host facts that /proc shows to any namespace (kernel command line,
boot id, load, memory, host task and disk counters) are covered by empty files.

Bubblewrap reads the whole mount table for every bind (a cost that grows with their number), so
the single files are laid out once per grader process in a private folder (hard links where the
file system allows, else copies; removed at exit) and bound a folder at a time.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import threading

# /proc files covered by an empty file in the sandbox (those this kernel has)
PROC_MASKS = (
    "cmdline",
    "loadavg",
    "stat",
    "uptime",
    "meminfo",
    "vmstat",
    "zoneinfo",
    "buddyinfo",
    "diskstats",
    "interrupts",
    "softirqs",
    "schedstat",
    "locks",
    "pressure/cpu",
    "pressure/io",
    "pressure/memory",
    "pressure/irq",
    "sys/kernel/random/boot_id",
    "sys/fs/dentry-state",
    "sys/fs/inode-nr",
    "sys/fs/inode-state",
    "sys/fs/file-nr",
)
# counters that grow whenever the kernel may drop page cache: (file, line prefixes)
GLOBAL_EVICTIONS = ("/proc/vmstat", ("pgsteal_", "drop_pagecache"))  # reclaim, drop_caches
LIBRARY_DIRS = ("/lib64", "/lib", "/usr/lib64")  # where the loader looks, besides a file's own dir
PACKAGE_DIRS = ("site-packages", "dist-packages")  # installed packages: hidden, never needed


def proc_masks(proc: str = "/proc") -> tuple[str, ...]:
    """The /proc paths to cover on this kernel."""
    return tuple(f"/proc/{name}" for name in PROC_MASKS if os.path.isfile(f"{proc}/{name}"))


def _names_of(files: set[str]) -> set[str]:
    """``files`` and every path the loader may open them by: the links to them in their own
    directory and in the loader's directories (``libz.so.1`` -> ``libz.so.1.2.13``,
    ``/lib64/ld-linux-x86-64.so.2`` -> ``/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2``)."""
    found = set(files)
    folders = {os.path.dirname(f) for f in files} | {
        os.path.realpath(d) for d in LIBRARY_DIRS if os.path.isdir(d)
    }
    for folder in folders:
        for entry in os.scandir(folder):
            if entry.is_symlink() and os.path.realpath(entry.path) in files:
                found.add(entry.path)
    return found


def _outermost(paths) -> list[str]:
    paths = sorted(set(paths))
    return [p for p in paths if not any(p.startswith(o.rstrip("/") + "/") for o in paths)]


@functools.cache  # once per process: a setup probed again (bubblewrap failed) reuses it
def stage(entries: frozenset[str], folders: tuple[str, ...]) -> str:
    """A private folder (readable by the sandbox user, removed at exit) holding ``entries`` at
    their own paths below it: regular files as hard links or copies, links as the same links;
    with an empty folder where each of ``folders`` is bound over it."""
    staging = tempfile.mkdtemp(prefix="gc2po-sandbox-view-")
    atexit.register(shutil.rmtree, staging, ignore_errors=True)
    os.chmod(staging, 0o755)
    for path in sorted(entries):
        target = staging + path
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        if os.path.islink(path):
            os.symlink(os.readlink(path), target)
            continue
        try:
            os.link(path, target)
        except OSError:  # another file system, or a file this user may not link
            shutil.copy2(path, target)
    for folder in folders:
        os.makedirs(staging + folder, mode=0o755, exist_ok=True)
    return staging


def read_only_view(
    interpreter: str, paths: list[str], mapped: list[str]
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...], tuple[str, ...]]:
    """(``(host path, sandbox path)`` bound read-only, parents first; ``(target, link)``
    symlinks as on the host; folders covered by an empty one): the interpreter's module
    directories (``paths``) less the installed packages in them, and the interpreter and the
    files a trial run mapped (``mapped``: shared objects, locale) outside them, each under every
    name the loader uses, staged (``stage``) and bound by their folders."""
    folders = _outermost(os.path.realpath(p) for p in paths)
    inside = tuple(f.rstrip("/") + "/" for f in folders)
    files = {os.path.realpath(f) for f in [interpreter, *mapped] if os.path.isfile(f)}
    entries = {f for f in _names_of(files) if not f.startswith(inside)}
    staged = _outermost(os.path.dirname(f) for f in entries)
    covered = tuple(f for f in folders if f.startswith(tuple(d + "/" for d in staged)))
    staging = stage(frozenset(entries), covered)
    binds = sorted(
        [(staging + d, d) for d in staged] + [(f, f) for f in folders], key=lambda b: b[1]
    )
    symlinks = []
    for top in ("/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(top):
            symlinks.append((os.readlink(top), top))
    hidden = [os.path.join(f, name) for f in folders for name in PACKAGE_DIRS]
    hidden = [path for path in hidden if os.path.isdir(path) and not os.path.islink(path)]
    return tuple(binds), tuple(symlinks), tuple(hidden)


def view_files(binds, hidden: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Every regular file of the view (``binds``: ``(host path, sandbox path)``): what the page
    cache must hold."""
    found = []
    for path, _ in binds:
        if os.path.isfile(path):
            found.append(os.path.realpath(path))
            continue
        for root, dirs, names in os.walk(path):
            dirs[:] = [d for d in dirs if os.path.join(root, d) not in hidden]
            found += [os.path.join(root, name) for name in names]
    return tuple(sorted({f for f in found if os.path.isfile(f) and not os.path.islink(f)}))


def eviction_sources(
    cgroup_root: str = "/sys/fs/cgroup", own: str = "/proc/self/cgroup"
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Where to read eviction counters on this machine: /proc/vmstat and the grader's own memory
    cgroup (v2: reclaimed pages; v1: times its limit was hit)."""
    sources = [GLOBAL_EVICTIONS]
    try:
        with open(own) as handle:
            lines = [line.rstrip("\n").split(":", 2) for line in handle]
    except OSError:
        lines = []
    for _, controllers, path in (line for line in lines if len(line) == 3):
        if controllers == "":
            sources.append((f"{cgroup_root}{path.rstrip('/')}/memory.stat", ("pgsteal",)))
        elif "memory" in controllers.split(","):
            sources.append((f"{cgroup_root}/memory{path.rstrip('/')}/memory.failcnt", ("",)))
    return tuple((path, prefixes) for path, prefixes in sources if os.path.isfile(path))


def eviction_count(sources=(GLOBAL_EVICTIONS,)) -> int | None:
    """The sum of the eviction counters of ``sources``, or None where one cannot be read."""
    total = 0
    try:
        for path, prefixes in sources:
            with open(path) as handle:
                for line in handle:
                    fields = line.split()  # "name value", or a lone value (memory.failcnt)
                    name, value = ("", fields[0]) if len(fields) == 1 else fields[:2]
                    if name.startswith(prefixes):
                        total += int(value)
    except (OSError, ValueError):
        return None
    return total


def read_whole(files: tuple[str, ...]) -> int:
    """Read every file to its end (so every page is cached); the bytes read."""
    buffer, total = bytearray(1 << 20), 0
    for path in files:
        try:
            with open(path, "rb", buffering=0) as handle:
                while size := handle.readinto(buffer):
                    total += size
        except OSError:
            pass  # gone or unreadable: the sample cannot read it either
    return total


class PageCacheWarmth:
    """Keeps the view's pages cached: read them all before the first sample, then again before
    any sample after the kernel dropped page cache (an unknown count reads them every time)."""

    def __init__(self, files: tuple[str, ...], sources=(GLOBAL_EVICTIONS,)):
        self.files, self.counter = files, lambda: eviction_count(sources)
        self.seen: int | None = None
        self.lock = threading.Lock()

    def ensure(self) -> bool:
        """Warm the view if it may have lost pages; whether it read them."""
        with self.lock:
            now = self.counter()
            if now is not None and now == self.seen:
                return False
            read_whole(self.files)
            self.seen = now
            return True
