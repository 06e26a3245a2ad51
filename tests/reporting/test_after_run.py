"""gc2po.reporting.after_run: the lines a run prints when it ends well name its results folder,
show the first rows of its Table 1, and name the docs page whose tables are bound to its results
with the command that compares them (none for a config no page shows)."""

from __future__ import annotations

from pathlib import Path

from gc2po.reporting.after_run import excerpt, expected_page, message

ROOT = Path(__file__).resolve().parents[2]
TABLE1 = """### Pass@1 (%) per benchmark

| Model | Test (ID) | Average |
|---|---|---|
| testbed (base) | 26.3 [23.4, 29.3] | 26.3 |
| + GRPO | 44.9 [40.3, 49.8] | 44.9 |
| + GC2PO (paper) | 40.0 [38.0, 42.0] | 40.0 |

Cells: ...
"""


def docs_folder(tmp_path: Path) -> Path:
    """A docs/ folder: one page binds two tables of results/testbed, another one, the archive
    three (history: never the expected page)."""
    docs = tmp_path / "docs"
    (docs / "archive").mkdir(parents=True)
    bound = "From `results/testbed/tables/{}.md`:\n\n| a |\n|---|\n| 1 |\n\n"
    (docs / "testbed.md").write_text(bound.format("table1") + bound.format("mechanism"))
    (docs / "results.md").write_text(bound.format("table1") + "An unbound table:\n\n| a |\n")
    (docs / "archive" / "old.md").write_text(bound.format("table1") * 3)
    return docs


def test_the_expected_page_binds_the_most_tables_of_the_run_and_is_not_history(tmp_path):
    docs = docs_folder(tmp_path)
    assert expected_page("testbed", docs) == docs / "testbed.md"
    assert expected_page("ci", docs) is None


def test_the_message_names_the_results_the_table_and_the_page(tmp_path):
    results = tmp_path / "results" / "testbed"
    (results / "tables").mkdir(parents=True)
    (results / "tables" / "table1.md").write_text(TABLE1)
    lines = message("testbed", results, docs_folder(tmp_path), "docs").splitlines()
    assert lines[0].startswith(f"gc2po: the results of config 'testbed' are in {results}/")
    assert lines[1:6] == [
        f"{results / 'tables' / 'table1.md'}:",
        "### Pass@1 (%) per benchmark",
        "| Model | Test (ID) | Average |",
        "|---|---|---|",
        "| testbed (base) | 26.3 [23.4, 29.3] | 26.3 |",
    ]
    assert lines[6] == "| + GRPO | 44.9 [40.3, 49.8] | 44.9 |" and len(lines) == 8
    assert lines[-1] == (
        "The tables expected from this config are in docs/testbed.md; compare them with this "
        "run: python -m gc2po.reporting.docs_check docs/testbed.md"
    )


def test_a_run_no_page_shows_and_a_target_without_table1_say_so(tmp_path):
    lines = message("ci", tmp_path / "results" / "ci", docs_folder(tmp_path), "docs")
    assert "table1.md" not in lines
    assert lines.splitlines()[-1].startswith("No page of docs/ holds this config's tables")


def test_the_defaults_expected_page_is_the_testbed_page():
    """The repository's own docs: the default (name testbed) is shown on docs/testbed.md."""
    assert expected_page("testbed", ROOT / "docs") == ROOT / "docs" / "testbed.md"


def test_an_excerpt_of_a_file_without_table_is_empty(tmp_path):
    (tmp_path / "t.md").write_text("no table here\n")
    assert excerpt(tmp_path / "t.md") == []
