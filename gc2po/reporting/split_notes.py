"""What a table says about each testbed split it shows: its chance level (a question-blind guesser
drawing from the train answers) and whether the train split can teach it, both read from the
evaluation summaries (``chance_level``, ``reachable``: ``gc2po.testbed.chance``). Benchmarks whose
summaries carry neither (every non-testbed benchmark) get no note.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from gc2po.layout import EvalFile, summary_path
from gc2po.reporting.names import benchmark_name

KEYS = ("chance_level", "reachable")
NOT_LEARNABLE = "not learnable from the train split"  # gc2po.testbed.chance.NOT_LEARNABLE


def split_labels(paths: list[str | Path]) -> dict[str, dict]:
    """Benchmark -> ``{"chance_level", "reachable"}`` from the summaries beside the per-sample
    files ``paths`` (a file without one, which a comparison can be made from, adds nothing); the
    summaries of one benchmark must agree (the same data)."""
    labels: dict[str, dict] = {}
    first: dict[str, Path] = {}
    for path in paths:
        summary = summary_path(path)
        if not summary.exists():
            continue
        try:
            found = json.loads(summary.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ValueError(f"{summary}: cannot read the evaluation summary: {err}") from err
        if not all(key in found for key in KEYS):
            continue
        benchmark = EvalFile.parse(path).benchmark
        mine = {key: found[key] for key in KEYS}
        if labels.setdefault(benchmark, mine) != mine:
            raise ValueError(
                f"{benchmark}: evaluation summaries disagree on the split's labels: "
                f"{first[benchmark]} has {labels[benchmark]}, {summary} has {mine}"
            )
        first.setdefault(benchmark, summary)
    return labels


def note(labels: dict[str, dict], benchmarks: list[str]) -> str:
    """What the labels say about ``benchmarks``, in words ("" when none has labels)."""
    shown = [b for b in benchmarks if b in labels]
    if not shown:
        return ""
    chance = ", ".join(f"{benchmark_name(b)} {100 * labels[b]['chance_level']:.1f}%" for b in shown)
    unreachable = [benchmark_name(b) for b in shown if not labels[b]["reachable"]]
    return f"chance level (a question-blind guesser drawing from the train answers): {chance}" + (
        f"; {NOT_LEARNABLE}: {', '.join(unreachable)}" if unreachable else ""
    )


def caption(labels: dict[str, dict], benchmarks: list[str]) -> str:
    """:func:`note` to append to a caption's last clause ("; chance level ..."), or ""."""
    text = note(labels, benchmarks)
    return f"; {text}" if text else ""


def sentence(labels: dict[str, dict], benchmarks: list[str]) -> str:
    """:func:`note` as a sentence of its own ("Chance level ... ."), or ""."""
    text = note(labels, benchmarks)
    return f"{text[0].upper()}{text[1:]}." if text else ""


def with_columns(rows: pd.DataFrame, labels: dict[str, dict]) -> pd.DataFrame:
    """``rows`` (a ``benchmark`` column) with ``chance_level`` (%) and ``reachable`` columns
    (empty for rows of benchmarks without labels, such as the Average)."""
    if not labels:
        return rows
    chance = {b: 100 * label["chance_level"] for b, label in labels.items()}
    reachable = {b: label["reachable"] for b, label in labels.items()}
    return rows.assign(
        chance_level=rows.benchmark.map(chance), reachable=rows.benchmark.map(reachable)
    )
