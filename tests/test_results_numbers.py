"""Every number the results pages and the README's headline quote comes from a table a docs page
binds to a workflow output (``gc2po.reporting.docs_check``), or from a command's output pasted in
a code block of the same page: a number typed into prose with no table behind it fails, naming
the page, the line and the number."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gc2po.reporting.docs_check import bound_tables

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# pages whose prose reads results: the current results pages and the README's headline
RESULTS_PAGES = sorted(DOCS.glob("results*.md"))
HEADLINE = re.compile(r"<!-- headline.*?-->(.*?)<!-- /headline -->", re.DOTALL)
NUMBER = re.compile(r"(?<![\w.])[+-]?\d+\.\d+(?![\w.])")
FENCE = re.compile(r"^\s*```")


def normal(token: str) -> str:
    return token.lstrip("+")


def numbers(text: str) -> set[str]:
    return {normal(t) for t in NUMBER.findall(text)}


def bound_numbers() -> set[str]:
    """Every number in a cell of a bound table on any current docs page (the archive is
    history: not maintained, not counted)."""
    found: set[str] = set()
    for page in DOCS.rglob("*.md"):
        if "archive" in page.parts:
            continue
        for table in bound_tables(page.read_text()):
            for row in table.rows:
                for cell in row:
                    found |= numbers(cell)
    return found


def prose_and_code(text: str) -> tuple[list[tuple[int, str]], set[str]]:
    """(numbered prose lines: not table rows, not code, inline code removed; numbers of the
    page's code blocks)."""
    prose, code, fenced = [], set(), False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or line.startswith("    "):
            code |= numbers(line)
        elif not line.lstrip().startswith("|"):
            prose.append((number, re.sub(r"`[^`]*`", "", line)))
    return prose, code


def unbound(text: str, bound: set[str]) -> list[str]:
    prose, code = prose_and_code(text)
    return [
        f"line {number}: {token}"
        for number, line in prose
        for token in sorted(numbers(line) - bound - code)
    ]


@pytest.fixture(scope="module")
def bound() -> set[str]:
    return bound_numbers()


@pytest.mark.parametrize("page", RESULTS_PAGES, ids=lambda p: p.name)
def test_every_number_on_a_results_page_has_a_bound_table_behind_it(page, bound):
    assert unbound(page.read_text(), bound) == [], page.name


def test_every_number_of_the_readme_headline_has_a_bound_table_behind_it(bound):
    (headline,) = HEADLINE.findall((ROOT / "README.md").read_text())
    assert unbound(headline, bound) == []


def sentences(text: str) -> list[str]:
    """The sentences of a Markdown paragraph: link targets and code left out, split after a
    full stop, question or exclamation mark that a capital or a link follows."""
    plain = re.sub(r"\]\([^)]*\)", "]", re.sub(r"`[^`]*`", "code", text)).strip()
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\[])", plain) if s]


def test_the_readme_headline_is_short_and_links_its_tables():
    """At most three sentences and 900 characters with its links; every sentence links a
    results page."""
    (headline,) = HEADLINE.findall((ROOT / "README.md").read_text())
    headline = headline.split("-->", 1)[-1].strip()
    assert len(headline) <= 900, len(headline)
    found = sentences(headline)
    assert 1 <= len(found) <= 3, found
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z\[])", headline):
        assert re.search(r"\]\(docs/results[\w-]*\.md", sentence), sentence


def test_sentences_are_counted_past_links_and_code():
    text = "R_cf (`a.b`) moved [it](docs/x.md#a.b) +1.0. Then. [Links](y.md) too."
    assert sentences(text) == ["R_cf (code) moved [it] +1.0.", "Then.", "[Links] too."]


def test_the_scan_flags_a_typed_number_and_passes_a_bound_or_pasted_one():
    bound = {"51.4", "46.7"}
    page = "GRPO gains +51.4 [+46.7, +56.0].\n\n```\nrho 0.067\n```\nrho 0.067 here.\n"
    assert unbound(page, bound) == ["line 1: 56.0"]
