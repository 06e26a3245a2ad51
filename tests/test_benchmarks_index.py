"""benchmarks/README.md indexes every script under benchmarks/: each is listed once, under the
folder it sits in, and the page a row names as where its figures are prints the script's path
(the archive's pages, written before the scripts had folders: its name)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
# | `training/step_time.py` | what it measures | [section](../docs/page.md#anchor) or no page yet |
ROW = re.compile(r"^\| `(\w+)/(\w+\.py)` \|[^|]+\| (.+) \|$", re.MULTILINE)
LINK = re.compile(r"\]\(\.\./([^)#]+)(?:#[^)]*)?\)")


def index_rows(text: str) -> list[tuple[str, str, str]]:
    """(folder, script, where) of every row of the index's tables."""
    return ROW.findall(text)


def scripts() -> list[str]:
    """Every script below benchmarks/ as folder/name.py (the shared ``_`` modules apart)."""
    return sorted(
        str(p.relative_to(BENCHMARKS))
        for p in BENCHMARKS.glob("*/*.py")
        if not p.name.startswith("_")
    )


def row_problems(rows: list[tuple[str, str, str]]) -> list[str]:
    """Rows whose linked page does not name the script (``no page yet`` links none)."""
    problems = []
    for folder, script, where in rows:
        pages = LINK.findall(where)
        if not pages and where != "no page yet":
            problems.append(f"{folder}/{script}: neither a page nor 'no page yet': {where!r}")
        for page in pages:
            text = (ROOT / page).read_text()
            archived = page.startswith("docs/archive/")
            if (script if archived else f"benchmarks/{folder}/{script}") not in text:
                problems.append(f"{folder}/{script}: {page} does not name it")
    return problems


def test_every_script_sits_in_a_topic_folder_and_is_listed_once():
    assert not [p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_")]
    rows = index_rows((BENCHMARKS / "README.md").read_text())
    assert sorted(f"{folder}/{script}" for folder, script, _ in rows) == scripts()


def test_the_page_a_row_names_prints_the_script():
    problems = row_problems(index_rows((BENCHMARKS / "README.md").read_text()))
    assert not problems, "\n".join(problems)


def test_a_row_whose_page_does_not_name_the_script_is_a_problem():
    rows = index_rows(
        "| `gpu/gpu_smoke.py` | x | [Tables](../docs/measurements-workflow.md#tables) |\n"
        "| `gpu/gpu_check.py` | x | somewhere |\n"
        "| `workflow/cross_machine.py` | x | no page yet |"
    )
    assert row_problems(rows) == [
        "gpu/gpu_smoke.py: docs/measurements-workflow.md does not name it",
        "gpu/gpu_check.py: neither a page nor 'no page yet': 'somewhere'",
    ]
