"""The paper's reported numbers, as data, and a run's table beside them.

``paper_table1.csv`` (package data) holds every cell of the paper's Table 1 (``tab:ex_1``, "Pass@1
performance on mathematical reasoning datasets"): one row per base model, method and benchmark,
with the paper's names beside the labels this project uses for them (``config/paper.yaml``'s base
models and dataset keys, the method registry's names), the printed pass@1 (%) and the printed
gain over the base model. A test parses the table's LaTeX, kept verbatim beside it
(tests/reporting/paper_table1.tex), and compares it with this file.

:func:`compare` puts a table of this project (the cells ``gc2po tables`` and the workflow's
``table`` rule write, ``tables/table1.csv``) beside the paper's: each cell the paper reports with
the run's mean and 95% interval, the run's gain over its own base model with its paired interval,
and whether the paper's numbers fall inside those intervals.

    python -m gc2po.reporting.paper                 # rewrite the tables of docs/paper-numbers.md
    python -m gc2po.reporting.paper --check         # exit 1 when they are stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

DATA = Path(__file__).with_name("paper_table1.csv")
PAGE = Path(__file__).resolve().parents[2] / "docs" / "paper-numbers.md"
COMMAND = "python -m gc2po.reporting.paper"
AVERAGE = "Average"  # gc2po.reporting.tables.AVERAGE: the row every table ends a block with
# how far a printed gain may be from the difference of the printed values: both are rounded to
# 0.1 from unrounded numbers, so a gain computed before rounding can differ by one unit
ROUNDING = 0.1 + 1e-9
START, END = "<!-- paper-table1: generated -->", "<!-- /paper-table1 -->"


def paper_table1() -> pd.DataFrame:
    """Every cell of the paper's Table 1 (``delta``: NaN for the base model's rows)."""
    return pd.read_csv(DATA, dtype={"value": float, "delta": float})


def benchmarks(table: pd.DataFrame) -> list[str]:
    """The paper's benchmark keys, in its column order, the Average left out."""
    keys = dict.fromkeys(table["benchmark"])
    return [key for key in keys if key != AVERAGE]


def inconsistencies(table: pd.DataFrame) -> list[str]:
    """The cells whose printed gain is not the difference of the printed values, nor an
    Average the mean of its row, within rounding: one sentence each."""
    found = []
    keys = benchmarks(table)
    for (base, method), row in table.groupby(["base", "method"], sort=False):
        values = dict(zip(row["benchmark"], row["value"]))
        mean = sum(values[k] for k in keys) / len(keys)
        paper_base = row["paper_base"].iloc[0]
        who = f"{paper_base}, {row['paper_method'].iloc[0]}"
        if abs(mean - values[AVERAGE]) > ROUNDING:
            found.append(
                f"{who}: Average {values[AVERAGE]:.1f}, the mean of its six values is {mean:.2f}"
            )
        if method == "base":
            continue
        base_values = table[(table["base"] == base) & (table["method"] == "base")]
        base_of = dict(zip(base_values["benchmark"], base_values["value"]))
        for benchmark, name, delta in zip(row["benchmark"], row["paper_benchmark"], row["delta"]):
            difference = values[benchmark] - base_of[benchmark]
            if abs(difference - delta) > ROUNDING:
                found.append(
                    f"{who}, {name}: {values[benchmark]:.1f} - {base_of[benchmark]:.1f} = "
                    f"{difference:+.1f}, printed {delta:+.1f}"
                )
    return found


def _cell(value: float, delta: float) -> str:
    return f"{value:.1f}" if pd.isna(delta) else f"{value:.1f} ({delta:+.1f})"


def paper_markdown(table: pd.DataFrame | None = None) -> str:
    """The paper's Table 1 as Markdown, one table per base model, with the inconsistencies."""
    table = paper_table1() if table is None else table
    columns = list(dict.fromkeys(table["paper_benchmark"]))
    lines = []
    for paper_base, block in table.groupby("paper_base", sort=False):
        label = block["base"].iloc[0]
        lines += [
            f"**{paper_base}** (`{label}` in `config/paper.yaml`):",
            "",
            "| Method | " + " | ".join(columns) + " |",
            "|---|" + "---|" * len(columns),
        ]
        for paper_method, row in block.groupby("paper_method", sort=False):
            method = row["method"].iloc[0]
            name = paper_method if method == "base" else f"+ {paper_method} (`{method}`)"
            cells = [_cell(v, d) for v, d in zip(row["value"], row["delta"])]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    found = inconsistencies(table)
    lines.append(
        "Cells whose printed gain is not the difference of the printed values (or an Average "
        "not the mean of its row), beyond rounding: "
        + ("; ".join(found) + "." if found else "none.")
    )
    return "\n".join(lines)


def _interval(low: float, high: float, signed: bool = False) -> str:
    form = "{:+.1f}" if signed else "{:.1f}"
    return f"[{form.format(low)}, {form.format(high)}]"


def _inside(value: float, low: float, high: float) -> str:
    return "yes" if low <= value <= high else "no"


def _no_overlap(table: pd.DataFrame) -> ValueError:
    labels = ", ".join(dict.fromkeys(table["base"]))
    return ValueError(
        "--paper: no cell of this table is one the paper's Table 1 reports (its base models are "
        f"labelled {labels} as in config/paper.yaml; its benchmarks "
        f"{', '.join(benchmarks(table))}; its methods the registry's names)"
    )


def check_overlap(keys, table: pd.DataFrame | None = None) -> None:
    """ValueError, before any table is written, when none of ``keys`` ((base, model,
    benchmark) of the evaluation files) is a cell the paper reports."""
    table = paper_table1() if table is None else table
    reported = set(zip(table["base"], table["method"], table["benchmark"]))
    if not reported & set(keys):
        raise _no_overlap(table)


def compare(cells: pd.DataFrame, table: pd.DataFrame | None = None) -> str:
    """A run's table cells (``tables/table1.csv``'s columns) beside the paper's Table 1: one row
    per cell both report. ValueError when they share none (naming the paper's labels)."""
    table = paper_table1() if table is None else table
    paper = table.set_index(["base", "method", "benchmark"])
    run_benchmarks = [b for b in dict.fromkeys(cells["benchmark"]) if b != AVERAGE]
    # the paper's Average is over its six columns: a run's Average is comparable only when
    # its table has exactly those
    same_columns = set(run_benchmarks) == set(benchmarks(table))
    rows = []
    for cell in cells.itertuples(index=False):
        key = (cell.block, cell.model, cell.benchmark)
        if key not in paper.index or (cell.benchmark == AVERAGE and not same_columns):
            continue
        reported = paper.loc[key]
        row = [
            reported["paper_base"],
            reported["paper_method"],
            reported["paper_benchmark"],
            f"{reported['value']:.1f}",
            f"{cell.mean:.1f} {_interval(cell.ci_low, cell.ci_high)}",
            _inside(reported["value"], cell.ci_low, cell.ci_high),
        ]
        if cell.model == "base":
            row += ["", "", ""]
        else:
            row += [
                f"{reported['delta']:+.1f}",
                f"{cell.diff:+.1f} {_interval(cell.diff_ci_low, cell.diff_ci_high, True)}",
                _inside(reported["delta"], cell.diff_ci_low, cell.diff_ci_high),
            ]
        rows.append("| " + " | ".join(row) + " |")
    if not rows:
        raise _no_overlap(table)
    header = [
        "Base model",
        "Method",
        "Benchmark",
        "paper",
        "this run [95% CI]",
        "paper inside",
        "paper's gain",
        "this run's gain [95% CI]",
        "paper's gain inside",
    ]
    return "\n".join(
        [
            "Beside the paper's Table 1 (tab:ex_1; pass@1 %, gains over the base model):",
            "",
            "| " + " | ".join(header) + " |",
            "|---" * len(header) + "|",
            *rows,
        ]
    )


def page_with_tables(page: str) -> str:
    """The page with its generated block (between START and END) rewritten."""
    if START not in page or END not in page:
        raise ValueError(f"{PAGE.name}: no {START} ... {END} block")
    head, rest = page.split(START, 1)
    tail = rest.split(END, 1)[1]
    return f"{head}{START}\n\n{paper_markdown()}\n\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description="write docs/paper-numbers.md")
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    parser.add_argument("--page", type=Path, default=PAGE, help="the page (default: %(default)s)")
    ns = parser.parse_args(argv)
    text = ns.page.read_text()
    fresh = page_with_tables(text)
    if ns.check:
        if fresh != text:
            print(f"{ns.page}: the paper's tables are stale: run {COMMAND}", file=sys.stderr)
        return int(fresh != text)
    ns.page.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
