"""Table 1 layout (the paper's) from per-sample evaluation files.

One block per base model. Rows: the base model, then "+ method" in the paper's order; columns:
benchmarks in the config's order and their Average (the mean of the benchmark means). Every
cell holds the mean pass@1 (%) over seeds and problems with its 95% t-interval over the
per-seed means (``gc2po.reporting.stats``: an interval for these problems); a trained row's
cell adds the paired difference to the base model with the t-interval of the per-seed
differences, marked where its paired t-test survives Holm's correction over the row's
benchmarks (the Average is not in the family). The CSV holds every number (means, intervals,
paired differences, the paired t-test and sign-flip p-values across seeds, Holm-adjusted p,
seeds, problems, source files) and names the interval and the family; Markdown, LaTeX and HTML
render it (``gc2po.reporting.table_format``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gc2po import layout
from gc2po.reporting import captions, split_notes, table_format
from gc2po.reporting.names import RunNames, benchmark_order, method_order
from gc2po.reporting.stats import (
    check_graded,
    mean_interval,
    paired_interval,
    paired_macro_test,
    problem_pass_at_1,
)

AVERAGE = "Average"


@dataclass(frozen=True)
class EvalFile:
    block: str  # the base model the row belongs to
    model: str  # "base" or a run (method) name
    seed: int
    benchmark: str
    path: Path

    @classmethod
    def from_path(cls, path: str | Path) -> EvalFile:
        """An evaluation file of the results layout (``gc2po.layout.EvalFile``)."""
        key = layout.EvalFile.parse(path)
        return cls(key.base, key.model, key.seed, key.benchmark, Path(path))

    @property
    def summary_path(self) -> Path:
        return layout.summary_path(self.path)


def find_eval_files(
    eval_dir: str | Path, methods: list[str] | None = None, benchmarks: list[str] | None = None
) -> tuple[list[EvalFile], list[str], list[str]]:
    """Evaluation files under ``eval_dir`` (an evaluation root of the results layout) and the
    methods and benchmarks to tabulate (default: all found; benchmarks in the paper's order)."""
    found = [EvalFile.from_path(p) for p in sorted(Path(eval_dir).glob(layout.EvalFile.GLOB))]
    if not found:
        raise ValueError(f"--eval-dir: no {layout.EvalFile.shown()} files under {eval_dir}")
    methods = methods or method_order(sorted({f.model for f in found} - {"base"}))
    benchmarks = benchmarks or benchmark_order(sorted({f.benchmark for f in found}))
    for name, wanted, have in (
        ("--methods", methods, {f.model for f in found}),
        ("--benchmarks", benchmarks, {f.benchmark for f in found}),
    ):
        missing = sorted(set(wanted) - have)
        if missing:
            raise ValueError(f"{name}: no evaluation files for {missing} under {eval_dir}")
    files = [f for f in found if f.model in {"base", *methods} and f.benchmark in benchmarks]
    return files, methods, benchmarks


def problem_scores(path: Path) -> dict[str, float]:
    """Per-problem pass@1 of a per-sample JSONL file, every row checked first."""
    samples = []
    with Path(path).open() as handle:
        for row, line in enumerate(handle, 1):
            try:
                record = json.loads(line)
                sample = {"correct": record["correct"], "problem_id": record["problem_id"]}
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                raise ValueError(f"{path}: row {row}: not a per-sample record ({err!r})") from err
            check_graded(record, f"{path}: row {row}")
            if sample["correct"] not in (0, 1):  # true/false or 0/1; anything else is not a grade
                raise ValueError(
                    f"{path}: row {row}: 'correct' must be true/false or 0/1, "
                    f"got {sample['correct']!r}"
                )
            samples.append(sample)
    if not samples:
        raise ValueError(f"{path}: no samples")
    return problem_pass_at_1(samples)


class Scores:
    """Per-problem scores of every (block, model, benchmark, seed) in a set of eval files."""

    def __init__(self, files: list[EvalFile]):
        self.by_cell: dict[tuple[str, str, str], dict[int, dict[str, float]]] = defaultdict(dict)
        self.sources: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        for f in sorted(files, key=lambda f: (f.block, f.model, f.benchmark, f.seed)):
            self.by_cell[(f.block, f.model, f.benchmark)][f.seed] = problem_scores(f.path)
            self.sources[(f.block, f.model, f.benchmark)].append(str(f.path))

    def seeds(self, block: str, model: str, benchmarks: list[str]) -> list[int]:
        """Seeds that every benchmark of the row has."""
        sets = [set(self.by_cell.get((block, model, b), {})) for b in benchmarks]
        return sorted(set.intersection(*sets)) if sets else []

    def array(
        self, block: str, model: str, benchmark: str, seeds: list[int], problems: list[str]
    ) -> np.ndarray:
        """``[S, P]`` scores over ``seeds`` and ``problems``."""
        by_seed = self.by_cell[(block, model, benchmark)]
        return np.array([[by_seed[s][p] for p in problems] for s in seeds])

    def problems(
        self, block: str, benchmark: str, models: list[str], seeds: list[int]
    ) -> list[str]:
        """The problems of ``benchmark``, which every model must have on every one of ``seeds``:
        pairing across seeds and models needs the same problems (different data is a mistake)."""
        first = set(self.by_cell[(block, models[0], benchmark)][seeds[0]])
        for m in models:
            for s in seeds:
                if set(self.by_cell[(block, m, benchmark)][s]) != first:
                    raise ValueError(
                        f"table: {block}/{m} seed {s} was evaluated on other {benchmark} "
                        "problems than "
                        f"{block}/{models[0]} seed {seeds[0]}: {self.path(block, m, benchmark, s)}"
                    )
        return sorted(first)

    def path(self, block: str, model: str, benchmark: str, seed: int) -> str:
        return next(
            p
            for p in self.sources[(block, model, benchmark)]
            if layout.EvalFile.parse(p).seed == seed
        )


def _row_cells(
    scores: Scores, block: str, model: str, benchmarks: list[str], base_seeds: list[int]
) -> list[dict]:
    """The CSV rows of one (block, model): one per benchmark, then the Average."""
    seeds = scores.seeds(block, model, benchmarks)
    if not seeds:
        raise ValueError(
            f"table: {block}/{model} has no seed evaluated on every one of {benchmarks}"
        )
    paired_seeds = [s for s in seeds if s in base_seeds]
    trained = model != "base"
    if trained and not paired_seeds:
        raise ValueError(
            f"table: {block}/{model} shares no seed with the base model ({seeds} vs {base_seeds})"
        )
    # own: [S, P] per benchmark; mine, theirs: the row's and the base's on their shared seeds
    rows, own, mine, theirs = [], [], [], []
    for benchmark in benchmarks:
        problems = scores.problems(block, benchmark, [model], seeds)
        own.append(scores.array(block, model, benchmark, seeds, problems))
        if trained:
            common = scores.problems(block, benchmark, [model, "base"], paired_seeds)
            mine.append(scores.array(block, model, benchmark, paired_seeds, common))
            theirs.append(scores.array(block, "base", benchmark, paired_seeds, common))
        rows.append(
            {
                "benchmark": benchmark,
                "problems": len(problems),
                "sources": ";".join(scores.sources[(block, model, benchmark)]),
            }
        )
    rows.append({"benchmark": AVERAGE, "problems": sum(r["problems"] for r in rows), "sources": ""})
    for i, row in enumerate(rows):
        part = (
            slice(i, i + 1) if row["benchmark"] != AVERAGE else slice(None)
        )  # the Average uses every benchmark
        row.update(block=block, model=model, seeds=",".join(map(str, seeds)))
        row.update(zip(("mean", "ci_low", "ci_high"), 100 * np.array(mean_interval(own[part]))))
        row["interval"] = captions.interval_text(len(seeds))
        if trained:
            row["paired_seeds"] = ",".join(map(str, paired_seeds))
            row.update(
                zip(
                    ("diff", "diff_ci_low", "diff_ci_high"),
                    100 * np.array(paired_interval(mine[part], theirs[part])),
                )
            )
            test = paired_macro_test(mine[part], theirs[part])
            row.update(diff_t_p=test.t_p_value, diff_sign_flip_p=test.sign_flip_p_value)
            row["diff_interval"] = captions.interval_text(len(paired_seeds))
    if trained:  # Holm over the row's benchmarks the train split can teach (not the Average)
        adjusted, verdicts = captions.family_holm([r["diff_t_p"] for r in rows[:-1]], benchmarks)
        family = captions.holm_family_text(benchmarks)
        for row, p, verdict in zip(rows, adjusted, verdicts):
            row.update(diff_holm_p=p, diff_holm_survives=verdict, holm_family=family)
    return rows


CSV_COLUMNS = [
    "block",
    "model",
    "benchmark",
    "mean",
    "ci_low",
    "ci_high",
    "diff",
    "diff_ci_low",
    "diff_ci_high",
    "diff_t_p",
    "diff_sign_flip_p",
    "diff_holm_p",
    "diff_holm_survives",
    "seeds",
    "paired_seeds",
    "problems",
    "interval",
    "diff_interval",
    "holm_family",
    "sources",
]


def cell_table(files: list[EvalFile], order: list[str], benchmarks: list[str]) -> pd.DataFrame:
    """Every cell of the table, one row per (block, model, benchmark or Average)."""
    scores = Scores(files)
    rows = []
    for block in dict.fromkeys(f.block for f in sorted(files, key=lambda f: f.block)):
        base_seeds = scores.seeds(block, "base", benchmarks)
        if not base_seeds:
            raise ValueError(
                f"table: no evaluation of the base model of block {block!r} on every one of "
                f"{benchmarks}"
            )
        for model in ["base"] + method_order([m for m in order if m != "base"]):
            rows += _row_cells(scores, block, model, benchmarks, base_seeds)
    return pd.DataFrame(rows).reindex(columns=CSV_COLUMNS)


def read_protocols(files: list[EvalFile]) -> list[dict]:
    """The evaluation protocol recorded in each file's summary (``gc2po.evaluation.run``)."""
    protocols = []
    for f in files:
        try:
            summary = json.loads(f.summary_path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ValueError(
                f"{f.summary_path}: cannot read the evaluation summary: {err}"
            ) from err
        if "protocol" not in summary:
            raise ValueError(
                f"{f.summary_path}: no 'protocol' (written by an older gc2po; evaluate again)"
            )
        protocols.append(
            {**summary["protocol"], "benchmark": f.benchmark, "file": str(f.summary_path)}
        )
    return protocols


def write_table(
    files: list[EvalFile],
    order: list[str],
    benchmarks: list[str],
    title: str,
    *,
    md: Path,
    tex: Path,
    csv: Path,
    html: Path | None = None,
    label: str = "table",
    names: RunNames = None,
) -> pd.DataFrame:
    """Write the table as Markdown, LaTeX, CSV (and HTML), rows named as ``names`` says (run
    label -> display name, from the plan); returns the cells."""
    if not files:
        raise ValueError("table: no evaluation files")
    labels = split_notes.split_labels([f.path for f in files])  # testbed: chance, reachability
    protocol = captions.protocol_text(read_protocols(files), benchmarks)
    protocol += split_notes.caption(labels, benchmarks)
    cells = split_notes.with_columns(cell_table(files, order, benchmarks), labels)
    outputs = {
        md: table_format.to_markdown(cells, benchmarks, title, protocol, names),
        tex: table_format.to_latex(cells, benchmarks, title, protocol, label, names),
    }
    if html is not None:
        outputs[html] = table_format.to_html(cells, benchmarks, title, protocol, names)
    for path, text in outputs.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    cells.to_csv(csv, index=False, float_format="%.4f")
    return cells
