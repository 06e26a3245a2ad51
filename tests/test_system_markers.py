"""The ``system`` marker (tests/system_packages.py): a run installs the Debian packages its
selected tests name and no others, a plain unit test never makes apt-get run, and a test that
starts a listed package's program without naming it fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tests.system_packages as system_packages
from ci.system_packages import Entry, read_list
from tests.system_packages import ProgramGuard, prepare, program_package

ROOT = Path(__file__).resolve().parents[1]
SANDBOX = {"bubblewrap", "util-linux", "python3-minimal"}


class FakeItem:
    """What prepare and the guard read of a pytest item: its id and its markers."""

    def __init__(self, nodeid: str, *packages: str):
        self.nodeid = nodeid
        self.marks = [pytest.mark.system(*packages).mark] if packages else []

    def iter_markers(self, name):
        return iter([m for m in self.marks if m.name == name])


def packages(entries: list[Entry]) -> list[str]:
    return [e.package for e in entries]


@pytest.fixture
def as_root_without_packages(monkeypatch):
    """Every listed package missing, installing possible (root, apt-get): the installer records
    what it is asked for instead of running apt-get."""
    asked: list[list[str]] = []
    monkeypatch.setattr(Entry, "missing", lambda self: list(self.provides))
    monkeypatch.setattr(system_packages, "cannot_install_reason", lambda: None)
    monkeypatch.setattr(
        system_packages, "install", lambda es: asked.append([e.package for e in es])
    )
    return asked


def test_only_the_named_packages_are_installed(as_root_without_packages):
    items = [FakeItem("a"), FakeItem("b", "bubblewrap"), FakeItem("c", "bubblewrap", "git")]
    assert prepare(items) == {}
    assert as_root_without_packages == [["bubblewrap", "git"]]


def test_tests_that_name_no_package_install_nothing(as_root_without_packages):
    assert prepare([FakeItem("a"), FakeItem("b")]) == {}
    assert as_root_without_packages == []


def test_without_root_nothing_is_installed_and_the_reason_is_kept(
    as_root_without_packages, monkeypatch
):
    monkeypatch.setattr(system_packages, "cannot_install_reason", lambda: "not root")
    reasons = prepare([FakeItem("a", "munge")])
    assert list(reasons) == ["munge"] and "not root" in reasons["munge"]
    assert as_root_without_packages == []


def test_a_marker_naming_an_unlisted_package_fails_naming_the_test():
    with pytest.raises(pytest.UsageError, match=r"tests/x.py::t: .*\['no-such-package'\]"):
        prepare([FakeItem("tests/x.py::t", "bubblewrap", "no-such-package")], read_list())


class StopAfterCollection:
    """Collect (and prepare) as a real run does, then run no test."""

    def pytest_runtestloop(self, session):
        return True


def inner_run(monkeypatch, *args: str, plugin) -> int:
    """``pytest -q ARGS`` in this process with the project's own plugins only (third-party ones
    installed here may start programs of their own: pytest-benchmark runs git)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytest.main(
        ["-q", "-p", "no:cacheprovider", "-p", "pytest_timeout", *args], plugins=[plugin]
    )


def test_pytest_tests_core_installs_nothing_where_every_package_is_missing(
    as_root_without_packages, monkeypatch
):
    """``pytest tests/core`` as root on a machine without the packages: the session's real
    collection of tests/core, then the conftest's preparation, asks the installer for nothing;
    the sandbox tests' selection asks for exactly their packages."""
    stop = StopAfterCollection()
    assert inner_run(monkeypatch, str(ROOT / "tests" / "core"), plugin=stop) == 0
    assert as_root_without_packages == []
    sandbox_tests = str(ROOT / "tests" / "evaluation" / "test_sandbox.py")
    assert inner_run(monkeypatch, sandbox_tests, plugin=stop) == 0
    assert [set(asked) for asked in as_root_without_packages] == [SANDBOX]


def test_program_package_names_the_listed_package_of_a_started_program():
    entries = read_list()
    assert program_package(None, ["bwrap", "--ro-bind"], entries) == "bubblewrap"
    assert program_package("/usr/bin/setpriv", ["setpriv"], entries) == "util-linux"
    assert program_package(None, "pdflatex", entries) == "texlive-latex-base"
    assert program_package(None, [b"/usr/bin/git", b"status"], entries) == "git"
    assert program_package(None, ["ruff", "check"], entries) is None  # a Python dependency's
    assert program_package(sys.executable, [sys.executable, "-c", "1"], entries) is None


@pytest.mark.system("coreutils")  # this test starts sleep itself
def test_the_guard_reports_a_started_program_that_is_not_named():
    guard = ProgramGuard()
    guard.start()
    subprocess.run(["sleep", "0"], check=True)
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert guard.stop(FakeItem("t")) == {"coreutils"}
    guard.start()
    subprocess.run(["sleep", "0"], check=True)
    assert guard.stop(FakeItem("t", "coreutils")) == set()
    assert guard.started is None  # outside a test phase nothing is recorded


class Reports:
    def __init__(self):
        self.failed: dict[str, str] = {}
        self.passed: list[str] = []

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed[report.nodeid.split("::")[-1]] = str(report.longrepr)
        elif report.when == "call":
            self.passed.append(report.nodeid.split("::")[-1])


@pytest.mark.system("coreutils")  # the inner tests start sleep
def test_a_test_that_starts_an_unnamed_program_fails_naming_the_package(tmp_path, monkeypatch):
    (tmp_path / "test_inner.py").write_text(
        "import subprocess\nimport pytest\n\n\n"
        "def test_unmarked():\n    subprocess.run(['sleep', '0'], check=True)\n\n\n"
        "@pytest.mark.system('coreutils')\n"
        "def test_marked():\n    subprocess.run(['sleep', '0'], check=True)\n"
    )
    reports = Reports()
    inner = ["-p", "tests.conftest", "--rootdir", str(tmp_path), str(tmp_path / "test_inner.py")]
    inner_run(monkeypatch, *inner, plugin=reports)
    assert reports.passed == ["test_marked"]
    assert list(reports.failed) == ["test_unmarked"]
    assert "'coreutils'" in reports.failed["test_unmarked"]
    assert "add @pytest.mark.system('coreutils')" in reports.failed["test_unmarked"]
