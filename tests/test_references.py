"""What the repository says points where a reader can follow: no line of the docs, the package,
the workflow or the configs names a file that is not in the repository (the project's private
SPEC, BASELINES and RESEARCH notes, anything under ``../shared``) or an issue number of the
project's tracker. What such a reference stood for is said in place or in a docs page; an
upstream bug is a full URL (``https://github.com/pytorch/pytorch/issues/190489``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("README.md", "CITATION.cff", ".snakemake-workflow-catalog.yml", "docs", "gc2po",
           "workflow", "config", "benchmarks", "data/benchmarks/README.md")  # fmt: skip
TEXT_SUFFIXES = {".md", ".py", ".yaml", ".yml", ".json", ".smk", ".rst", ".txt", ".cff", ".toml"}

# each: what it catches, the pattern
REFERENCES = {
    "a private note": re.compile(r"\b(?:SPEC|BASELINES|RESEARCH)\b"),
    "a path outside the repository": re.compile(r"\.\./shared\b"),
    "an issue number": re.compile(
        r"\bissues?[ -]*#?\d+"  # issue 33, issues 31-34, issue-33, Issue #26
        r"|(?<![\w/&#-])#\d{1,2}\b(?![0-9a-fA-F])",  # #33 (not a colour #444, not owner/repo#1)
        re.IGNORECASE,
    ),
}


def scanned_files() -> list[Path]:
    files = []
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            files.append(path)
        else:
            files += sorted(
                p for p in path.rglob("*") if p.suffix in TEXT_SUFFIXES or p.name == "Snakefile"
            )
    return [p for p in files if "__pycache__" not in p.parts]


def references(text: str) -> list[tuple[int, str, str]]:
    """(line number, kind, the matched text) of every reference a reader cannot follow."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for kind, pattern in REFERENCES.items():
            found += [(number, kind, match[0]) for match in pattern.finditer(line)]
    return found


def test_the_scanned_places_exist():
    for name in SCANNED:
        assert (ROOT / name).exists(), name
    assert len(scanned_files()) > 100


def test_no_line_points_outside_the_repository_or_to_an_issue_number():
    problems = [
        f"{path.relative_to(ROOT)}:{number}: {kind}: {text!r}"
        for path in scanned_files()
        for number, kind, text in references(path.read_text())
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "line",
    [
        "as SPEC 2 says",
        "(BASELINES 5 ii)",
        "see RESEARCH.md section 1",
        "``../shared/RESEARCH.md``",
        "the control of issue 31",
        "issues 31-34",
        "Issue #26's hardening",
        "the issue-33 filter",
        "fixed in #33",
        "(#7)",
    ],
)
def test_the_scan_catches_a_reference(line):
    assert references(line), line


@pytest.mark.parametrize(
    "line",
    [
        "https://github.com/pytorch/pytorch/issues/190489",
        'colour="#444444"',
        "border: 2px solid #444",
        "pytorch/pytorch#190489",
        "SPECIAL_TOKENS and a spec of the rule",
        "no issue here",
        "# 3 comments",
    ],
)
def test_the_scan_passes_what_a_reader_can_follow(line):
    assert not references(line), references(line)
