"""The pass rule of a process-signal candidate, as a test of the tables (a family's
``candidates`` setting; docs/preregistration/warm32_why_rcf.md): a run of the family passes if
all three hold, each against the family's reference (GRPO) with the same seeds:

1. ``beats``: higher on the family's split (wrong bet), surviving Holm over the family
   (``gc2po.reporting.family``: verdict "higher (Holm)");
2. ``copies_no_more``: its copy share on that split not above the reference's (the mean over
   seeds of the paired difference <= 0), so the gain is not bought only by copying less;
3. ``uncued_holds``: its uncued ``test_id`` pass@1 not below the reference's: the lower end of the
   95% t-interval over seeds of the paired difference above ``-uncued_margin`` points.

Reads the family's rows and the mechanism table's CSV (``gc2po.reporting.mechanism``: per-seed
values in ``seed_values``); writes Markdown and CSV. A condition that cannot be evaluated (a
run missing from the mechanism table, one seed and so no interval) is "no": the rule never
passes a run it cannot check.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from gc2po.reporting.comparison import p_text
from gc2po.reporting.names import RunNames, benchmark_name, method_name
from gc2po.reporting.stats import seed_interval
from gc2po.reporting.table_format import signed, value

UNCUED = ("test_id", "uncued_pass@1")  # (split, measure) of the mechanism table
COPY = "copy_share"
COLUMNS = [
    "block",
    "run",
    "reference",
    "diff",
    "holm_p",
    "verdict",
    "copy_run",
    "copy_reference",
    "copy_diff",
    "copy_diff_ci_low",
    "copy_diff_ci_high",
    "uncued_diff",
    "uncued_diff_ci_low",
    "uncued_diff_ci_high",
    "beats",
    "copies_no_more",
    "uncued_holds",
    "passes",
    "seeds",
]


def parse_seed_values(text) -> dict[int, float]:
    """``"0:12.5;1:10.0"`` (the mechanism CSV's ``seed_values``, in %) -> {seed: value}."""
    if not isinstance(text, str) or not text:
        return {}
    return {int(s): float(v) for s, v in (item.split(":") for item in text.split(";"))}


def seed_measure(mechanism: pd.DataFrame, block: str, model: str, split: str, measure: str):
    """{seed: value in %} of one mechanism cell; {} when the table has no such cell."""
    cell = mechanism[
        (mechanism.block == block)
        & (mechanism.model == model)
        & (mechanism.split == split)
        & (mechanism.measure == measure)
    ]
    return parse_seed_values(cell.seed_values.iloc[0]) if len(cell) else {}


def paired(run: dict[int, float], reference: dict[int, float]) -> tuple[float, float, float]:
    """(mean, low, high) of the per-seed differences run - reference over their common seeds
    (points), with the 95% t-interval; NaN where no seed is shared, NaN bounds for one seed."""
    seeds = sorted(set(run) & set(reference))
    return seed_interval([run[s] - reference[s] for s in seeds])


def candidate_rows(
    family_rows: pd.DataFrame, mechanism: pd.DataFrame, *, split: str, uncued_margin: float
) -> pd.DataFrame:
    """One row per (block, run) of the family (``gc2po.reporting.family.compare_family``'s
    rows): the three conditions of the module docstring and ``passes``."""
    rows = []
    for row in family_rows.itertuples():
        copy_run = seed_measure(mechanism, row.block, row.run, split, COPY)
        copy_ref = seed_measure(mechanism, row.block, row.reference, split, COPY)
        uncued = paired(
            seed_measure(mechanism, row.block, row.run, *UNCUED),
            seed_measure(mechanism, row.block, row.reference, *UNCUED),
        )
        copy = paired(copy_run, copy_ref)
        beats = row.verdict == "higher (Holm)"
        copies_no_more = bool(math.isfinite(copy[0]) and copy[0] <= 0)
        uncued_holds = bool(math.isfinite(uncued[1]) and uncued[1] > -uncued_margin)
        rows.append(
            {
                "block": row.block,
                "run": row.run,
                "reference": row.reference,
                "diff": row.diff,
                "holm_p": row.holm_p,
                "verdict": row.verdict,
                "copy_run": float(np.mean(list(copy_run.values()))) if copy_run else math.nan,
                "copy_reference": float(np.mean(list(copy_ref.values()))) if copy_ref else math.nan,
                "copy_diff": copy[0],
                "copy_diff_ci_low": copy[1],
                "copy_diff_ci_high": copy[2],
                "uncued_diff": uncued[0],
                "uncued_diff_ci_low": uncued[1],
                "uncued_diff_ci_high": uncued[2],
                "beats": beats,
                "copies_no_more": copies_no_more,
                "uncued_holds": uncued_holds,
                "passes": beats and copies_no_more and uncued_holds,
                "seeds": row.seeds,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def _interval(mean, low, high) -> str:
    if not math.isfinite(mean):
        return "n/a"
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{signed(mean)} (no CI)"
    return f"{signed(mean)} [{signed(low)}, {signed(high)}]"


def _mark(ok: bool) -> str:
    return "yes" if ok else "no"


def to_markdown(
    rows: pd.DataFrame, *, family: str, split: str, uncued_margin: float, names: RunNames = None
) -> str:
    reference = method_name(rows.reference.iloc[0], names) if len(rows) else "the reference"
    where = benchmark_name(split)
    lines = [
        f"### {family}: which run passes the candidate rule (each against {reference})",
        "",
        f"| Base model | Run | {where}: difference (points) | Holm p | 1. higher (Holm) "
        f"| {where}: copy share, run / {reference} (%) | copy-share difference [95% CI] "
        f"| 2. copies no more | uncued test_id pass@1 difference [95% CI] "
        f"| 3. lower end > -{uncued_margin:g} | passes | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows.itertuples():
        lines.append(
            f"| {row.block} | {method_name(row.run, names)} | {signed(row.diff)} | "
            f"{p_text(row.holm_p)} | {_mark(row.beats)} | {value(row.copy_run)} / "
            f"{value(row.copy_reference)} | "
            f"{_interval(row.copy_diff, row.copy_diff_ci_low, row.copy_diff_ci_high)} | "
            f"{_mark(row.copies_no_more)} | "
            f"{_interval(row.uncued_diff, row.uncued_diff_ci_low, row.uncued_diff_ci_high)} | "
            f"{_mark(row.uncued_holds)} | **{_mark(row.passes)}** | {row.seeds} |"
        )
    passed = [method_name(r, names) for r in rows.run[rows.passes]]
    lines += [
        "",
        f"A run passes if all three hold: 1. higher than {reference} on {where}, surviving Holm "
        f"over the family (tables/family_{family}.md); 2. its copy share on {where} not above "
        f"{reference}'s (mean over seeds of the paired difference <= 0); 3. its uncued test_id "
        f"pass@1 not below {reference}'s: the lower end of the 95% t-interval over seeds of the "
        f"paired difference above -{uncued_margin:g} points. A condition that cannot be "
        "evaluated (no interval from one seed) reads no. "
        + (f"Passed: {', '.join(passed)}." if passed else "No run passed."),
    ]
    return "\n".join(lines) + "\n"


def write_candidates(
    family_rows: pd.DataFrame,
    mechanism: pd.DataFrame,
    *,
    family: str,
    split: str,
    uncued_margin: float,
    md: Path,
    csv: Path,
    names: RunNames = None,
) -> pd.DataFrame:
    rows = candidate_rows(family_rows, mechanism, split=split, uncued_margin=uncued_margin)
    Path(md).parent.mkdir(parents=True, exist_ok=True)
    Path(md).write_text(
        to_markdown(rows, family=family, split=split, uncued_margin=uncued_margin, names=names)
    )
    rows.to_csv(csv, index=False, float_format="%.4f")
    return rows
