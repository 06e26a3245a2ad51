"""Train/test overlap: every training question against every evaluation question.

Two questions overlap when their normalised texts are equal, or when they share a run of
``n`` words (default 13) *and* state the same numbers. Normalising lowercases, drops LaTeX and
punctuation and removes Asymptote figure code (``[asy]...[/asy]``, shared drawing boilerplate).

Why 13 and why the numbers: 13-word overlap is the contamination test of GPT-3 and of
lm-evaluation-harness. On the vendored mirrors, shared 13-grams (and even 20-grams) alone flag
competition boilerplate between different problems (AIME's "where m, n and p are positive
integers, m and p are relatively prime, and n is not divisible by the square of any prime";
MATH's "Enter your answer in the form (r, theta), where r > 0 and 0 <= theta < 2 pi") and, on
the testbed, template sentences shared by problems with different numbers. The same problem
restated states the same numbers; a different problem in the same phrasing does not. The
evidence behind this choice is in data/benchmarks/README.md ("Train/test overlaps").
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

NGRAM = 13
ASY_BLOCK = re.compile(r"\[asy\].*?(?:\[/asy\]|$)", re.DOTALL | re.IGNORECASE)
# LaTeX layout commands carry no content; others stay as words (\\frac 2 3 is not \\log_2 3)
LAYOUT_COMMAND = re.compile(
    r"\\(?:left|right|displaystyle|textstyle|mathrm|text|quad|qquad|[,;:! ])(?![A-Za-z])"
)
FRACTION_VARIANT = re.compile(r"\\[dt]frac(?![A-Za-z])")
THOUSANDS_COMMA = re.compile(r"(?<=\d),(?=\d{3}\b)|\{,\}")
NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _without_figures(text: str) -> str:
    return THOUSANDS_COMMA.sub("", ASY_BLOCK.sub(" ", unicodedata.normalize("NFKC", text)))


def normalised_words(text: str) -> list[str]:
    """Lowercase words and numbers of a question, without LaTeX layout, punctuation or figures."""
    text = FRACTION_VARIANT.sub(r"\\frac", _without_figures(text))
    text = LAYOUT_COMMAND.sub(" ", text).lower()
    return re.sub(r"[^0-9a-z]+", " ", text).split()


def stated_numbers(text: str) -> tuple[float, ...]:
    """The numbers a question states, in order (``1,995`` and ``1995`` alike; figures aside)."""
    return tuple(float(n) for n in NUMBER.findall(_without_figures(text)))


def _ngrams(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


class OverlapIndex:
    """Evaluation questions indexed by normalised text and by word n-gram."""

    def __init__(self, evaluation: Iterable[tuple[str, str, str]], n: int = NGRAM):
        """``evaluation``: (dataset key, record id, question) triples."""
        if n < 1:
            raise ValueError(f"n-gram size must be >= 1, got {n}")
        self.n = n
        self.by_text: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.by_ngram: dict[tuple[str, ...], set[int]] = defaultdict(set)
        self.entries: list[tuple[str, str, tuple[float, ...]]] = []
        for dataset, record_id, question in evaluation:
            words = normalised_words(question)
            self.by_text[" ".join(words)].append((dataset, record_id))
            for gram in _ngrams(words, n):
                self.by_ngram[gram].add(len(self.entries))
            self.entries.append((dataset, record_id, stated_numbers(question)))

    def matches(self, question: str) -> list[dict]:
        """The evaluation questions this (training) question overlaps, with the reason."""
        words = normalised_words(question)
        found = {(d, i): "same normalised text" for d, i in self.by_text.get(" ".join(words), [])}
        numbers = None
        candidates = set().union(*(self.by_ngram.get(g, ()) for g in _ngrams(words, self.n)))
        for entry in sorted(candidates):
            dataset, record_id, eval_numbers = self.entries[entry]
            numbers = stated_numbers(question) if numbers is None else numbers
            if (dataset, record_id) not in found and numbers and numbers == eval_numbers:
                found[(dataset, record_id)] = f"shared {self.n}-word run and the same numbers"
        return [{"eval_dataset": d, "eval_id": i, "reason": r} for (d, i), r in found.items()]


def find_overlaps(
    training: dict[str, list[dict]], evaluation: dict[str, list[dict]], n: int = NGRAM
) -> list[dict]:
    """Every (training record, evaluation record) pair that overlaps; records are the loaders'
    ``{id, question, ...}`` dicts keyed by dataset."""
    index = OverlapIndex(
        ((name, r["id"], r["question"]) for name, records in evaluation.items() for r in records), n
    )
    overlaps = []
    for name, records in training.items():
        for record in records:
            for match in index.matches(record["question"]):
                overlaps.append({"train_dataset": name, "train_id": record["id"], **match})
    return overlaps


def decontamination_report(
    training: dict[str, list[dict]], evaluation: dict[str, list[dict]], n: int = NGRAM
) -> dict:
    """What the workflow writes next to the data: sizes, method, and every overlap found."""
    overlaps = find_overlaps(training, evaluation, n)
    return {
        "ngram": n,
        "rule": "equal normalised text, or a shared n-word run and the same stated numbers",
        "training": {k: len(v) for k, v in training.items()},
        "evaluation": {k: len(v) for k, v in evaluation.items()},
        "overlaps": overlaps,
        "passed": not overlaps,
    }


def overlap_message(report: dict, limit: int = 50) -> str:
    """A failure message naming both ids of each overlap."""
    lines = [
        f"{o['train_dataset']}:{o['train_id']} overlaps {o['eval_dataset']}:{o['eval_id']} "
        f"({o['reason']})"
        for o in report["overlaps"][:limit]
    ]
    more = len(report["overlaps"]) - limit
    return "\n".join(lines + ([f"... and {more} more (see the report)"] if more > 0 else []))


def read_question_records(path: str | Path) -> list[dict]:
    """``{id, question}`` of every record of a normalised JSONL file (the workflow's data files)."""
    from gc2po.data.sources import read_json_rows

    rows = read_json_rows(Path(path))
    for number, row in enumerate(rows, 1):
        if not isinstance(row, dict) or "id" not in row or "question" not in row:
            raise ValueError(f"{path}: row {number}: expected a record with 'id' and 'question'")
    return [{"id": row["id"], "question": row["question"]} for row in rows]


def check_files(
    training: dict[str, str | Path],
    evaluation: dict[str, str | Path],
    out_path: str | Path,
    n: int = NGRAM,
) -> dict:
    """Check the data files and write the report to ``out_path``; on any overlap write it to
    ``<out>.failed.json`` instead (kept for inspection) and raise, naming both ids of each."""
    report = decontamination_report(
        {k: read_question_records(p) for k, p in training.items()},
        {k: read_question_records(p) for k, p in evaluation.items()},
        n,
    )
    out_path = Path(out_path)
    target = out_path if report["passed"] else out_path.with_suffix(".failed.json")
    target.write_text(json.dumps(report, indent=1))
    if not report["passed"]:
        raise ValueError(
            f"train/test overlap ({len(report['overlaps'])} pairs; report: {target}):\n"
            + overlap_message(report)
        )
    return report


def overlap_excluder(evaluation: dict[str, list[dict]], dropped: list[dict], n: int = NGRAM):
    """A predicate for ``load_benchmark(exclude=...)``: True for a training question that overlaps
    an evaluation record; the matches of each such question are appended to ``dropped`` (in the
    order of ``load_benchmark``'s ``excluded`` row numbers)."""
    index = OverlapIndex(
        ((name, r["id"], r["question"]) for name, records in evaluation.items() for r in records), n
    )

    def exclude(question: str) -> bool:
        matches = index.matches(question)
        if matches:
            dropped.append({"question": question[:120], "matches": matches})
        return bool(matches)

    return exclude
