"""One method against another on the same base model, seeds and problems: the paired
difference per benchmark (e.g. GC2PO - GRPO) with its 95% bootstrap CI (seeds and problems
resampled jointly) and the paired t-test and sign-flip test across seeds.

Reads the per-sample evaluation files of ``gc2po.reporting.tables``; writes Markdown and CSV.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gc2po.reporting import split_notes
from gc2po.reporting.names import RunNames, benchmark_name, method_name
from gc2po.reporting.stats import paired_macro_bootstrap_diff, paired_macro_test
from gc2po.reporting.tables import AVERAGE, EvalFile, Scores

COLUMNS = [
    "block",
    "benchmark",
    "mean_a",
    "mean_b",
    "diff",
    "diff_ci_low",
    "diff_ci_high",
    "t_p",
    "sign_flip_p",
    "seeds",
    "problems",
]


def compare(
    files: list[EvalFile], method_a: str, method_b: str, benchmarks: list[str]
) -> pd.DataFrame:
    """Rows (block, benchmark or Average): pass@1 (%) of a and of b, a - b with its CI, p-values."""
    scores = Scores(files)
    rows = []
    for block in sorted({f.block for f in files}):
        seeds = sorted(
            set(scores.seeds(block, method_a, benchmarks))
            & set(scores.seeds(block, method_b, benchmarks))
        )
        if not seeds:
            raise ValueError(
                f"comparison: {block}: {method_a} and {method_b} share no seed evaluated on "
                f"{benchmarks}"
            )
        a, b, counts = [], [], []
        for benchmark in benchmarks:
            problems = scores.problems(block, benchmark, [method_a, method_b], seeds)
            a.append(scores.array(block, method_a, benchmark, seeds, problems))
            b.append(scores.array(block, method_b, benchmark, seeds, problems))
            counts.append(len(problems))
        for i, benchmark in enumerate([*benchmarks, AVERAGE]):
            part = slice(i, i + 1) if benchmark != AVERAGE else slice(None)
            test = paired_macro_test(a[part], b[part])
            diff = 100 * np.array(paired_macro_bootstrap_diff(a[part], b[part]))
            rows.append(
                {
                    "block": block,
                    "benchmark": benchmark,
                    "mean_a": 100 * np.mean([x.mean() for x in a[part]]),
                    "mean_b": 100 * np.mean([y.mean() for y in b[part]]),
                    "diff": diff[0],
                    "diff_ci_low": diff[1],
                    "diff_ci_high": diff[2],
                    "t_p": test.t_p_value,
                    "sign_flip_p": test.sign_flip_p_value,
                    "seeds": ",".join(map(str, seeds)),
                    "problems": sum(counts[part]),
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def _p(value: float) -> str:
    return "n/a" if pd.isna(value) else f"{value:.3f}"


def to_markdown(rows: pd.DataFrame, method_a: str, method_b: str, names: RunNames = None) -> str:
    a, b = method_name(method_a, names), method_name(method_b, names)
    lines = [
        f"### {a} - {b}: paired difference of pass@1 (%)",
        "",
        f"| Base model | Benchmark | {a} | {b} | {a} - {b} [95% CI] | paired t p | sign-flip p "
        "| seeds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows.itertuples():
        diff = 0.0 if round(row.diff, 1) == 0 else row.diff
        lines.append(
            f"| {row.block} | {benchmark_name(row.benchmark)} | {row.mean_a:.1f} | "
            f"{row.mean_b:.1f} | "
            f"{diff:+.1f} [{row.diff_ci_low:+.1f}, {row.diff_ci_high:+.1f}] | {_p(row.t_p)} | "
            f"{_p(row.sign_flip_p)} | {row.seeds} |"
        )
    lines += [
        "",
        "Same seeds and problems for both methods; the CI resamples seeds and problems "
        "jointly (1000 "
        "resamples); the p-values test the per-seed differences (two-sided; n/a with one seed). "
        "Average: "
        "the mean over the benchmarks.",
    ]
    return "\n".join(lines) + "\n"


def write_comparison(
    files: list[EvalFile],
    method_a: str,
    method_b: str,
    benchmarks: list[str],
    *,
    md: Path,
    csv: Path,
    names: RunNames = None,
) -> pd.DataFrame:
    rows = compare(files, method_a, method_b, benchmarks)
    labels = split_notes.split_labels([f.path for f in files])  # testbed: chance, reachability
    rows = split_notes.with_columns(rows, labels)
    notes = split_notes.sentence(labels, benchmarks)
    Path(md).parent.mkdir(parents=True, exist_ok=True)
    Path(md).write_text(
        to_markdown(rows, method_a, method_b, names) + (f"{notes}\n" if notes else "")
    )
    rows.to_csv(csv, index=False, float_format="%.4f")
    return rows
