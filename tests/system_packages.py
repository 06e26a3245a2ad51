"""The Debian packages of system-packages.txt that tests use, declared with the ``system`` marker
and installed for the selected tests only.

    pytestmark = pytest.mark.system("bubblewrap", "util-linux")  # a module, or on a test/class

tests/conftest.py calls :func:`prepare` once the selection is known (paths, ``-k``, ``-m``): the
packages that the selected tests name and that are missing are installed (root with apt-get);
where that is impossible (not root, no apt-get) the tests that name them skip and say why. A test
that names no package never causes apt-get to run. Two checks keep the markers honest: while a
test's setup and body run, :class:`ProgramGuard` fails it when it starts a listed package's
program that its markers do not name, and tests/test_system_packages.py checks the markers
against the programs each test file calls.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

import pytest

from ci.system_packages import Entry, cannot_install_reason, install, package_for, read_list

MARKER = "system"
MARKER_HELP = (
    f"{MARKER}(*packages): Debian packages of system-packages.txt the test runs a program of "
    "(installed for the selected tests only; tests/system_packages.py)"
)


def marked_packages(item: pytest.Item) -> set[str]:
    """The packages named by the ``system`` markers of a test, its class and its module."""
    return {name for mark in item.iter_markers(MARKER) for name in mark.args}


def check_markers(items: Iterable[pytest.Item], entries: list[Entry]) -> None:
    """Every marker names a package of the list; raises naming the test and the name."""
    listed = {e.package for e in entries}
    for item in items:
        unknown = sorted(marked_packages(item) - listed)
        if unknown:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.{MARKER} names {unknown}, which "
                f"system-packages.txt does not list (listed: {sorted(listed)})"
            )


def prepare(items: Iterable[pytest.Item], entries: list[Entry] | None = None) -> dict[str, str]:
    """Install the missing packages that ``items`` name (ci.system_packages.install); return
    {package: why it is missing and cannot be installed here} for the tests that name one to
    skip with (empty when all are there)."""
    items = list(items)
    entries = read_list() if entries is None else entries
    check_markers(items, entries)
    wanted = set().union(*(marked_packages(item) for item in items))
    missing = [e for e in entries if e.package in wanted and e.missing()]
    if not missing:
        return {}
    reason = cannot_install_reason()
    if reason:
        return {
            e.package: f"needs the Debian package {e.package} (missing: {e.missing()}); "
            f"{reason}, so it cannot be installed here"
            for e in missing
        }
    install(missing)
    return {}


def program_package(executable, args, entries: list[Entry]) -> str | None:
    """The listed package whose program a ``subprocess.Popen`` audit event (its ``executable``
    and ``args``) starts, or None. The interpreter running the tests is no package's program
    here, even where it is /usr/bin/python3: a test may always start it."""
    if isinstance(args, (str, bytes, os.PathLike)):
        args = [args]
    program = executable if executable is not None else (args[0] if args else None)
    if program is None:
        return None
    program = os.fsdecode(program)
    if os.path.realpath(program) == os.path.realpath(sys.executable):
        return None
    return package_for(program, entries) or package_for(os.path.basename(program), entries)


class ProgramGuard:
    """Records, while a test's setup or body runs, the listed packages whose programs were started
    in this process (CPython's ``subprocess.Popen`` audit event): a program a test starts must be
    named by its ``system`` marker, or a fresh machine would lack it when that test runs alone."""

    def __init__(self):
        self.entries = read_list()
        self.started: set[str] | None = None  # None: outside a test's setup and body
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        if event == "subprocess.Popen" and self.started is not None:
            package = program_package(args[0], args[1], self.entries)
            if package is not None:
                self.started.add(package)

    def start(self) -> None:
        self.started = set()

    def stop(self, item: pytest.Item) -> set[str]:
        """The packages whose programs were started since :meth:`start` that ``item``'s markers
        do not name."""
        started, self.started = self.started or set(), None
        return started - marked_packages(item)
