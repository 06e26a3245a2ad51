"""A copy of the package, workflow and configs with a method module added, and Snakemake run from
that copy: what a user who adds a method file does (test_add_method.py, test_new_method.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COPIED = ["gc2po", "workflow", "config", "Snakefile"]  # what the workflow runs from
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


def copy_with_method(dest: Path, name: str, source: str) -> Path:
    """``COPIED`` into ``dest`` with ``source`` as ``gc2po/methods/<name>.py``; returns ``dest``."""
    for top in COPIED:
        path = ROOT / top
        if path.is_dir():
            shutil.copytree(path, dest / top, ignore=IGNORED)
        else:
            shutil.copy2(path, dest / top)
    (dest / "gc2po" / "methods" / f"{name}.py").write_text(source)
    return dest


def snakemake_command(
    tree: Path, work: Path, *args: str, configfiles: list[Path | str]
) -> list[str]:
    """``snakemake --cores 2`` of ``tree``'s Snakefile (a package copy, or the checkout) into
    ``work`` with ``configfiles`` (targets and flags in ``args``, before ``--configfile``, which
    takes every argument after it). The one command builder of the workflow tests that run
    Snakemake locally (conftest's ci run, test_resume, the package-copy tests)."""
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        "2",
        "-s",
        str(tree / "Snakefile"),
        "-d",
        str(work),
        *args,
        "--configfile",
        *map(str, configfiles),
    ]


def run_in_copy(
    copy: Path, command: list[str], timeout: float = 900
) -> subprocess.CompletedProcess:
    """``command`` with the copy's package (PYTHONPATH; `python -m` puts the working folder, the
    copy, first on sys.path), not the installed one nor this checkout's."""
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run(
        command, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout
    )
