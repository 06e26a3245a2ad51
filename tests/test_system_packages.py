"""Every external program that the code or the tests run is installed by the project's own files:
a Debian package of system-packages.txt, or a console script of a Python dependency."""

from __future__ import annotations

import ast
import importlib.metadata
from pathlib import Path

import pytest

from ci.system_packages import package_for, read_list

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ["gc2po", "tests", "workflow", "benchmarks", "ci", "Snakefile"]
RUNNERS = {"run", "Popen", "check_output", "check_call", "call", "which"}
# apt-get installs the list itself (Debian's essential set has it).
ESSENTIAL = {"apt-get"}


def _python_sources() -> list[Path]:
    files = []
    for name in SCANNED:
        path = ROOT / name
        files += (
            [path] if path.is_file() else sorted(path.rglob("*.py")) + sorted(path.rglob("*.smk"))
        )
    return files


def _runner_name(func: ast.expr) -> str:
    """``run`` for ``subprocess.run(...)``, ``which`` for ``shutil.which(...)``; a local helper
    that happens to be called ``run`` (and prepends python -m) is not a runner."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.attr if func.value.id in ("subprocess", "shutil") else ""
    return (
        getattr(func, "id", "")
        if getattr(func, "id", "") in ("Popen", "which", "check_output")
        else ""
    )


def _program_names(tree: ast.AST) -> set[str]:
    """Literal program names: the first element of a literal argv given to subprocess, an argument
    of shutil.which, and the commands of {command: package} dicts given to ensure_debian_packages
    or named *_PACKAGES."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = _runner_name(node.func)
            first = node.args[0] if node.args else None
            if func in RUNNERS and isinstance(first, (ast.List, ast.Tuple)) and first.elts:
                first = first.elts[0]
            if func in RUNNERS and isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
            if func == "ensure_debian_packages" and isinstance(first, ast.Dict):
                names |= {k.value for k in first.keys if isinstance(k, ast.Constant)}
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            if any(isinstance(t, ast.Name) and t.id.endswith("_PACKAGES") for t in node.targets):
                names |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    return names


def _called_programs() -> dict[str, str]:
    found = {}
    for path in _python_sources():
        if path.suffix != ".py":
            continue  # .smk rules call scripts (script:), not programs; checked below
        for name in _program_names(ast.parse(path.read_text(), filename=str(path))):
            found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def _console_scripts() -> set[str]:
    return {ep.name for ep in importlib.metadata.entry_points(group="console_scripts")}


def test_the_scan_sees_the_programs_we_know_are_called():
    found = _called_programs()
    for program in (
        "bwrap",
        "setpriv",
        "git",
        "pdflatex",
        "slurmctld",
        "munged",
        "scancel",
        "sleep",
    ):
        assert program in found, program


def test_every_called_program_is_installed_by_the_project():
    scripts = _console_scripts()
    unlisted = {
        name: where
        for name, where in _called_programs().items()
        if package_for(name) is None and name not in ESSENTIAL and name not in scripts
    }
    assert not unlisted, (
        f"programs called but not in system-packages.txt (or a Python dependency): {unlisted}"
    )


def test_workflow_shell_rules_run_only_python():
    """Rules use ``script:``; the one ``shell:`` rule (train) runs the command that
    common.smk's train_command builds, which starts with python3 (gc2po train, or accelerate
    launch as a Python module), so it calls no program this scan cannot see."""
    shells = [
        (path.name, line.strip())
        for path in sorted((ROOT / "workflow" / "rules").glob("*.smk"))
        for line in path.read_text().split("\n    shell:")[1:]
    ]
    assert [name for name, _ in shells] == ["train.smk"]
    assert shells[0][1].startswith('"OMP_NUM_THREADS={threads} {params.command} > {log}')
    common = (ROOT / "workflow" / "rules" / "common.smk").read_text()
    assert 'command = ["python3", "-m", "gc2po.cli", "train"' in common
    assert 'launcher_command(LAUNCHER, input.run_config, python="python3")' in common


def test_every_listed_package_shows_how_it_is_checked():
    entries = read_list()
    assert {e.package for e in entries} >= {
        "bubblewrap",
        "slurm-wlm",
        "munge",
        "texlive-latex-base",
    }
    for entry in entries:
        assert entry.provides and all(p.startswith("/") or "/" not in p for p in entry.provides)


def test_a_line_without_a_command_is_refused_naming_the_line(tmp_path):
    bad = tmp_path / "list.txt"
    bad.write_text("# comment\nbubblewrap bwrap\nmunge   # no command\n")
    with pytest.raises(ValueError, match=r"list.txt:3: 'munge   # no command' names no command"):
        read_list(bad)


def test_after_the_session_start_nothing_listed_is_missing():
    """tests/conftest.py installed the list when this session started (CI is root with apt)."""
    missing = {e.package: e.missing() for e in read_list() if e.missing()}
    assert not missing, missing
