"""Every external program that the code or the tests run is installed by the project's own files:
a Debian package of system-packages.txt, or a console script of a Python dependency; the tests
that run one name its package (``system`` marker), and a run installs only what its selected
tests name (tests/system_packages.py)."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
from pathlib import Path

import pytest

from ci.system_packages import package_for, read_list
from tests.conftest import UNAVAILABLE
from tests.system_packages import MARKER, marked_packages

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ["gc2po", "tests", "workflow", "benchmarks", "ci", "Snakefile"]
RUNNERS = {"run", "Popen", "check_output", "check_call", "call", "which"}
# apt-get installs the list itself (Debian's essential set has it).
ESSENTIAL = {"apt-get"}
# the NVIDIA driver's tool: on a GPU machine it comes with the driver, which no Debian package of
# the project installs; only the GPU check calls it, and only when torch sees a GPU
GPU_DRIVER = {"nvidia-smi": "benchmarks/gpu/gpu_check.py"}
# conda is the cluster user's environment manager (`--sdm conda` builds workflow/envs/*.yaml);
# no file of the project installs it, and the README row test only asks whether it is there
PROBED_ONLY = {"conda": "tests/test_readme_rows.py"}


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
    of shutil.which, and the commands of {command: package} dicts named *_PACKAGES."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = _runner_name(node.func)
            first = node.args[0] if node.args else None
            if func in RUNNERS and isinstance(first, (ast.List, ast.Tuple)) and first.elts:
                first = first.elts[0]
            if func in RUNNERS and isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
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
        if package_for(name) is None
        and name not in ESSENTIAL
        and name not in scripts
        and GPU_DRIVER.get(name) != where
        and PROBED_ONLY.get(name) != where
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


def test_the_selected_tests_packages_are_there_or_their_tests_skip(request):
    """This session's selection: every package its tests name was installed at collection, or
    is recorded with the reason those tests skip (not root, no apt-get)."""
    named = set().union(*(marked_packages(item) for item in request.session.items))
    unavailable = request.config.stash[UNAVAILABLE]
    missing = {e.package for e in read_list() if e.package in named and e.missing()}
    assert missing == set(unavailable), (missing, unavailable)


# --- the markers agree with the scan ---------------------------------------------------------


def _test_modules() -> list[Path]:
    return sorted((ROOT / "tests").rglob("test_*.py"))


def _imported_test_helpers(path: Path) -> list[Path]:
    """The files of tests/ that ``path`` imports (``from tests.x.y import ...``), one level."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests."):
            found.append(ROOT / (node.module.replace(".", "/") + ".py"))
    return [f for f in found if f.is_file()]


def _scanned_packages(path: Path) -> dict[str, str]:
    """{package: program} for the listed programs that ``path`` and the test helpers it imports
    run (the scan above)."""
    programs = set()
    for source in [path, *_imported_test_helpers(path)]:
        programs |= _program_names(ast.parse(source.read_text()))
    return {package_for(p): p for p in sorted(programs) if package_for(p) is not None}


def _module_markers(path: Path) -> set[str]:
    """The packages named by the ``system`` markers of a test module: its ``pytestmark`` and
    those of its test functions and classes."""
    module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
    holders = [module] + [
        value for name, value in vars(module).items() if name.startswith(("test_", "Test"))
    ]
    named = set()
    for holder in holders:
        marks = getattr(holder, "pytestmark", [])
        for mark in marks if isinstance(marks, list) else [marks]:
            mark = getattr(mark, "mark", mark)  # a MarkDecorator (pytestmark = ...) or a Mark
            if mark.name == MARKER:
                named |= set(mark.args)
    return named


def test_a_test_file_that_runs_a_listed_program_names_its_package():
    """The scan's programs, per test file (and the tests/ helpers it imports), against the file's
    ``system`` markers; the conftest's guard checks each test while it runs."""
    checked, unnamed = 0, {}
    for path in _test_modules():
        wanted = _scanned_packages(path)
        if wanted:
            checked += 1
            named = _module_markers(path)
            lacking = {pkg: prog for pkg, prog in wanted.items() if pkg not in named}
            if lacking:
                unnamed[str(path.relative_to(ROOT))] = lacking
    assert checked >= 4  # the hostile-sample and hardening, LaTeX and SLURM tests
    assert not unnamed, f"test files that run these programs without naming the package: {unnamed}"


def test_the_whole_suite_names_every_listed_package():
    """So ``python3 -m pytest -q`` on a fresh machine installs the whole list, as before."""
    named = set().union(
        *(_module_markers(p) for p in _test_modules() if f"mark.{MARKER}" in p.read_text())
    )
    assert named == {e.package for e in read_list()}
