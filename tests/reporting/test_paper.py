"""gc2po.reporting.paper: the paper's Table 1 as data (checked against the table's LaTeX, kept
verbatim beside this test), docs/paper-numbers.md's tables from it, and a run's table beside it
(``gc2po tables --paper``)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from gc2po.cli import main
from gc2po.reporting import paper
from tests.reporting.conftest import write_eval

# the paper's Table 1 (\label{tab:ex_1}), copied from the paper's LaTeX source line for line
LATEX = Path(__file__).with_name("paper_table1.tex")
# the paper's names -> the labels this project gives them (config/paper.yaml, the registry)
BASES = {
    "DeepScaleR-1.5B-Preview": "DeepScaleR-1.5B",
    "DeepSeek-R1-Distill-Qwen-1.5B": "R1-Distill-Qwen-1.5B",
    "DeepSeek-R1-Distill-Qwen-7B": "R1-Distill-Qwen-7B",
}
METHODS = {
    "GRPO": "grpo",
    "length penalty": "length_penalty",
    "ReST-MCTS": "rest_mcts",
    "GVPO": "gvpo",
    "Dr.GRPO": "dr_grpo",
    "GCPO": "gcpo",
    "MRT": "mrt",
    "GC2PO": "gc2po",
}
BENCHMARKS = {
    "AIME 2024": "aime2024",
    "AIME 2025": "aime2025",
    "AMC 2023": "amc2023",
    "MATH500": "math500",
    "MinervaMATH": "minerva",
    "GSM8K": "gsm8k",
    "Average Results": "Average",
}


def _unbold(text: str) -> str:
    return re.sub(r"\\textbf\{(.*)\}", r"\1", text.strip())


def parse_latex(tex: str) -> list[dict]:
    """Every cell of the LaTeX table: a bold first cell starts a base model's block, a ``+``
    row is a method; cells read ``value`` or ``value (delta)``."""
    text = tex.replace(
        "\u2011", "-"
    )  # the paper writes DeepScaleR's name with non-breaking hyphens
    label = re.search(r"\\label\{([^}]+)\}", text)[1]
    header = re.search(r"\\textbf\{Methods\} &(.*?)\\\\", text)[1]
    columns = [_unbold(cell) for cell in header.split("&")]
    rows, base = [], None
    for line in text.splitlines():
        if "&" not in line or "Methods" in line:
            continue
        first, *cells = line.split("&")
        cells[-1] = cells[-1].split("\\\\")[0]
        first = re.sub(r"\\rowcolor\{[^}]*\}|\\!|~|\\cite\{[^}]*\}", "", first).strip()
        if first.startswith("\\textbf"):
            base, method = _unbold(first), None
        else:
            method = first.removeprefix("+").strip().replace("G$C^2$PO (Ours)", "GC2PO")
        for column, cell in zip(columns, cells, strict=True):
            value, delta = re.fullmatch(r"([\d.]+)(?: \(([+-][\d.]+)\))?", _unbold(cell)).groups()
            rows.append(
                {
                    "table": label,
                    "paper_base": base,
                    "base": BASES[base],
                    "paper_method": method or "base model",
                    "method": METHODS[method] if method else "base",
                    "paper_benchmark": column,
                    "benchmark": BENCHMARKS[column],
                    "value": float(value),
                    "delta": float(delta) if delta else float("nan"),
                }
            )
    return rows


def test_the_data_is_the_papers_table_cell_for_cell():
    expected = pd.DataFrame(parse_latex(LATEX.read_text()))
    assert len(expected) == 3 * 9 * 7  # 3 base models, the base and 8 methods, 6 columns + Average
    pd.testing.assert_frame_equal(paper.paper_table1(), expected)


def test_the_parser_reads_a_row_as_the_paper_prints_it():
    """A changed cell of the LaTeX would fail the comparison above."""
    rows = parse_latex(LATEX.read_text())
    cell = next(
        r
        for r in rows
        if (r["base"], r["method"], r["benchmark"]) == ("DeepScaleR-1.5B", "gc2po", "aime2024")
    )
    assert (cell["value"], cell["delta"], cell["table"]) == (49.3, 6.2, "tab:ex_1")
    changed = LATEX.read_text().replace("49.3 (+6.2)", "49.4 (+6.2)")
    assert pd.DataFrame(parse_latex(changed))["value"].sum() == pytest.approx(
        pd.DataFrame(rows)["value"].sum() + 0.1
    )


def test_the_papers_one_gain_that_is_not_its_values_difference_is_found():
    """Gains computed before rounding may be 0.1 off the printed values' difference; one cell is
    0.3 off: 49.3 - 42.8 is +6.5, printed +6.2."""
    assert paper.inconsistencies(paper.paper_table1()) == [
        "DeepScaleR-1.5B-Preview, GC2PO, AIME 2024: 49.3 - 42.8 = +6.5, printed +6.2"
    ]
    table = paper.paper_table1()
    table.loc[(table["method"] == "grpo") & (table["benchmark"] == "gsm8k"), "value"] += 1.0
    found = paper.inconsistencies(table)
    assert any("GRPO, GSM8K" in line for line in found)
    assert any("GRPO: Average" in line for line in found)


def test_the_page_holds_the_generated_tables():
    text = paper.PAGE.read_text()
    assert paper.page_with_tables(text) == text, f"run {paper.COMMAND}"
    assert "| + GC2PO (`gc2po`) | 49.3 (+6.2) |" in text
    assert paper.main(["--check"]) == 0


def test_a_stale_page_is_reported(tmp_path, capsys):
    stale = tmp_path / "page.md"
    stale.write_text(f"intro\n\n{paper.START}\nold\n{paper.END}\n\nafter\n")
    assert paper.main(["--check", "--page", str(stale)]) == 1
    assert paper.COMMAND in capsys.readouterr().err
    assert paper.main(["--page", str(stale)]) == 0
    assert paper.main(["--check", "--page", str(stale)]) == 0
    assert stale.read_text().endswith(f"{paper.END}\n\nafter\n")


def cells(rows: list[tuple]) -> pd.DataFrame:
    """Table cells as ``tables/table1.csv`` holds them: (block, model, benchmark, mean, low,
    high, diff, diff low, diff high)."""
    columns = ["block", "model", "benchmark", "mean", "ci_low", "ci_high"]
    columns += ["diff", "diff_ci_low", "diff_ci_high"]
    return pd.DataFrame(rows, columns=columns)


def test_a_run_beside_the_paper_says_whether_the_papers_numbers_fall_in_its_intervals():
    nan = float("nan")
    run = cells(
        [
            ("DeepScaleR-1.5B", "base", "aime2024", 40.0, 38.0, 43.0, nan, nan, nan),
            ("DeepScaleR-1.5B", "gc2po", "aime2024", 44.0, 42.0, 46.0, 4.0, 1.0, 7.0),
            ("DeepScaleR-1.5B", "gc2po", "Average", 44.0, 42.0, 46.0, 4.0, 1.0, 7.0),
            ("DeepScaleR-1.5B", "sign", "aime2024", 41.0, 40.0, 42.0, 1.0, 0.0, 2.0),
        ]
    )
    lines = paper.compare(run).splitlines()
    assert lines[0].startswith("Beside the paper's Table 1 (tab:ex_1")
    rows = [line for line in lines if line.startswith("| DeepScaleR")]
    # the base model's 42.8 in [38.0, 43.0]; GC2PO's 49.3 outside [42.0, 46.0], its gain +6.2
    # inside [+1.0, +7.0]; the run's Average is over one benchmark, not the paper's six: left out;
    # a method the paper does not report: left out
    assert rows == [
        "| DeepScaleR-1.5B-Preview | base model | AIME 2024 | 42.8 | 40.0 [38.0, 43.0] | yes "
        "|  |  |  |",
        "| DeepScaleR-1.5B-Preview | GC2PO | AIME 2024 | 49.3 | 44.0 [42.0, 46.0] | no | +6.2 "
        "| +4.0 [+1.0, +7.0] | yes |",
    ]


def test_a_table_the_paper_does_not_report_is_refused_naming_its_labels():
    run = cells([("testbed", "grpo", "test_id", 80.0, 78.0, 82.0, 4.0, 1.0, 7.0)])
    with pytest.raises(ValueError, match="labelled DeepScaleR-1.5B, R1-Distill-Qwen-1.5B"):
        paper.compare(run)


def test_gc2po_tables_prints_the_papers_numbers_beside_the_runs(tmp_path, capsys):
    for model, correct in (("base", [1, 0, 0, 0]), ("gc2po", [1, 1, 0, 0])):
        for seed in (0, 1):
            write_eval(tmp_path / "ev", "DeepScaleR-1.5B", model, seed, "aime2024", correct)
    out = tmp_path / "t1"
    args = ["tables", "--eval-dir", str(tmp_path / "ev" / "eval"), "--out", str(out), "--paper"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "| DeepScaleR-1.5B (base) | 25.0" in printed  # the run's own table first
    assert (
        "| DeepScaleR-1.5B-Preview | GC2PO | AIME 2024 | 49.3 | 50.0 [50.0, 50.0] | no | +6.2 | "
        "+25.0 [+25.0, +25.0] | no |" in printed
    )


def test_gc2po_tables_refuses_paper_before_writing_when_nothing_matches(tmp_path, capsys):
    write_eval(tmp_path / "ev", "testbed", "base", 0, "test_id", [1, 0])
    out = tmp_path / "t1"
    args = ["tables", "--eval-dir", str(tmp_path / "ev" / "eval"), "--out", str(out), "--paper"]
    assert main(args) == 2
    assert "gc2po tables: error: --paper: no cell of this table" in capsys.readouterr().err
    assert not out.with_suffix(".md").exists()
