"""Cue avoidance or accuracy: each run's wrong-bet pass@1 split into the share of its answers that
do not copy the bet and its accuracy on those, paired against a reference run
(``report.decomposition``; testbed only).

Every bet of the wrong-bet split is wrong, so a completion that copies it is wrong and, per seed,

    pass@1 = n x a,   n = 1 - copy share,   a = pass@1 among the completions that do not copy

(copy: ``gc2po.testbed.mechanism.cue_fields``). Against the reference r, seed by seed,

    pass_run - pass_r = (n_run - n_r) a_r  +  n_run (a_run - a_r)
                        cue avoidance          accuracy

exactly: the first part is what copying less would have bought at the reference's accuracy, the
second what the run's own accuracy adds on the answers it derives. Each quantity is the mean over
the paired seeds with its 95% t-interval over seeds; ``avoidance share`` is the mean avoidance
part over the mean difference (the part of the gain that is copying less).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from gc2po import layout
from gc2po.reporting import table_format
from gc2po.reporting.mechanism import read_samples
from gc2po.reporting.names import RunNames, method_name, method_order
from gc2po.reporting.stats import seed_interval
from gc2po.testbed.generator import Problem
from gc2po.testbed.mechanism import annotate

PARTS = ("pass", "non_copy", "accuracy")  # per seed: pass@1, 1 - copy share, accuracy on non-copies
DIFFERENCES = ("d_pass", "d_non_copy", "d_accuracy", "avoidance", "accuracy_part")
COLUMNS = [
    "block",
    "run",
    "reference",
    *(f"{part}_{who}" for part in PARTS for who in ("run", "reference")),
    *(f"{name}{end}" for name in DIFFERENCES for end in ("", "_ci_low", "_ci_high")),
    "avoidance_share",
    "seeds",
]


def seed_parts(annotated: list[dict]) -> dict[str, float]:
    """One seed's pass@1, non-copy share and accuracy on non-copies (fractions; accuracy NaN
    where every completion copies)."""
    if not annotated:
        raise ValueError("decomposition: a seed with no samples")
    derived = [s for s in annotated if not s["copies_bet"]]
    return {
        "pass": float(np.mean([float(s["correct"]) for s in annotated])),
        "non_copy": len(derived) / len(annotated),
        "accuracy": float(np.mean([float(s["correct"]) for s in derived])) if derived else math.nan,
    }


def paired_parts(run: dict[int, dict], reference: dict[int, dict]) -> dict[str, list[float]]:
    """Per paired seed (both have it), the differences of :data:`DIFFERENCES` (fractions)."""
    out: dict[str, list[float]] = {name: [] for name in DIFFERENCES}
    for seed in sorted(set(run) & set(reference)):
        a, r = run[seed], reference[seed]
        out["d_pass"].append(a["pass"] - r["pass"])
        out["d_non_copy"].append(a["non_copy"] - r["non_copy"])
        out["d_accuracy"].append(a["accuracy"] - r["accuracy"])
        # a reference that copies every answer has no accuracy: its avoidance part is undefined
        out["avoidance"].append((a["non_copy"] - r["non_copy"]) * r["accuracy"])
        out["accuracy_part"].append(a["non_copy"] * (a["accuracy"] - r["accuracy"]))
    return out


def values_by_seed(
    paths: list[str | Path], problems: dict[str, Problem], benchmark: str
) -> dict[tuple[str, str], dict[int, dict]]:
    """(block, model) -> seed -> :func:`seed_parts`, from the per-sample files of ``benchmark``."""
    out: dict[tuple[str, str], dict[int, dict]] = {}
    for path in paths:
        key = layout.EvalFile.parse(path)
        if key.benchmark != benchmark:
            continue
        try:
            annotated = annotate(read_samples(path), problems)
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from err
        out.setdefault((key.base, key.model), {})[int(key.seed)] = seed_parts(annotated)
    return out


def _mean(values: list[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return float(np.mean(finite)) if finite else math.nan


def decomposition_rows(
    values: dict[tuple[str, str], dict[int, dict]], reference: str, runs: list[str] | None = None
) -> pd.DataFrame:
    """One row per (block, run) against ``reference`` (every model but the reference and the base
    model when ``runs`` is None), in the tables' order."""
    rows = []
    for block in sorted({b for b, _ in values}):
        if (block, reference) not in values:
            raise ValueError(
                f"decomposition: no evaluation of the reference {reference!r} in {block}"
            )
        models = runs if runs is not None else [
            m for b, m in values if b == block and m not in ("base", reference)
        ]  # fmt: skip
        ref = values[(block, reference)]
        for model in method_order(models):
            if (block, model) not in values:
                raise ValueError(f"decomposition: no evaluation of {model!r} in {block}")
            mine = values[(block, model)]
            paired = paired_parts(mine, ref)
            seeds = sorted(set(mine) & set(ref))
            row = {"block": block, "run": model, "reference": reference,
                   "seeds": ",".join(map(str, seeds))}  # fmt: skip
            for part in PARTS:
                row[f"{part}_run"] = 100 * _mean([mine[s][part] for s in seeds])
                row[f"{part}_reference"] = 100 * _mean([ref[s][part] for s in seeds])
            for name in DIFFERENCES:
                mean, low, high = 100 * np.array(seed_interval(paired[name]))
                row.update({name: mean, f"{name}_ci_low": low, f"{name}_ci_high": high})
            row["avoidance_share"] = row["avoidance"] / row["d_pass"] if row["d_pass"] else math.nan
            rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def _cell(row, name: str) -> str:
    value, low, high = row[name], row[f"{name}_ci_low"], row[f"{name}_ci_high"]
    if not math.isfinite(value):
        return "n/a"
    if not (math.isfinite(low) and math.isfinite(high)):
        return table_format.signed(value)
    return f"{table_format.signed(value)} [{table_format.signed(low)}, {table_format.signed(high)}]"


def _pair(row, part: str) -> str:
    return " / ".join(
        table_format.value(row[f"{part}_{who}"]) if math.isfinite(row[f"{part}_{who}"]) else "n/a"
        for who in ("run", "reference")
    )


CAPTION = (
    "Each run against {reference} on the wrong-bet split, where every bet is wrong and a copy of "
    "it is a wrong answer, so pass@1 = (1 - copy share) x accuracy on the answers that do not "
    "copy. Columns give run / {reference} (%), then the paired difference (points) with its 95% "
    "t-interval over seeds. The difference of pass@1 splits exactly into cue avoidance "
    "((1 - copy share) difference x {reference}'s accuracy) and accuracy (the run's 1 - copy "
    "share x the accuracy difference); avoidance share: the mean avoidance part over the mean "
    "difference of pass@1."
)


def to_markdown(rows: pd.DataFrame, title: str, names: RunNames = None) -> str:
    reference = method_name(rows.reference.iloc[0], names) if len(rows) else "the reference"
    lines = [
        f"### {title}",
        "",
        "| Base model | Run | pass@1 | 1 - copy share | accuracy on non-copies | pass@1 difference "
        "| 1 - copy share difference | accuracy difference | cue avoidance part | accuracy part "
        "| avoidance share | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows.to_dict("records"):
        share = row["avoidance_share"]
        lines.append(
            f"| {row['block']} | {method_name(row['run'], names)} | {_pair(row, 'pass')} "
            f"| {_pair(row, 'non_copy')} | {_pair(row, 'accuracy')} | {_cell(row, 'd_pass')} "
            f"| {_cell(row, 'd_non_copy')} | {_cell(row, 'd_accuracy')} "
            f"| {_cell(row, 'avoidance')} | {_cell(row, 'accuracy_part')} "
            f"| {f'{share:.0%}' if math.isfinite(share) else 'n/a'} | {row['seeds']} |"
        )
    return "\n".join(lines + ["", CAPTION.format(reference=reference), ""])


def write_decomposition(
    paths: list[str | Path],
    problems: dict[str, Problem],
    *,
    reference: str,
    benchmark: str,
    md: str | Path,
    csv: str | Path,
    names: RunNames = None,
) -> pd.DataFrame:
    """Write the decomposition table (Markdown and CSV) of every run against ``reference``."""
    rows = decomposition_rows(values_by_seed(paths, problems, benchmark), reference)
    if rows.empty:
        raise ValueError(f"decomposition: no run beside {reference!r} on {benchmark}")
    Path(md).parent.mkdir(parents=True, exist_ok=True)
    title = "Cue avoidance or accuracy on the wrong-bet split, each run against " + method_name(
        reference, names
    )
    Path(md).write_text(to_markdown(rows, title, names))
    rows.to_csv(csv, index=False, float_format="%.4f")
    return rows
