"""gc2po.reporting.docs_check: a docs table bound to a results file is compared row by row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gc2po.reporting.docs_check import (
    bound_tables,
    check_page,
    machine_digest,
    main,
    makers,
    missing_line,
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
    found = check_page(page(tmp_path, DOC), results(tmp_path))
    assert (len(found.tables), found.differences, found.missing, found.notes) == (1, [], [], [])


def test_a_changed_number_is_reported_with_its_row(tmp_path):
    doc = DOC.replace("44.9 [40.3, 49.8]", "44.9 [40.3, 49.9]")
    differences = check_page(page(tmp_path, doc), results(tmp_path)).differences
    assert len(differences) == 1
    assert "page.md:5: results/testbed/tables/table1.md: row 3 is" in differences[0]
    assert "49.9" in differences[0] and "49.8" in differences[0]


def test_a_missing_row_is_a_difference(tmp_path):
    doc = DOC.replace("| + GRPO | 44.9 [40.3, 49.8] |\n", "")
    found = check_page(page(tmp_path, doc), results(tmp_path))
    assert found.differences == [
        f"{tmp_path / 'page.md'}:5: results/testbed/tables/table1.md: 2 rows, the file has 3"
    ]
    assert found.missing == []


def checkout(tmp_path, **configs):
    """A checkout's config/ folder: file name -> YAML text (config/config.yaml is the default)."""
    folder = tmp_path / "config"
    folder.mkdir(parents=True, exist_ok=True)
    for file, text in configs.items():
        (folder / file.replace("__", "/")).parent.mkdir(parents=True, exist_ok=True)
        (folder / file.replace("__", "/")).write_text(text)
    return tmp_path


COMPLETE = "mode: testbed\nseeds: [0]\nmethods: [grpo]\ntrain: {}\nevaluate: {}\nreport: {}\n"


def test_a_missing_file_is_missing_not_a_difference_and_names_the_config_that_writes_it(tmp_path):
    """The page's checkout (the folder above it holding config/config.yaml) names the run."""
    root = checkout(tmp_path, **{"config.yaml": "name: testbed\n" + COMPLETE})
    (tmp_path / "docs").mkdir()
    found = check_page(page(tmp_path / "docs", DOC), tmp_path / "elsewhere")
    assert found.differences == []
    (missing,) = found.missing
    assert missing == (
        f"{root / 'docs' / 'page.md'}:5: results/testbed/tables/table1.md: not under "
        f"{tmp_path / 'elsewhere'}; config/config.yaml writes it: snakemake --cores 2"
    )


def test_the_maker_of_a_shared_results_folder_is_the_config_whose_report_names_the_table(
    tmp_path,
):
    root = checkout(
        tmp_path,
        **{
            "config.yaml": "name: testbed\n" + COMPLETE,
            "study.yaml": "name: study\nseeds: [0, 1]\n",
            "study_why.yaml": "name: study\nreport: {families: [{name: why}], "
            "comparisons: [[gc2po, grpo]]}\n",
            "paper.yaml": "name: paper\n" + COMPLETE,
            "examples__gpus4.yaml": "name: paper\n",
            "accelerate__zero.yaml": "{not: [valid",
        },
    )
    overlay = "snakemake --cores 2 --configfile config/config.yaml"
    assert [(m.file, m.command) for m in makers("results/study/tables/family_why.md", root)] == [
        ("config/study_why.yaml", f"{overlay} config/study_why.yaml")
    ]
    assert [m.file for m in makers("results/study/tables/gc2po_vs_grpo.md", root)] == [
        "config/study_why.yaml"
    ]
    # a table every config of the folder writes: each of them, the first's command
    assert [m.file for m in makers("results/study/tables/table1.md", root)] == [
        "config/study.yaml",
        "config/study_why.yaml",
    ]
    # a complete config runs alone, and comes before an overlay sharing its name
    assert [(m.file, m.command) for m in makers("results/paper/tables/table1.md", root)] == [
        ("config/paper.yaml", "snakemake --cores 2 --configfile config/paper.yaml"),
        ("config/examples/gpus4.yaml", f"{overlay} config/examples/gpus4.yaml"),
    ]
    line = missing_line("p:1: x", "results/study/tables/table1.md", [Path(".")], root)
    assert line == (
        "p:1: x: not under .; config/study.yaml writes it (or config/study_why.yaml): "
        f"{overlay} config/study.yaml"
    )
    assert missing_line("p:1: x", "results/other/tables/t.md", [Path(".")], root).endswith(
        f"no file of {root / 'config'} has name: other"
    )


def test_results_of_another_machine_are_compared_by_shape_only(tmp_path):
    root = results(tmp_path, machine={"cpu": "other"})
    pinned = DOC.replace("# Results\n", "# Results\n<!-- machine: 0123456789abcdef -->\n")
    other_numbers = pinned.replace("44.9 [40.3, 49.8]", "41.0 [38.0, 44.0]")
    found = check_page(page(tmp_path, other_numbers), root)
    assert found.differences == [] and "shape only" in found.notes[0]
    fewer_rows = pinned.replace("| + GRPO | 44.9 [40.3, 49.8] |\n", "")
    differences = check_page(page(tmp_path, fewer_rows), root).differences
    assert "rows or columns differ" in differences[0]
    # pinned to the machine that made them: numbers compared
    same = pinned.replace("0123456789abcdef", machine_digest({"cpu": "other"}))
    differences = check_page(page(tmp_path, same.replace("49.8", "49.9")), root).differences
    assert "row 3" in differences[0]


def test_the_command_line_exits_1_on_a_difference_and_2_on_a_missing_file(tmp_path, capsys):
    root = results(tmp_path)
    assert main([str(page(tmp_path, DOC)), "--root", str(root)]) == 0
    assert "page.md: 1 bound tables, 0 differ, 0 missing" in capsys.readouterr().out
    assert main([str(page(tmp_path, DOC.replace("26.3", "26.4"))), "--root", str(root)]) == 1
    assert "DIFFERS" in capsys.readouterr().out
    assert main([str(page(tmp_path, DOC)), "--root", str(tmp_path / "none")]) == 2
    out = capsys.readouterr().out
    assert "MISSING: " in out and "DIFFERS" not in out and "0 differ, 1 missing" in out


def test_a_page_that_does_not_exist_is_refused_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([str(tmp_path / "nope.md")])
    assert exit_.value.code == 2
    assert f"{tmp_path / 'nope.md'}: no such page" in capsys.readouterr().err


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
    found = check_page(page(tmp_path, doc), [study])
    assert found.differences == [] and len(found.missing) == 1


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
    assert check_page(good, tmp_path).differences == []
    # the first table's row under #2 differs, naming the fragment
    wrong = page(tmp_path, second + "| base | 10.0 |\n")
    (difference,) = check_page(wrong, tmp_path).differences
    assert "reasoning.md#2: row 2 is 'base | 10.0'" in difference
    third = page(tmp_path, second.replace("#2", "#3") + "| base | 2.0 |\n")
    (missing,) = check_page(third, tmp_path).differences
    assert "no table 3 (it has 2)" in missing
