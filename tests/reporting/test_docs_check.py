"""gc2po.reporting.docs_check: a docs table bound to a results file is compared row by row."""

from __future__ import annotations

import json

from gc2po.reporting.docs_check import (
    bound_tables,
    check_page,
    machine_digest,
    main,
    table_rows,
)

RESULT = """Pass@1 (%) per benchmark

| Model | Test (ID) |
|---|---|
| testbed (base) | 26.3 [23.4, 29.3] |
| + GRPO | 44.9 [40.3, 49.8] |

Cells: ...
"""


def results(tmp_path, machine=None):
    tables = tmp_path / "results" / "testbed" / "tables"
    tables.mkdir(parents=True)
    (tables / "table1.md").write_text(RESULT)
    if machine is not None:
        summary = tmp_path / "results" / "testbed" / "eval" / "b" / "base" / "seed0"
        summary.mkdir(parents=True)
        (summary / "test_id.jsonl.summary.json").write_text(json.dumps({"machine": machine}))
    return tmp_path


def page(tmp_path, body: str):
    path = tmp_path / "page.md"
    path.write_text(body)
    return path


DOC = """# Results

#### Pass@1 (`results/testbed/tables/table1.md`)

| Model | Test (ID) |
|---|---|
| testbed (base) | 26.3 [23.4, 29.3] |
| + GRPO | 44.9 [40.3, 49.8] |

An unbound table:

| a | b |
|---|---|
| 1 | 2 |
"""


def test_table_rows_drop_the_separator_and_strip_cells():
    assert table_rows(["| a |  b |", "|:---|---:|", "|1|2 |"]) == (("a", "b"), ("1", "2"))


def test_only_a_table_introduced_by_one_results_file_is_bound():
    tables = bound_tables(DOC)
    assert [(t.results_file, t.line, len(t.rows)) for t in tables] == [
        ("results/testbed/tables/table1.md", 5, 3)
    ]


def test_a_table_equal_to_its_file_passes(tmp_path):
    tables, differences, notes = check_page(page(tmp_path, DOC), results(tmp_path))
    assert (len(tables), differences, notes) == (1, [], [])


def test_a_changed_number_is_reported_with_its_row(tmp_path):
    doc = DOC.replace("44.9 [40.3, 49.8]", "44.9 [40.3, 49.9]")
    _, differences, _ = check_page(page(tmp_path, doc), results(tmp_path))
    assert len(differences) == 1
    assert "page.md:5: results/testbed/tables/table1.md: row 3 is" in differences[0]
    assert "49.9" in differences[0] and "49.8" in differences[0]


def test_a_missing_row_and_a_missing_file_are_reported(tmp_path):
    doc = DOC.replace("| + GRPO | 44.9 [40.3, 49.8] |\n", "")
    _, differences, _ = check_page(page(tmp_path, doc), results(tmp_path))
    assert differences == [
        f"{tmp_path / 'page.md'}:5: results/testbed/tables/table1.md: 2 rows, the file has 3"
    ]
    _, differences, _ = check_page(page(tmp_path, DOC), tmp_path / "elsewhere")
    assert differences[0].endswith(f"no such file under {tmp_path / 'elsewhere'}")


def test_results_of_another_machine_are_compared_by_shape_only(tmp_path):
    root = results(tmp_path, machine={"cpu": "other"})
    pinned = DOC.replace("# Results\n", "# Results\n<!-- machine: 0123456789abcdef -->\n")
    other_numbers = pinned.replace("44.9 [40.3, 49.8]", "41.0 [38.0, 44.0]")
    _, differences, notes = check_page(page(tmp_path, other_numbers), root)
    assert differences == [] and "shape only" in notes[0]
    fewer_rows = pinned.replace("| + GRPO | 44.9 [40.3, 49.8] |\n", "")
    _, differences, _ = check_page(page(tmp_path, fewer_rows), root)
    assert "rows or columns differ" in differences[0]
    # pinned to the machine that made them: numbers compared
    same = pinned.replace("0123456789abcdef", machine_digest({"cpu": "other"}))
    _, differences, _ = check_page(page(tmp_path, same.replace("49.8", "49.9")), root)
    assert "row 3" in differences[0]


def test_the_command_line_exits_1_on_a_difference(tmp_path, capsys):
    root = results(tmp_path)
    assert main([str(page(tmp_path, DOC)), "--root", str(root)]) == 0
    assert main([str(page(tmp_path, DOC.replace("26.3", "26.4"))), "--root", str(root)]) == 1
    assert "DIFFERS" in capsys.readouterr().out


def test_several_roots_are_searched_in_order(tmp_path):
    """Tables of two runs (two clones) checked in one call: each file found under its root."""
    default, study = results(tmp_path / "default"), tmp_path / "study"
    tables = study / "results" / "study" / "tables"
    tables.mkdir(parents=True)
    (tables / "table1.md").write_text(RESULT.replace("44.9", "45.0"))
    doc = (
        DOC
        + "\nFrom `results/study/tables/table1.md`:\n\n"
        + "\n".join(
            line for line in RESULT.replace("44.9", "45.0").splitlines() if line.startswith("|")
        )
    )
    assert main([str(page(tmp_path, doc)), "--root", str(default), "--root", str(study)]) == 0
    _, differences, _ = check_page(page(tmp_path, doc), [study])
    assert len(differences) == 1 and "no such file under" in differences[0]


def test_the_nth_table_of_a_file_is_bound_with_a_fragment(tmp_path):
    """reasoning.md holds one table per split: `...reasoning.md#2` is the second."""
    tables = tmp_path / "results" / "testbed" / "tables"
    tables.mkdir(parents=True)
    (tables / "reasoning.md").write_text(
        "#### Test (ID)\n\n| Model | pass@1 |\n|---|---|\n| base | 10.0 |\n\n"
        "#### New compositions\n\n| Model | pass@1 |\n|---|---|\n| base | 2.0 |\n"
    )
    second = (
        "New compositions (`results/testbed/tables/reasoning.md#2`)\n\n"
        "| Model | pass@1 |\n|---|---|\n"
    )
    good = page(tmp_path, second + "| base | 2.0 |\n")
    assert [t.index for t in bound_tables(good.read_text())] == [2]
    assert check_page(good, tmp_path)[1] == []
    # the first table's row under #2 differs, naming the fragment
    wrong = page(tmp_path, second + "| base | 10.0 |\n")
    (difference,) = check_page(wrong, tmp_path)[1]
    assert "reasoning.md#2: row 2 is 'base | 10.0'" in difference
    third = page(tmp_path, second.replace("#2", "#3") + "| base | 2.0 |\n")
    (missing,) = check_page(third, tmp_path)[1]
    assert "no table 3 (it has 2)" in missing
