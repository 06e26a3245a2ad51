"""A family of comparisons fixed before the runs (``report.families``): several runs, each against
one reference on one split, with Holm's correction over the family's comparisons (not over the
splits of one comparison, as ``gc2po.reporting.comparison`` does) and, where a margin is given,
an equivalence verdict.

Per base model (block) and run ``a`` of the family, against the reference ``b``: the paired
difference of pass@1 on the split (mean over seeds of each seed's mean over problems of a - b),
its 95% t-interval over seeds and the paired t-test; Holm's step-down correction over the
family's runs of that block. The verdict of a row:

    "higher (Holm)"  / "lower (Holm)"    the t-test survives Holm at 5%, by the sign of a - b
    "within +-m"                           not surviving, and the whole interval inside [-m, m]
    "not decided"                          neither

``within +-m`` is the two one-sided tests' reading of an equivalence margin m (points of pass@1)
at the interval's level: a claim "a is at b's level" needs it, not the absence of a Holm mark.
Reads the per-sample evaluation files of ``gc2po.reporting.tables``; writes Markdown and CSV.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gc2po.reporting.captions import HOLM_ALPHA, holm_verdicts, interval_text
from gc2po.reporting.comparison import difference_text, p_text, pairs
from gc2po.reporting.names import RunNames, benchmark_name, method_name
from gc2po.reporting.stats import (
    paired_interval,
    paired_macro_test,
    paired_test_of_differences,
    t_interval,
)
from gc2po.reporting.table_format import value
from gc2po.reporting.tables import EvalFile

COLUMNS = [
    "block",
    "run",
    "reference",
    "benchmark",
    "mean_run",
    "mean_reference",
    "diff",
    "diff_ci_low",
    "diff_ci_high",
    "t_p",
    "holm_p",
    "holm_survives",
    "verdict",
    "seeds",
    "problems",
]
HIGHER, LOWER, WITHIN, UNDECIDED = "higher (Holm)", "lower (Holm)", "within +-{m}", "not decided"


@dataclass(frozen=True)
class Family:
    """One entry of ``report.families``: ``runs`` each against ``reference`` on ``benchmark``."""

    name: str
    benchmark: str
    reference: str
    runs: tuple[str, ...]
    margin: float | None = None  # points of the measure; None: no equivalence verdict
    preregistered: str | None = None  # the committed file that fixed the family before the runs
    measure: str = "pass@1"  # or "copy_share": the share of answers that copy the bet (testbed)

    @classmethod
    def from_mapping(cls, spec: dict) -> Family:
        return cls(
            name=spec["name"],
            benchmark=spec["benchmark"],
            reference=spec["reference"],
            runs=tuple(spec["runs"]),
            margin=None if spec.get("margin") is None else float(spec["margin"]),
            preregistered=spec.get("preregistered"),
            measure=spec.get("measure", "pass@1"),
        )


def verdict(diff: float, low: float, high: float, survives: str, margin: float | None) -> str:
    """A row's reading (module docstring); differences, interval and margin in points."""
    if survives == "yes":
        return HIGHER if diff > 0 else LOWER
    if margin is not None and -margin <= low and high <= margin:  # False for a NaN interval
        return WITHIN.format(m=f"{margin:g}")
    return UNDECIDED


def compare_family(
    files: list[EvalFile], family: Family, problems: dict | None = None
) -> pd.DataFrame:
    """Rows (block, run): the measure (%) of the run and of the reference on the family's split,
    the difference with its t-interval, the t-test's p, Holm's over the block's runs, the
    verdict. A ``copy_share`` family reads the split's ``problems`` (id -> testbed Problem)."""
    if family.measure == "copy_share":
        if problems is None:
            raise ValueError(f"family {family.name}: measure copy_share needs the split's problems")
        blocks = copy_share_rows(files, family, problems)
    elif family.measure == "pass@1":
        blocks = pass_rows(files, family)
    else:
        raise ValueError(
            f"family {family.name}: measure must be pass@1 or copy_share, got {family.measure!r}"
        )
    return holm_rows(blocks, family)


def pass_rows(files: list[EvalFile], family: Family) -> dict[str, list[dict]]:
    """Per block, a row per run: pass@1 paired with the reference's on the same problems."""
    blocks: dict[str, list[dict]] = {}
    for run in family.runs:
        for pair in pairs(files, run, family.reference, [family.benchmark]):
            test = paired_macro_test(pair.a, pair.b)
            diff = 100 * np.array(paired_interval(pair.a, pair.b))
            blocks.setdefault(pair.block, []).append(
                {
                    "block": pair.block,
                    "run": run,
                    "reference": family.reference,
                    "benchmark": family.benchmark,
                    "mean_run": 100 * float(pair.a[0].mean()),
                    "mean_reference": 100 * float(pair.b[0].mean()),
                    "diff": diff[0],
                    "diff_ci_low": diff[1],
                    "diff_ci_high": diff[2],
                    "t_p": test.t_p_value,
                    "seeds": ",".join(map(str, pair.seeds)),
                    "problems": pair.problems[0],
                }
            )
    return blocks


def copy_share_rows(files: list[EvalFile], family: Family, problems: dict) -> dict[str, list]:
    """Per block, a row per run: its copy share of the split's bets (``gc2po.testbed.mechanism``),
    seed by seed, paired with the reference's on the seeds both have."""
    from gc2po.reporting.mechanism import seed_values

    key = f"{family.benchmark}:copy_share"
    wanted = [f for f in files if f.benchmark == family.benchmark]
    values = seed_values([str(f.path) for f in wanted], {family.benchmark: problems})
    blocks: dict[str, list[dict]] = {}
    for block in sorted({b for b, _ in values}):
        reference = values.get((block, family.reference), {}).get(key, {})
        for run in family.runs:
            mine = values.get((block, run), {}).get(key, {})
            seeds = sorted(set(mine) & set(reference))
            if not seeds:
                raise ValueError(
                    f"family {family.name}: {block}: {run} and {family.reference} share no seed "
                    f"evaluated on {family.benchmark}"
                )
            differences = np.array([mine[s] - reference[s] for s in seeds])
            diff = 100 * np.array(t_interval(differences))
            blocks.setdefault(block, []).append(
                {
                    "block": block,
                    "run": run,
                    "reference": family.reference,
                    "benchmark": family.benchmark,
                    "mean_run": 100 * float(np.mean([mine[s] for s in seeds])),
                    "mean_reference": 100 * float(np.mean([reference[s] for s in seeds])),
                    "diff": diff[0],
                    "diff_ci_low": diff[1],
                    "diff_ci_high": diff[2],
                    "t_p": paired_test_of_differences(differences).t_p_value,
                    "seeds": ",".join(map(str, seeds)),
                    "problems": len(problems),
                }
            )
    return blocks


def holm_rows(blocks: dict[str, list[dict]], family: Family) -> pd.DataFrame:
    """Holm's correction over each block's rows, and each row's verdict."""
    rows = []
    for block_rows in blocks.values():
        adjusted, survives = holm_verdicts([row["t_p"] for row in block_rows])
        for row, p, verdict_ in zip(block_rows, adjusted, survives):
            row.update(
                holm_p=p,
                holm_survives=verdict_,
                verdict=verdict(
                    row["diff"], row["diff_ci_low"], row["diff_ci_high"], verdict_, family.margin
                ),
            )
        rows += block_rows
    return pd.DataFrame(rows, columns=COLUMNS)


def to_markdown(rows: pd.DataFrame, family: Family, names: RunNames = None) -> str:
    reference = method_name(family.reference, names)
    split = benchmark_name(family.benchmark)
    seeds = sorted({len(s.split(",")) for s in rows.seeds})
    measure = "copy share" if family.measure == "copy_share" else "pass@1"
    lines = [
        f"### {family.name}: each run - {reference} on {split}, {measure} (%)",
        "",
        f"| Base model | Run | Run's {measure} | {reference} | difference [95% CI] | paired t p "
        f"| Holm p ({len(family.runs)} runs) | verdict | seeds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows.itertuples():
        lines.append(
            f"| {row.block} | {method_name(row.run, names)} | {value(row.mean_run)} | "
            f"{value(row.mean_reference)} | {difference_text(row)} | {p_text(row.t_p)} | "
            f"{p_text(row.holm_p)} | "
            f"{row.verdict} | {row.seeds} |"
        )
    margin = (
        f"; within +-{family.margin:g}: not surviving Holm, and the whole interval inside "
        f"[-{family.margin:g}, +{family.margin:g}] points (the equivalence margin)"
        if family.margin is not None
        else ""
    )
    origin = (
        f"Pre-registered in `{family.preregistered}`: the runs, reference, split, seeds and margin "
        "were committed before any of these runs was trained."
        if family.preregistered
        else "Exploratory: this family was not fixed before the runs."
    )
    intervals = " / ".join(interval_text(count) for count in seeds if count > 1) or "no CI"
    copy = (
        " Copy share: the share of answers whose boxed number is the problem's bet and whose "
        "steps do not derive it (process validity below 0.5), per seed."
        if family.measure == "copy_share"
        else ""
    )
    lines += [
        "",
        f"Same seeds and problems for each run and {reference}.{copy} Difference: the mean over "
        f"seeds of each seed's mean difference, in brackets its {intervals} (Student t over the "
        f"per-seed differences). Holm: the paired t-test's p adjusted over the family's "
        f"{len(family.runs)} comparisons of a base model, at {HOLM_ALPHA:.0%}. Verdict: higher "
        f"or lower when it survives Holm{margin}; otherwise not decided. {origin}",
    ]
    return "\n".join(lines) + "\n"


def write_family(
    files: list[EvalFile],
    family: Family,
    *,
    md: Path,
    csv: Path,
    names: RunNames = None,
    problems: dict | None = None,
) -> pd.DataFrame:
    rows = compare_family(files, family, problems)
    Path(md).parent.mkdir(parents=True, exist_ok=True)
    Path(md).write_text(to_markdown(rows, family, names))
    rows.to_csv(csv, index=False, float_format="%.4f")
    return rows
