"""The reasoning table (``evaluate.reasoning``): on the problems without a bet of ``test_id`` and
on the new compositions (``test_compose``), per base model and model, greedy pass@1, pass@k
from n samples (``gc2po.reporting.pass_at_k``), and the shares of sampled completions with no
parseable final answer and cut by the length limit; each split's chance level.

A cell is the mean over seeds of the per-seed value (%) with its 95% t-interval over seeds, and
for a trained model the paired difference to its base model, as in the mechanism table
(``gc2po.reporting.mechanism.measure_row``). The CSV holds every number, per-seed values
included.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gc2po import layout
from gc2po.reporting.mechanism import cell_text, mechanism_rows, read_samples
from gc2po.reporting.names import RunNames, benchmark_name, method_name
from gc2po.reporting.pass_at_k import mean_pass_at_k, parse_failure_share, truncation_share
from gc2po.reporting.table_format import value as format_value
from gc2po.testbed.chance import chance_level
from gc2po.testbed.generator import Problem
from gc2po.testbed.mechanism import annotate

GREEDY = "greedy_pass@1"
PARSE_FAILURE = "parse_failure"
TRUNCATED = "truncated"


@dataclass(frozen=True)
class Column:
    """One measure of one split (``measure_row`` reads ``split`` and ``name``)."""

    split: str
    name: str
    label: str

    @property
    def key(self) -> str:
        return f"{self.split}:{self.name}"


def columns(split: str, ks: list[int]) -> list[Column]:
    """The table's columns of ``split``: greedy pass@1, pass@k for each k, the two shares."""
    return (
        [Column(split, GREEDY, "greedy pass@1")]
        + [Column(split, f"pass@{k}", f"pass@{k}") for k in ks]
        + [
            Column(split, PARSE_FAILURE, "no parseable answer"),
            Column(split, TRUNCATED, "truncated"),
        ]
    )


def uncued(samples: list[dict], problems: dict[str, Problem]) -> list[dict]:
    """The samples [N] of problems without a bet, annotated (``cue_fields``: answer, cued)."""
    return [s for s in annotate(samples, problems) if not s["cued"]]


def seed_measures(sampled: list[dict], greedy: list[dict], split: str, ks: list[int]) -> dict:
    """Column key -> value (a fraction) for one seed of one model on ``split``: ``sampled`` (n
    per problem) and ``greedy`` (one per problem) annotated samples of the uncued problems."""
    if not sampled or not greedy:
        raise ValueError(f"reasoning: {split}: no sample of a problem without a bet")
    out = {f"{split}:{GREEDY}": sum(bool(s["correct"]) for s in greedy) / len(greedy)}
    out.update({f"{split}:pass@{k}": mean_pass_at_k(sampled, k) for k in ks})
    out[f"{split}:{PARSE_FAILURE}"] = parse_failure_share(sampled)
    out[f"{split}:{TRUNCATED}"] = truncation_share(sampled)
    return out


def seed_values(
    sampled_paths: list, greedy_paths: list, problems: dict[str, dict[str, Problem]], ks: list[int]
) -> dict:
    """(base, model) -> column key -> seed -> value, from the per-sample files of the sampled and
    the greedy evaluation roots (the same (base, model, seed, split) in each)."""
    files: dict[tuple, dict[str, list]] = defaultdict(dict)
    for kind, paths in (("sampled", sampled_paths), ("greedy", greedy_paths)):
        for path in paths:
            key = layout.EvalFile.parse(path)
            if key.benchmark not in problems:
                raise ValueError(f"{path}: {key.benchmark} is not a split of the table")
            try:
                samples = uncued(read_samples(path), problems[key.benchmark])
            except ValueError as err:
                raise ValueError(f"{path}: {err}") from err
            files[(key.base, key.model, int(key.seed), key.benchmark)][kind] = samples
    values: dict = defaultdict(lambda: defaultdict(dict))
    for (base, model, seed, split), kinds in sorted(files.items()):
        missing = sorted({"sampled", "greedy"} - set(kinds))
        if missing:
            raise ValueError(f"reasoning: {base}/{model}/seed{seed}/{split}: no {missing[0]} file")
        measures = seed_measures(kinds["sampled"], kinds["greedy"], split, ks)
        for column, value in measures.items():
            values[(base, model)][column][seed] = value
    return {key: dict(measures) for key, measures in values.items()}


def reasoning_rows(values: dict, splits: list[str], ks: list[int]) -> pd.DataFrame:
    """One row per (block, model, column): base first, then the runs in the tables' order."""
    return mechanism_rows(values, [column for split in splits for column in columns(split, ks)])


def split_title(split: str) -> str:
    return f"{benchmark_name(split)}" + (", problems without a bet" if split == "test_id" else "")


def caption(n: int, ks: list[int], chances: dict[str, float]) -> str:
    chance = "; ".join(f"{split_title(s)}: {format_value(100 * c)}%" for s, c in chances.items())
    return (
        "Cells: mean over seeds of each seed's value (%), with its 95% t-interval over seeds "
        "(clipped to [0, 100]; none from one seed); for a trained model, in parentheses, the "
        "mean paired difference to its base model (the same seeds) with its 95% t-interval. "
        "Greedy pass@1: one completion per problem at temperature 0. pass@k: the unbiased "
        f"estimator 1 - C(n-c, k)/C(n, k) (Chen et al. 2021) from n = {n} samples per problem at "
        "the evaluation's temperature, averaged over problems; pass@1 is the mean correct share. "
        "No parseable answer: sampled completions without a \\boxed{} integer. Truncated: "
        "sampled completions cut by max_new_tokens. Only problems without a bet are evaluated. "
        "New compositions: every step (operation and operand) at its episode tag, every pair of "
        "adjacent steps, the start and every value occur in the train split; no run of three "
        "consecutive steps does. Chance level (a question-blind guesser drawing from the train "
        f"answers, gc2po.testbed.chance): {chance}."
    )


def to_markdown(rows: pd.DataFrame, splits, ks, title: str, names: RunNames, note: str) -> str:
    lines = [f"### {title}", ""]
    for split in splits:
        split_columns = columns(split, ks)
        header = ["Model"] + [c.label for c in split_columns]
        lines += [f"#### {split_title(split)}", ""]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        mine = rows[rows["split"] == split]
        for (block, model), cells in mine.groupby(["block", "model"], sort=False):
            by_name = {r["measure"]: r for r in cells.to_dict("records")}
            label = f"{block} (base)" if model == "base" else f"+ {method_name(model, names)}"
            texts = [cell_text(by_name[c.name]) if c.name in by_name else "" for c in split_columns]
            lines.append("| " + " | ".join([label.replace("|", "\\|")] + texts) + " |")
        lines.append("")
    return "\n".join(lines + [note, ""])


def chance_levels(
    problems: dict[str, dict[str, Problem]], train: list[dict], splits: list[str]
) -> dict[str, float]:
    """Each split's chance level over its problems without a bet (what the table evaluates)."""
    return {
        split: chance_level([p.record() for p in problems[split].values() if p.cue is None], train)
        for split in splits
    }


def write_reasoning(
    sampled_paths: list,
    greedy_paths: list,
    problems: dict[str, dict[str, Problem]],
    train: list[dict],
    *,
    ks: list[int],
    n: int,
    md: str | Path,
    csv: str | Path,
    title: str = "Reasoning without the cue: greedy and pass@k",
    names: RunNames = None,
) -> pd.DataFrame:
    """Write the reasoning table (Markdown and CSV); returns its rows."""
    splits = list(problems)
    ks = sorted(set(ks))
    rows = reasoning_rows(seed_values(sampled_paths, greedy_paths, problems, ks), splits, ks)
    if rows.empty:
        raise ValueError(f"reasoning: no evaluation of the splits {splits} in the files")
    chances = chance_levels(problems, train, splits)
    rows["chance_level"] = rows["split"].map(lambda s: 100 * chances[s])
    Path(md).parent.mkdir(parents=True, exist_ok=True)
    Path(md).write_text(to_markdown(rows, splits, ks, title, names, caption(n, ks, chances)))
    rows.to_csv(csv, index=False, float_format="%.4f")
    return rows
