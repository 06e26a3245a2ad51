"""Loaders for every benchmark of the paper and its training sets.

Each benchmark reads its Hub dataset (``datasets.load_dataset``) or a local file/folder
(``.json`` list, ``.jsonl``, ``.parquet``, ``.jsonl.gz``, or a folder holding one, or a
``save_to_disk`` dataset) in either the Hub schema or the schema of the offline mirrors in
``shared/data/benchmarks``, and returns normalised records::

    {"id": str, "source": str, "question": str, "answer": str, "meta": {...}}

``meta["grader"]`` names the grader (math, choice, label, code, none_answer) and
``meta["answer_format"]`` the prompt's answer instruction. A record without a question or an
answer raises ``ValueError`` naming the file and the (1-based) row.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Row = dict[str, Any]


@dataclass(frozen=True)
class Benchmark:
    name: str
    hub_id: str
    split: str
    parse: Callable[[Row, int], tuple[str, str, dict]]  # (row, index) -> (question, answer, meta)
    grader: str = "math"
    answer_format: str = "math"
    hub_config: str | None = None
    id_fields: tuple[str, ...] = ("id", "unique_id", "task_id", "ID", "idx")
    notes: str = ""
    defaults: dict = field(default_factory=dict)


def _first(row: Row, *names: str) -> Any:
    for name in names:
        if name in row and row[name] not in (None, ""):
            return row[name]
    return None


def _number(value: Any) -> str:
    """'142.0' -> '142'; other strings unchanged."""
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else text


def parse_math(row: Row, index: int) -> tuple[str, str, dict]:
    question = _first(row, "problem", "question", "Problem", "Question")
    answer = _first(row, "answer", "Answer", "final_answer")
    meta = {k: row[k] for k in ("year", "problem_number", "aime_number", "url", "level", "subject", "type") if k in row}
    return question, None if answer is None else _number(answer), meta


def parse_minerva(row: Row, index: int) -> tuple[str, str, dict]:
    question, answer, meta = parse_math(row, index)
    if isinstance(answer, str) and answer.startswith("["):
        # the mirror stores answers as stringified lists, e.g. "['9.6\\n']"
        try:
            items = ast.literal_eval(answer)
            answer = ", ".join(str(x).strip() for x in items)
        except (ValueError, SyntaxError):
            pass
    return question, answer, meta


GSM8K_ANSWER = re.compile(r"####\s*(.+)$", re.MULTILINE)


def parse_gsm8k(row: Row, index: int) -> tuple[str, str, dict]:
    question = _first(row, "question", "problem")
    answer = _first(row, "answer")
    if answer in (None, "None") or "####" in str(answer):
        # Hub schema: answer holds the solution ending in '#### N'; mirror: solution field
        source = str(answer) if answer not in (None, "None") else str(_first(row, "solution") or "")
        found = GSM8K_ANSWER.search(source)
        answer = found.group(1).strip().replace(",", "") if found else None
    return question, answer, {}


def parse_gsmplus(row: Row, index: int) -> tuple[str, str, dict]:
    question = _first(row, "question")
    answer = _first(row, "answer")
    meta = {"perturbation_type": row.get("perturbation_type")}
    if str(answer).strip() == "None":
        # 'critical thinking' items lack information: the right answer says so
        return question, "None", {**meta, "grader": "none_answer"}
    return question, None if answer is None else str(answer).replace(",", ""), meta


def parse_csqa(row: Row, index: int) -> tuple[str, str, dict]:
    q = row.get("question")
    if isinstance(q, dict):  # original format: question.stem, question.choices[label, text]
        stem, labels, texts = q.get("stem"), [c["label"] for c in q["choices"]], [c["text"] for c in q["choices"]]
    else:  # Hub (tau/commonsense_qa): question, choices{label, text}
        stem, labels, texts = q, list(row["choices"]["label"]), list(row["choices"]["text"])
    options = "\n".join(f"({label}) {text}" for label, text in zip(labels, texts))
    question = f"{stem}\n{options}" if stem else None
    return question, _first(row, "answerKey"), {"choices": labels}


def parse_folio(row: Row, index: int) -> tuple[str, str, dict]:
    premises = row.get("premises")
    if isinstance(premises, str) and premises.startswith("["):
        premises = ast.literal_eval(premises)
    if isinstance(premises, list):
        premises = "\n".join(premises)
    conclusion = row.get("conclusion")
    question = (f"Premises:\n{premises}\nConclusion: {conclusion}\n"
                "Is the conclusion True, False, or Uncertain given the premises?") if premises and conclusion else None
    return question, _first(row, "label"), {}


def parse_humaneval(row: Row, index: int) -> tuple[str, str, dict]:
    prompt = row.get("prompt")
    meta = {"test": row.get("test"), "entry_point": row.get("entry_point"), "prompt": prompt,
            "canonical_solution": row.get("canonical_solution")}
    question = f"Complete the following Python function.\n```python\n{prompt}```" if prompt else None
    # the answer of a code task is its test program; graded by execution
    return question, row.get("test"), meta


def parse_numina(row: Row, index: int) -> tuple[str, str, dict]:
    question = _first(row, "problem", "instruction", "question")
    solution = _first(row, "solution", "response")
    answer = last_boxed(str(solution)) if solution else None
    return question, answer, {"source": row.get("source")} if row.get("source") else {}


def last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...} (balanced braces)."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    i, depth = start + len("\\boxed{"), 1
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i:j].strip()
    return None


BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in [
    Benchmark("aime2024", "HuggingFaceH4/aime_2024", "train", parse_math),
    Benchmark("aime2025", "yentinglin/aime_2025", "train", parse_math),
    Benchmark("amc2023", "math-ai/amc23", "test", parse_math),
    Benchmark("math500", "HuggingFaceH4/MATH-500", "test", parse_math),
    Benchmark("minerva", "math-ai/minervamath", "test", parse_minerva),
    Benchmark("gsm8k", "openai/gsm8k", "test", parse_gsm8k, hub_config="main"),
    Benchmark("gsmplus", "qintongli/GSM-Plus", "testmini", parse_gsmplus),
    Benchmark("humaneval", "openai/openai_humaneval", "test", parse_humaneval, grader="code", answer_format="code"),
    Benchmark("commonsenseqa", "tau/commonsense_qa", "validation", parse_csqa, grader="choice", answer_format="choice"),
    Benchmark("folio", "yale-nlp/FOLIO", "validation", parse_folio, grader="label", answer_format="label"),
    # training sets
    Benchmark("aime_train", "gneubig/aime-1983-2024", "train", parse_math,
              notes="AIME 1983-2023; the paper's 919-problem subset is not pinned down: select by years/limit"),
    Benchmark("numinamath", "AI-MO/NuminaMath-CoT", "train", parse_numina,
              notes="answer = last \\boxed{} of the solution; the paper uses a seeded random 4,000-problem subset",
              defaults={"skip_unanswerable": True}),
]}


def _read_local(path: Path) -> list[Row]:
    """Rows of a local file or folder in any of the supported layouts."""
    if path.is_dir():
        if (path / "dataset_info.json").exists() or (path / "state.json").exists():
            from datasets import load_from_disk

            return [dict(r) for r in load_from_disk(str(path))]
        files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl", ".parquet", ".gz"))
        if not files:
            raise ValueError(f"{path}: no .json, .jsonl, .jsonl.gz or .parquet file in this folder")
        return [row for f in files for row in _read_local(f)]
    try:
        if path.suffix == ".parquet":
            import pandas as pd

            return pd.read_parquet(path).to_dict(orient="records")
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: cannot read: {err}") from err
    if path.suffix == ".json" and text.lstrip().startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: invalid JSON: {err}") from err
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}: row {number}: invalid JSON: {err}") from err
    return rows


def _read_hub(spec: Benchmark) -> list[Row]:
    from datasets import load_dataset

    return [dict(r) for r in load_dataset(spec.hub_id, spec.hub_config, split=spec.split)]


def load_benchmark(name: str, path: str | Path | None = None, *, years: tuple[int, int] | None = None,
                   limit: int | None = None, seed: int = 0, skipped: list[int] | None = None) -> list[dict]:
    """Normalised records of benchmark ``name`` from the Hub (``path=None``) or a local mirror.

    ``years`` keeps rows whose ``year`` lies in the closed range; ``limit`` keeps a seeded random
    subset of that many records (``seed``), in their original order. Training sets whose
    answers are extracted from solutions (NuminaMath) skip rows without one instead of failing;
    pass a list as ``skipped`` to receive their 1-based row numbers (the workflow records them
    in the manifest).
    """
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; valid: {sorted(BENCHMARKS)}")
    spec = BENCHMARKS[name]
    where = str(path) if path is not None else f"hub:{spec.hub_id}"
    rows = _read_local(Path(path)) if path is not None else _read_hub(spec)
    records = []
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"{where}: row {index + 1}: expected an object, got {type(row).__name__}")
        question, answer, meta = spec.parse(row, index)
        if not question or not str(question).strip():
            raise ValueError(f"{where}: row {index + 1}: no question (looked for the {name} question fields)")
        if answer is None or not str(answer).strip():
            if spec.defaults.get("skip_unanswerable"):
                if skipped is not None:
                    skipped.append(index + 1)
                continue
            raise ValueError(f"{where}: row {index + 1}: no answer (looked for the {name} answer fields)")
        raw_id = _first(row, *spec.id_fields)
        record_id = f"{name}-{raw_id}" if raw_id is not None else f"{name}-{index:05d}"
        meta = {"grader": spec.grader, "answer_format": spec.answer_format, **meta}
        records.append({"id": record_id, "source": name, "question": str(question), "answer": str(answer), "meta": meta})
    ids = [r["id"] for r in records]
    if len(set(ids)) != len(ids):  # fall back to positional ids when the source ids repeat
        for index, record in enumerate(records):
            record["id"] = f"{name}-{index:05d}"
    if years is not None:
        low, high = years
        records = [r for r in records if "year" in r["meta"] and low <= int(r["meta"]["year"]) <= high]
    if limit is not None and limit < len(records):
        keep = sorted(random.Random(seed).sample(range(len(records)), limit))
        records = [records[i] for i in keep]
    return records


def write_normalised(records: list[dict], out_path: str | Path, *, source: str, seed: int | None = None) -> dict:
    """Write records as JSONL and ``<out>.manifest.json`` (source, count, sha256, seed, ids).

    Written to temporary files first, so a failure leaves no partial output.
    """
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    manifest = {"source": source, "count": len(records), "sha256": hashlib.sha256(text.encode()).hexdigest(),
                "seed": seed, "ids": [r["id"] for r in records]}
    manifest_path = Path(str(out_path) + ".manifest.json")
    tmp, tmp_manifest = out_path.with_suffix(".tmp"), manifest_path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp_manifest.write_text(json.dumps(manifest, indent=1))
    tmp.replace(out_path)
    tmp_manifest.replace(manifest_path)
    return manifest
