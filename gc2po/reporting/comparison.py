"""One method against another on the same base model, seeds and problems: the paired
difference per benchmark (e.g. GC2PO - GRPO) with its 95% t-interval over the per-seed
differences (``gc2po.reporting.stats``: an interval for these problems), the paired t-test and
sign-flip test across seeds, and whether the t-test survives Holm's correction over the table's
benchmark rows of that base model (the Average row is not in the family).

Reads the per-sample evaluation files of ``gc2po.reporting.tables``; writes Markdown and CSV.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gc2po.reporting import split_notes
from gc2po.reporting.captions import (
    HOLM_ALPHA,
    family_holm,
    holm_family,
    holm_family_text,
    interval_text,
)
from gc2po.reporting.names import RunNames, benchmark_name, method_name
from gc2po.reporting.stats import paired_differences, paired_interval, paired_macro_test
from gc2po.reporting.table_format import signed, value
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
    "holm_p",
    "holm_survives",
    "seeds",
    "problems",
    "interval",
    "holm_family",
]


@dataclass(frozen=True)
class Pair:
    """Both methods' ``[S, P_b]`` scores per benchmark on one base model's shared seeds."""

    block: str
    seeds: list[int]
    a: list[np.ndarray]
    b: list[np.ndarray]
    problems: list[int]  # per benchmark

    def differences(self, part: slice = slice(None)) -> np.ndarray:
        """``[S]``: per seed, a - b averaged over the benchmarks of ``part``."""
        return paired_differences(self.a[part], self.b[part])


def pairs(files: list[EvalFile], method_a: str, method_b: str, benchmarks: list[str]) -> list:
    """One :class:`Pair` per base model, on the seeds both methods have on every benchmark."""
    scores = Scores(files)
    found = []
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
        found.append(Pair(block, seeds, a, b, counts))
    return found


def compare(
    files: list[EvalFile], method_a: str, method_b: str, benchmarks: list[str]
) -> pd.DataFrame:
    """Rows (block, benchmark or Average): pass@1 (%) of a and of b, a - b with its t-interval,
    p-values and Holm's verdict over the block's benchmark rows."""
    rows = []
    for pair in pairs(files, method_a, method_b, benchmarks):
        block_rows = []
        for i, benchmark in enumerate([*benchmarks, AVERAGE]):
            part = slice(i, i + 1) if benchmark != AVERAGE else slice(None)
            test = paired_macro_test(pair.a[part], pair.b[part])
            diff = 100 * np.array(paired_interval(pair.a[part], pair.b[part]))
            block_rows.append(
                {
                    "block": pair.block,
                    "benchmark": benchmark,
                    "mean_a": 100 * np.mean([x.mean() for x in pair.a[part]]),
                    "mean_b": 100 * np.mean([y.mean() for y in pair.b[part]]),
                    "diff": diff[0],
                    "diff_ci_low": diff[1],
                    "diff_ci_high": diff[2],
                    "t_p": test.t_p_value,
                    "sign_flip_p": test.sign_flip_p_value,
                    "seeds": ",".join(map(str, pair.seeds)),
                    "problems": sum(pair.problems[part]),
                    "interval": interval_text(len(pair.seeds)),
                    "holm_family": holm_family_text(benchmarks),
                }
            )
        # the family: this block's benchmark rows the train split can teach; the Average (their
        # mean) is not a new split
        adjusted, verdicts = family_holm([r["t_p"] for r in block_rows[:-1]], benchmarks)
        for row, p, verdict in zip(block_rows, adjusted, verdicts):
            row.update(holm_p=p, holm_survives=verdict)
        rows += block_rows
    return pd.DataFrame(rows, columns=COLUMNS)


def p_text(value: float) -> str:
    """A p-value to 3 decimals, n/a where there is none (one seed)."""
    return "n/a" if pd.isna(value) else f"{value:.3f}"


def difference_text(row) -> str:
    """``+2.0 [+0.1, +3.9]``: a row's diff and its interval (the diff alone without one)."""
    if pd.isna(row.diff_ci_low):
        return signed(row.diff)
    return f"{signed(row.diff)} [{signed(row.diff_ci_low)}, {signed(row.diff_ci_high)}]"


def _holm(row) -> str:
    if row.benchmark == AVERAGE:
        return "not in family"
    return row.holm_survives or "n/a"


def _brackets(seed_counts: list[int]) -> str:
    """What the brackets hold, for the seed counts of a table's blocks."""
    intervals = [interval_text(count) for count in seed_counts if count > 1]
    text = (
        f", in brackets its {' / '.join(intervals)} (Student t with S - 1 degrees of freedom "
        "over the S per-seed differences)"
        if intervals
        else ""
    )
    return text + (". 1 seed: no CI" if 1 in seed_counts else "")


def _sign_flip_floor(seed_counts: list[int]) -> str:
    """The smallest two-sided sign-flip p at each seed count S > 1 of a table: 2 / 2^S (all S
    per-seed differences of one sign), so no difference can reach below it."""
    floors = [f"with {count} seeds {2 / 2**count:.4g}" for count in seed_counts if count > 1]
    return f"; the smallest sign-flip p {' / '.join(floors)}" if floors else ""


def to_markdown(rows: pd.DataFrame, method_a: str, method_b: str, names: RunNames = None) -> str:
    a, b = method_name(method_a, names), method_name(method_b, names)
    benchmarks = list(dict.fromkeys(rows.benchmark[rows.benchmark != AVERAGE]))
    splits = len(holm_family(benchmarks))
    seeds = sorted({len(s.split(",")) for s in rows.seeds})
    lines = [
        f"### {a} - {b}: paired difference of pass@1 (%)",
        "",
        f"| Base model | Benchmark | {a} | {b} | {a} - {b} [95% CI] | paired t p | sign-flip p "
        f"| Holm ({splits} split{'s' if splits != 1 else ''}) | seeds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows.itertuples():
        lines.append(
            f"| {row.block} | {benchmark_name(row.benchmark)} | {value(row.mean_a)} | "
            f"{value(row.mean_b)} | {difference_text(row)} | {p_text(row.t_p)} | "
            f"{p_text(row.sign_flip_p)} | {_holm(row)} | {row.seeds} |"
        )
    lines += [
        "",
        f"Same seeds and problems for both methods. {a} - {b}: the mean over seeds of each "
        f"seed's mean difference (seed s of one minus seed s of the other){_brackets(seeds)}. "
        "The p-values test the per-seed differences (two-sided; n/a with one seed"
        f"{_sign_flip_floor(seeds)}). Holm (n/a with one seed): whether the paired "
        f"t-test's difference survives Holm's correction at {HOLM_ALPHA:.0%} over "
        f"{holm_family_text(benchmarks)}. Average: the mean over the benchmarks.",
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
