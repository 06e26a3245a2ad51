"""Table 1 layout (SPEC 5) from per-sample evaluation files.

One block per base model. Rows: the base model, then "+ method" with the delta to the base in
parentheses; columns: benchmarks and Average; the best value of each column in a block is bold.
Written as Markdown, LaTeX and CSV; the CSV holds every cell's mean, bootstrap CI, seeds and
source files.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gc2po.reporting.stats import bootstrap_ci


@dataclass(frozen=True)
class EvalFile:
    block: str  # the base model the row belongs to
    model: str  # "base" or a run (method) name
    seed: int
    benchmark: str
    path: Path


def problem_scores(path: Path) -> dict[str, float]:
    """Per-problem pass@1 (mean correctness over samples) from a per-sample JSONL file."""
    by_problem: dict[str, list[float]] = defaultdict(list)
    with Path(path).open() as handle:
        for row, line in enumerate(handle, 1):
            try:
                record = json.loads(line)
                by_problem[str(record["problem_id"])].append(float(record["correct"]))
            except (json.JSONDecodeError, KeyError) as err:
                raise ValueError(f"{path}: row {row}: not a per-sample record ({err})") from err
    return {pid: sum(v) / len(v) for pid, v in by_problem.items()}


def cell_table(files: list[EvalFile], *, num_resamples: int = 1000) -> pd.DataFrame:
    """One row per (model, benchmark): mean pass@1 (x100), CI, seeds and source files."""
    grouped: dict[tuple[str, str, str], list[EvalFile]] = defaultdict(list)
    for f in files:
        grouped[(f.block, f.model, f.benchmark)].append(f)
    rows = []
    for (block, model, benchmark), members in grouped.items():
        members = sorted(members, key=lambda f: f.seed)
        per_seed = [problem_scores(f.path) for f in members]
        common = sorted(set.intersection(*(set(s) for s in per_seed)))
        arrays = [np.array([s[p] for p in common]) for s in per_seed]
        mean, low, high = bootstrap_ci(arrays, num_resamples=num_resamples)
        rows.append({"block": block, "model": model, "benchmark": benchmark, "mean": 100 * mean, "ci_low": 100 * low,
                     "ci_high": 100 * high, "seeds": ",".join(str(f.seed) for f in members),
                     "problems": len(common), "sources": ";".join(str(f.path) for f in members)})
    return pd.DataFrame(rows)


def table1(cells: pd.DataFrame, order: list[str], benchmarks: list[str]) -> pd.DataFrame:
    """One block: rows [base, method...] (in ``order``), columns benchmarks + Average."""
    wide = cells.pivot(index="model", columns="benchmark", values="mean").reindex(columns=benchmarks)
    wide["Average"] = wide[benchmarks].mean(axis=1)
    rows = ["base"] + [m for m in order if m != "base"]
    missing = [m for m in rows if m not in wide.index]
    if missing:
        raise ValueError(f"table: no results for {missing}")
    return wide.loc[rows]


def _format(table: pd.DataFrame, block: str, bold, plain) -> list[list[str]]:
    base = "base"
    best = {c: table.loc[table.index != base, c].max() for c in table.columns}
    lines = []
    for model, row in table.iterrows():
        label = block if model == base else f"+ {model}"
        cells = []
        for column, value in row.items():
            text = f"{value:.1f}"
            if model != base:
                text += f" ({value - table.loc[base, column]:+.1f})"
                if np.isclose(value, best[column]):
                    text = bold(text)
            cells.append(plain(text))
        lines.append([label] + cells)
    return lines


def to_markdown(tables: dict[str, pd.DataFrame], title: str) -> str:
    first = next(iter(tables.values()))
    header = ["Model"] + list(first.columns)
    out = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for block, table in tables.items():
        out += ["| " + " | ".join(r) + " |" for r in _format(table, block, lambda t: f"**{t}**", lambda t: t)]
    return "\n".join(out) + "\n"


def to_latex(tables: dict[str, pd.DataFrame], title: str) -> str:
    first = next(iter(tables.values()))
    header = ["Model"] + [c.replace("_", "\\_") for c in first.columns]
    out = ["\\begin{table}[t]", "\\centering", f"\\caption{{{title}}}", "\\begin{tabular}{l" + "c" * (len(header) - 1) + "}",
           "\\toprule", " & ".join(header) + " \\\\"]
    for block, table in tables.items():
        out.append("\\midrule")
        rows = _format(table, block, lambda t: f"\\textbf{{{t}}}", lambda t: t)
        out += [" & ".join(c.replace("_", "\\_") for c in r) + " \\\\" for r in rows]
    out += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
    return "\n".join(out) + "\n"


def write_table(files: list[EvalFile], order: list[str], benchmarks: list[str], title: str,
                md: Path, tex: Path, csv: Path) -> dict[str, pd.DataFrame]:
    """Write the table in three formats; returns {base model: block}."""
    cells = cell_table(files)
    tables = {block: table1(cells[cells.block == block], order, benchmarks) for block in dict.fromkeys(cells.block)}
    for path, text in ((md, to_markdown(tables, title)), (tex, to_latex(tables, title))):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    cells.to_csv(csv, index=False)
    return tables
