"""Loaders for every benchmark of the paper and its training sets.

Each benchmark reads its Hub dataset (``datasets.load_dataset``) or a local file/folder
(``.json`` list, ``.jsonl``, ``.parquet``, ``.jsonl.gz``, or a folder holding one, or a
``save_to_disk`` dataset) in the Hub schema, the schema of the vendored mirrors in
``data/benchmarks`` or Qwen2.5-Math's evaluation schema (``problem`` / ``solution`` with the answer
only in the solution's last ``\boxed{}``), and returns normalised records::

    {"id": str, "source": str, "question": str, "answer": str, "meta": {...}}

``meta["grader"]`` names the grader (math, choice, label, code, none_answer) and
``meta["answer_format"]`` the prompt's answer instruction. A record without a question or an
answer raises ``ValueError`` naming the file and the (1-based) row. A seeded subset is chosen
before its rows are materialised (:mod:`gc2po.data.sources`): the full NuminaMath-CoT (~860k rows)
is read a batch at a time and only the chosen rows are kept.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from gc2po.data.parsers import (
    META_FIELDS,
    Row,
    first_value,
    parse_csqa,
    parse_folio,
    parse_gsm8k,
    parse_gsmplus,
    parse_humaneval,
    parse_math,
    parse_minerva,
    parse_numina,
)
from gc2po.data.sources import open_hub, open_local


@dataclass(frozen=True)
class Benchmark:
    """A benchmark or training set, known everywhere once registered (docs/extending.md)."""

    name: str
    hub_id: str
    split: str
    parse: Callable[[Row, int], tuple[str, str, dict]]  # (row, index) -> (question, answer, meta)
    display_name: str | None = None  # tables' and figures' column name (None: the name itself)
    grader: str = "math"  # a name of gc2po.evaluation.graders.GRADER_KINDS, per record in meta
    answer_format: str = "math"
    hub_config: str | None = None
    id_fields: tuple[str, ...] = ("id", "unique_id", "task_id", "ID", "idx")
    notes: str = ""
    defaults: dict = field(default_factory=dict)
    columns: tuple[str, ...] | None = None  # what ``parse`` reads (None: every column)


BENCHMARKS: dict[str, Benchmark] = {}  # name -> Benchmark, in the paper's column order


def register(benchmark: Benchmark) -> None:
    """Add a benchmark: its loader, grader and display name are then known everywhere."""
    if benchmark.name in BENCHMARKS:
        raise ValueError(f"benchmark {benchmark.name!r} is already registered")
    BENCHMARKS[benchmark.name] = benchmark


for _benchmark in [
    Benchmark("aime2024", "HuggingFaceH4/aime_2024", "train", parse_math, "AIME 2024"),
    Benchmark("aime2025", "yentinglin/aime_2025", "train", parse_math, "AIME 2025"),
    Benchmark("amc2023", "math-ai/amc23", "test", parse_math, "AMC 2023"),
    Benchmark("math500", "HuggingFaceH4/MATH-500", "test", parse_math, "MATH500"),
    Benchmark("minerva", "math-ai/minervamath", "test", parse_minerva, "MinervaMATH"),
    Benchmark("gsm8k", "openai/gsm8k", "test", parse_gsm8k, "GSM8K", hub_config="main"),
    Benchmark("gsmplus", "qintongli/GSM-Plus", "testmini", parse_gsmplus, "GSM-Plus"),
    Benchmark(
        "humaneval",
        "openai/openai_humaneval",
        "test",
        parse_humaneval,
        "HumanEval",
        grader="code",
        answer_format="code",
    ),
    Benchmark(
        "commonsenseqa",
        "tau/commonsense_qa",
        "validation",
        parse_csqa,
        "CommonsenseQA",
        grader="choice",
        answer_format="choice",
    ),
    Benchmark(
        "folio",
        "yale-nlp/FOLIO",
        "validation",
        parse_folio,
        "FOLIO",
        grader="label",
        answer_format="label",
    ),
    # training sets
    Benchmark(
        "aime_train",
        "gneubig/aime-1983-2024",
        "train",
        parse_math,
        notes="AIME 1983-2023; the paper's 919-problem subset is not pinned down: select by "
        "years/limit",
    ),
    Benchmark(
        "numinamath",
        "AI-MO/NuminaMath-CoT",
        "train",
        parse_numina,
        notes="answer = last \\boxed{} of the solution; the paper uses a seeded random "
        "4,000-problem subset",
        defaults={"skip_unanswerable": True},
        columns=("problem", "instruction", "question", "solution", "response", "source"),
    ),  # not ``messages``
]:
    register(_benchmark)


class IndexedRow(NamedTuple):
    row: int  # 0-based position in the source
    raw_id: Any
    year: Any


def _index_rows(
    spec: Benchmark,
    source,
    columns,
    where: str,
    skipped: list[int] | None,
    exclude: Callable[[str], bool] | None,
    excluded: list[int] | None,
) -> list[IndexedRow]:
    """Validate every row a batch at a time, keeping only what selection needs (position, id,
    year); rows are parsed again when the chosen ones are materialised."""
    kept, position = [], 0
    for batch in source.batches(columns):
        for row in batch:
            question, answer, meta = _parse_checked(spec, row, position, where)
            if answer is None:
                if skipped is not None:
                    skipped.append(position + 1)
            elif exclude is not None and exclude(str(question)):
                if excluded is not None:
                    excluded.append(position + 1)
            else:
                kept.append(
                    IndexedRow(position, first_value(row, *spec.id_fields), meta.get("year"))
                )
            position += 1
    return kept


def _parse_checked(spec: Benchmark, row, index: int, where: str):
    """``spec.parse`` with the input checks; answer None for a skippable row without one."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: row {index + 1}: expected an object, got {type(row).__name__}")
    question, answer, meta = spec.parse(row, index)
    if not question or not str(question).strip():
        raise ValueError(
            f"{where}: row {index + 1}: no question (looked for the {spec.name} question fields)"
        )
    if answer is None or not str(answer).strip():
        if spec.defaults.get("skip_unanswerable"):
            return question, None, meta
        raise ValueError(
            f"{where}: row {index + 1}: no answer (looked for the {spec.name} answer fields)"
        )
    return question, answer, meta


def _record_ids(name: str, index: list[IndexedRow]) -> list[str]:
    ids = [f"{name}-{r.raw_id}" if r.raw_id is not None else f"{name}-{r.row:05d}" for r in index]
    if len(set(ids)) != len(ids):  # fall back to positional ids when the source ids repeat
        ids = [f"{name}-{position:05d}" for position in range(len(index))]
    return ids


def _choose(index: list[IndexedRow], years, limit, seed, where: str) -> list[int]:
    """Positions into ``index``: the closed ``years`` range, then a seeded subset of ``limit``."""
    positions = list(range(len(index)))
    if years is not None:
        missing = next((r.row for r in index if r.year is None), None)
        if missing is not None:
            raise ValueError(f"{where}: row {missing + 1}: no year (needed by the years filter)")
        low, high = years
        positions = [p for p in positions if low <= int(index[p].year) <= high]
    if limit is not None and limit < len(positions):
        keep = sorted(random.Random(seed).sample(range(len(positions)), limit))
        positions = [positions[i] for i in keep]
    return positions


def load_benchmark(
    name: str,
    path: str | Path | None = None,
    *,
    years: tuple[int, int] | None = None,
    limit: int | None = None,
    seed: int = 0,
    skipped: list[int] | None = None,
    exclude: Callable[[str], bool] | None = None,
    excluded: list[int] | None = None,
) -> list[dict]:
    """Normalised records of benchmark ``name`` from the Hub (``path=None``) or a local mirror.

    ``years`` keeps rows whose ``year`` (``Year`` on the Hub) lies in the closed range (every row
    must have one); ``limit`` keeps a seeded random subset of that many records (``seed``), in
    their original order. Training sets whose answers are extracted from solutions (NuminaMath)
    skip rows without one instead of failing; pass a list as ``skipped`` to receive their 1-based
    row numbers (the workflow records them in the manifest). ``exclude(question)`` drops rows
    before any selection (the workflow drops training questions that overlap an evaluation set);
    ``excluded`` receives their 1-based row numbers.
    """
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; valid: {sorted(BENCHMARKS)}")
    spec = BENCHMARKS[name]
    where = str(path) if path is not None else f"hub:{spec.hub_id}"
    source = (
        open_local(Path(path))
        if path is not None
        else open_hub(spec.hub_id, spec.hub_config, spec.split)
    )
    columns = (
        None if spec.columns is None else (*spec.columns, *spec.id_fields, *META_FIELDS["year"])
    )
    index = _index_rows(spec, source, columns, where, skipped, exclude, excluded)
    ids = _record_ids(name, index)
    chosen = _choose(index, years, limit, seed, where)
    rows = source.take([index[p].row for p in chosen], columns)
    records = []
    for position, row in zip(chosen, rows):
        question, answer, meta = spec.parse(row, index[position].row)
        meta = {"grader": spec.grader, "answer_format": spec.answer_format, **meta}
        records.append(
            {
                "id": ids[position],
                "source": name,
                "question": str(question),
                "answer": str(answer),
                "meta": meta,
            }
        )
    return records
