"""The mechanism table: what each model does with the testbed's cue (``gc2po.testbed.mechanism``:
process validity, copy share, pass@1 with and without a bet on ``test_id``; pass@1 and copy share
on ``test_wrongbet``), per base model and model, from the per-sample evaluation files and the
splits' problems.

A cell is the mean over seeds of the per-seed value (%) with its 95% Student-t interval over seeds
(``gc2po.reporting.stats.seed_interval``); a trained model's cell adds the paired difference to
its base model, seed by seed (the base evaluated with the same sampling seed), with the t-interval
of those differences. The CSV holds every number, the per-seed values included.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

from gc2po import layout
from gc2po.reporting import table_format
from gc2po.reporting.names import RunNames, benchmark_name, method_name, method_order
from gc2po.reporting.stats import seed_interval
from gc2po.testbed.generator import Problem
from gc2po.testbed.mechanism import VALID_STEPS, Measure, annotate, measures_of, seed_measures

# (base model, model) -> measure key -> seed -> value (a fraction; NaN where it includes no sample)
Values = dict[tuple[str, str], dict[str, dict[int, float]]]
SAMPLE_FIELDS = ("problem_id", "completion", "correct", "process_validity")
CSV_COLUMNS = [
    "block",
    "model",
    "split",
    "measure",
    "mean",
    "ci_low",
    "ci_high",
    "diff",
    "diff_ci_low",
    "diff_ci_high",
    "seeds",
    "paired_seeds",
    "seed_values",
]


def read_samples(path: str | Path) -> list[dict]:
    """A testbed per-sample evaluation file; a row without the fields the measures read fails,
    naming the file, the row and the field."""
    rows = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: row {number}: invalid JSON: {err}") from err
        missing = [key for key in SAMPLE_FIELDS if key not in record]
        if missing:
            raise ValueError(
                f"{path}: row {number}: missing {missing} (not a testbed evaluation record)"
            )
        rows.append(record)
    if not rows:
        raise ValueError(f"{path}: no samples")
    return rows


def seed_values(paths: list[str | Path], problems: dict[str, dict[str, Problem]]) -> Values:
    """Every measure's per-seed value of every (base, model) evaluated in ``paths`` (per-sample
    files of the results layout), on the splits of ``problems`` (split -> id -> Problem)."""
    by_seed: dict[tuple[str, str, int], dict[str, list[dict]]] = defaultdict(dict)
    for path in paths:
        key = layout.EvalFile.parse(path)
        if key.benchmark not in problems:
            continue
        try:
            annotated = annotate(read_samples(path), problems[key.benchmark])
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from err
        by_seed[(key.base, key.model, int(key.seed))][key.benchmark] = annotated
    values: Values = defaultdict(lambda: defaultdict(dict))
    for (base, model, seed), splits in sorted(by_seed.items()):
        for measure, value in seed_measures(splits).items():
            values[(base, model)][measure][seed] = value
    return {key: dict(measures) for key, measures in values.items()}


def percent_interval(values: list[float], share: bool = False) -> tuple[float, float, float]:
    """(mean, low, high) in % of ``values`` [S]: NaN throughout when no value is finite. A
    ``share`` (a fraction, not a difference of two) has its interval clipped to [0, 100], as the
    figures clip their bands: a t-interval over 3 seeds can reach past what a share can be."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return (math.nan,) * 3
    mean, low, high = 100 * np.array(seed_interval(finite))
    if share:
        low, high = np.clip([low, high], 0, 100)  # NaN (one seed) stays NaN
    return float(mean), float(low), float(high)


def measure_row(block: str, model: str, measure: Measure, mine: dict, base: dict) -> dict:
    """One CSV row: ``mine`` and ``base`` map seed -> value of ``measure``."""
    row = {"block": block, "model": model, "split": measure.split, "measure": measure.name}
    row.update(zip(("mean", "ci_low", "ci_high"), percent_interval(list(mine.values()), True)))
    paired = sorted(set(mine) & set(base)) if model != "base" else []
    if paired:
        differences = [mine[s] - base[s] for s in paired]
        row.update(zip(("diff", "diff_ci_low", "diff_ci_high"), percent_interval(differences)))
    row.update(
        seeds=",".join(map(str, sorted(mine))),
        paired_seeds=",".join(map(str, paired)),
        seed_values=";".join(f"{s}:{100 * v:.4f}" for s, v in sorted(mine.items())),
    )
    return row


def mechanism_rows(values: Values, measures: list[Measure]) -> pd.DataFrame:
    """Every cell, one row per (block, model, measure): base first, then the runs in the tables'
    order."""
    rows = []
    for block in dict.fromkeys(sorted(block for block, _ in values)):
        models = [m for b, m in values if b == block and m != "base"]
        base = values.get((block, "base"), {})
        for model in ["base"] * ((block, "base") in values) + method_order(models):
            mine = values[(block, model)]
            for measure in measures:
                if measure.key in mine:
                    rows.append(
                        measure_row(
                            block, model, measure, mine[measure.key], base.get(measure.key, {})
                        )
                    )
    return pd.DataFrame(rows).reindex(columns=CSV_COLUMNS)


def _number(x: float, sign: bool = False) -> str:
    if not math.isfinite(x):
        return "n/a"
    return table_format.signed(x) if sign else table_format.value(x)


def cell_text(row) -> str:
    """``30.0 [28.1, 31.9]``, a trained row adding ``(+2.0 [+0.1, +3.9])``; n/a where undefined."""
    text = f"{_number(row['mean'])} [{_number(row['ci_low'])}, {_number(row['ci_high'])}]"
    if pd.notna(row.get("diff")):
        text += (
            f" ({_number(row['diff'], True)} [{_number(row['diff_ci_low'], True)}, "
            f"{_number(row['diff_ci_high'], True)}])"
        )
    return text


def column_name(measure: Measure) -> str:
    return f"{benchmark_name(measure.split)}: {measure.label}"


CAPTION = (
    "Cells: mean over seeds of each seed's value (%), with its 95% t-interval over seeds (Student "
    "t, S - 1 degrees of freedom, clipped to [0, 100]; none from one seed); for a trained model, "
    "in parentheses, the mean paired difference to its base model (the same seeds) with its 95% "
    "t-interval. Process validity: the oracle's mean process validity. Copy share: the share of "
    "completions of problems with a bet whose boxed answer is the bet's number and whose steps do "
    f"not derive it (process validity below {VALID_STEPS}). Cued / uncued pass@1: pass@1 on the "
    "problems with / without a bet. Every bet of the wrong-bet split is wrong."
)


def to_markdown(rows: pd.DataFrame, measures: list[Measure], title: str, names: RunNames = None):
    header = ["Model"] + [column_name(m) for m in measures]
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (block, model), cells in rows.groupby(["block", "model"], sort=False):
        by_measure = {(r["split"], r["measure"]): r for r in cells.to_dict("records")}
        label = f"{block} (base)" if model == "base" else f"+ {method_name(model, names)}"
        texts = [
            cell_text(by_measure[(m.split, m.name)]) if (m.split, m.name) in by_measure else ""
            for m in measures
        ]
        lines.append("| " + " | ".join([label.replace("|", "\\|")] + texts) + " |")
    return "\n".join(lines + ["", CAPTION, ""])


def write_mechanism(
    paths: list[str | Path],
    problems: dict[str, dict[str, Problem]],
    *,
    md: str | Path,
    csv: str | Path,
    title: str = "What each model does with the cue",
    names: RunNames = None,
) -> pd.DataFrame:
    """Write the mechanism table (Markdown and CSV) of the evaluation files ``paths`` on the
    splits of ``problems``; returns its rows."""
    measures = measures_of(problems)
    if not measures:
        raise ValueError(f"mechanism: no measure on the splits {sorted(problems)}")
    rows = mechanism_rows(seed_values(paths, problems), measures)
    if rows.empty:
        raise ValueError(f"mechanism: no evaluation of the splits {sorted(problems)} in the files")
    Path(md).parent.mkdir(parents=True, exist_ok=True)
    Path(md).write_text(to_markdown(rows, measures, title, names))
    rows.to_csv(csv, index=False, float_format="%.4f")
    return rows
