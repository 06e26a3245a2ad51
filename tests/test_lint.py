"""The code keeps the project's lint and format rules (pyproject.toml: pyflakes, pycodestyle
with lines of at most 100 characters, import order, bugbear, pyupgrade; ruff's formatter)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = ["gc2po", "tests", "benchmarks", "workflow/scripts", "ci"]


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_ruff_check_is_clean():
    out = ruff("check", *CODE)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_ruff_format_is_clean():
    out = ruff("format", "--check", *CODE)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
