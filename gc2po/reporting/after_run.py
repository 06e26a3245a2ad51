"""What the workflow prints when a run ends well (the Snakefile's ``onsuccess``): where the
results are, the first rows of the run's Table 1, the docs page that holds the tables expected
from this config (the page whose tables are bound to ``results/<name>/``,
``gc2po.reporting.docs_check``) and the command that compares them with the run.
"""

from __future__ import annotations

from pathlib import Path

from gc2po.reporting.docs_check import bound_tables

EXCERPT_ROWS = 2  # table rows shown after the header: the base model and the first run
ARCHIVE = "archive"  # docs/archive/: history, no page of it is expected to match a run


def expected_page(name: str, docs: Path) -> Path | None:
    """The page of ``docs`` (a checkout's docs/ folder; docs/archive/ left out) with the most
    tables bound to ``results/<name>/``, None when no page has one."""
    counts = {}
    for page in sorted(docs.rglob("*.md")):
        if ARCHIVE in page.relative_to(docs).parts:
            continue
        bound = [t for t in bound_tables(page.read_text()) if t.results_file.split("/")[1] == name]
        if bound:
            counts[page] = len(bound)
    return max(counts, key=counts.get) if counts else None


def excerpt(table: Path, rows: int = EXCERPT_ROWS) -> list[str]:
    """The title line, the header and the first ``rows`` rows of a results Markdown table."""
    lines = table.read_text().splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if first is None:
        return []
    title = [line for line in lines[:first] if line.strip()][-1:]
    return title + lines[first : first + 2 + rows]


def message(name: str, results: Path, docs: Path, shown_docs: str = "docs") -> str:
    """The lines printed after a successful run of the config named ``name``, whose outputs are
    under ``results`` (``results/<name>``); ``docs``: the checkout's docs/ folder, shown as
    ``shown_docs``."""
    lines = [
        f"gc2po: the results of config {name!r} are in {results}/ (tables/, figures/); "
        "`snakemake --report report.html` (with the same --configfile) gathers them in one file.",
    ]
    table = results / "tables" / "table1.md"
    if table.is_file():
        lines += [f"{table}:", *excerpt(table)]
    page = expected_page(name, docs)
    if page is None:
        lines.append(
            f"No page of {shown_docs}/ holds this config's tables; "
            f"{shown_docs}/results.md holds the study's."
        )
    else:
        shown = f"{shown_docs}/{page.relative_to(docs).as_posix()}"
        lines.append(
            f"The tables expected from this config are in {shown}; compare them with this run: "
            f"python -m gc2po.reporting.docs_check {shown}"
        )
    return "\n".join(lines)
