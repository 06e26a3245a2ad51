"""The row parsers of the registered benchmarks (``gc2po.data.benchmarks``): one source row, in
the Hub schema, the vendored mirrors' schema or Qwen2.5-Math's evaluation schema -> (question,
answer, meta). A missing question or answer is None; the loader refuses the row naming it."""

from __future__ import annotations

import ast
import re
from typing import Any

Row = dict[str, Any]


def first_value(row: Row, *names: str) -> Any:
    """The value of the first of ``names`` that ``row`` holds, not None or empty; else None."""
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


# meta key -> the column names it has in the mirrors and on the Hub
# (gneubig/aime-1983-2024: Year, ...)
META_FIELDS = {
    "year": ("year", "Year"),
    "problem_number": ("problem_number", "Problem Number"),
    "aime_number": ("aime_number",),
    "part": ("part", "Part"),
    "url": ("url",),
    "level": ("level",),
    "subject": ("subject",),
    "type": ("type",),
}


def parse_math(row: Row, index: int) -> tuple[str, str, dict]:
    question = first_value(row, "problem", "question", "Problem", "Question")
    answer = first_value(row, "answer", "Answer", "final_answer")
    meta = {
        key: value
        for key, names in META_FIELDS.items()
        if (value := first_value(row, *names)) is not None
    }
    if answer is None and first_value(row, "solution") is not None:
        # Qwen2.5-Math's evaluation files (e.g. minerva_math/test.jsonl):
        # the answer is boxed in the solution
        answer = last_boxed(str(row["solution"]))
        meta["answer_from"] = "solution"
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
    question = first_value(row, "question", "problem")
    answer = first_value(row, "answer")
    if answer in (None, "None") or "####" in str(answer):
        # Hub schema: answer holds the solution ending in '#### N'; mirror: solution field
        source = (
            str(answer) if answer not in (None, "None") else str(first_value(row, "solution") or "")
        )
        found = GSM8K_ANSWER.search(source)
        answer = found.group(1).strip().replace(",", "") if found else None
    return question, answer, {}


def parse_gsmplus(row: Row, index: int) -> tuple[str, str, dict]:
    question = first_value(row, "question")
    answer = first_value(row, "answer")
    meta = {"perturbation_type": row.get("perturbation_type")}
    if str(answer).strip() == "None":
        # 'critical thinking' items lack information: the right answer says so
        return question, "None", {**meta, "grader": "none_answer"}
    return question, None if answer is None else str(answer).replace(",", ""), meta


def parse_csqa(row: Row, index: int) -> tuple[str, str, dict]:
    q = row.get("question")
    if isinstance(q, dict):  # original format: question.stem, question.choices[label, text]
        stem, labels, texts = (
            q.get("stem"),
            [c["label"] for c in q["choices"]],
            [c["text"] for c in q["choices"]],
        )
    else:  # Hub (tau/commonsense_qa): question, choices{label, text}
        stem, labels, texts = q, list(row["choices"]["label"]), list(row["choices"]["text"])
    options = "\n".join(f"({label}) {text}" for label, text in zip(labels, texts))
    question = f"{stem}\n{options}" if stem else None
    return question, first_value(row, "answerKey"), {"choices": labels}


def parse_folio(row: Row, index: int) -> tuple[str, str, dict]:
    premises = row.get("premises")
    if isinstance(premises, str) and premises.startswith("["):
        premises = ast.literal_eval(premises)
    if isinstance(premises, list):
        premises = "\n".join(premises)
    conclusion = row.get("conclusion")
    question = (
        (
            f"Premises:\n{premises}\nConclusion: {conclusion}\n"
            "Is the conclusion True, False, or Uncertain given the premises?"
        )
        if premises and conclusion
        else None
    )
    return question, first_value(row, "label"), {}


def parse_humaneval(row: Row, index: int) -> tuple[str, str, dict]:
    prompt = row.get("prompt")
    meta = {
        "test": row.get("test"),
        "entry_point": row.get("entry_point"),
        "prompt": prompt,
        "canonical_solution": row.get("canonical_solution"),
    }
    question = (
        f"Complete the following Python function.\n```python\n{prompt}```" if prompt else None
    )
    # the answer of a code task is its test program; graded by execution
    return question, row.get("test"), meta


def parse_numina(row: Row, index: int) -> tuple[str, str, dict]:
    question = first_value(row, "problem", "instruction", "question")
    solution = first_value(row, "solution", "response")
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
