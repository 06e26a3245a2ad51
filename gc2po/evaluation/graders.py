"""Answer graders: math-verify for math, choice letters for CommonsenseQA, labels for FOLIO,
"no answer" for GSM-Plus critical-thinking items. Each takes (completion, gold) and returns
True/False; none raises on malformed model output. Only the stated final answer is graded
(:mod:`gc2po.evaluation.final_answer`); agreement with other projects' graders is measured on
``tests/evaluation/peer_grader_cases.jsonl``."""

from __future__ import annotations

import re

from gc2po.evaluation.final_answer import (
    boxed_forms,
    final_answer_candidates,
    last_box_group,
    phrase_answers,
    response_text,
)

GRADER_VERSION = "3"  # bump when a verdict can change; evaluation outputs record it
PARSE_TIMEOUT_S = 5
MAX_CANDIDATES = 4
LATEX_MARKERS = re.compile(r"[\\{}$]")
MATH_DELIMITERS = re.compile(r"\$|\\\[|\\\(|\\boxed")
THOUSANDS = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
PROSE = re.compile(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}")
# Program text is no mathematical expression, though math-verify reads ``compute() or 0``,
# ``int(input()) or 0`` and ``def f(): return 5`` as their trailing number: a Python keyword
# that is no English word (``\lambda`` is LaTeX), a call without arguments, or a call of a
# Python builtin. Other calls of multi-letter names stay mathematics (``rx(t)``: r times x(t)).
PROGRAM_KEYWORDS = re.compile(r"(?<!\\)\b(?:def|lambda|elif)\b")
CALL = re.compile(r"(?<![\\\w])([A-Za-z_]\w*)\s*\(\s*(\)?)")
PYTHON_BUILTINS = frozenset(
    "int len input print range str float list dict tuple open sorted enumerate zip".split()
)


def _extraction():
    from math_verify import ExprExtractionConfig, LatexExtractionConfig

    return [LatexExtractionConfig(), ExprExtractionConfig()]


def _parse(text: str):
    from math_verify import parse

    return parse(text, extraction_config=_extraction(), parsing_timeout=PARSE_TIMEOUT_S)


def _parse_plain_expression(text: str):
    """A plain-text expression (``2**(1/4)``, ``3/2``, ``1,000``) read whole, or [] when the
    expression reader would take only part of it (then it is read as LaTeX). A comma is a
    thousands separator or a list separator (``-2,1`` is two answers), never a decimal comma."""
    from math_verify import ExprExtractionConfig, parse

    if "," in text and not THOUSANDS.fullmatch(text.strip()):
        return []
    parsed = parse(
        text, extraction_config=[ExprExtractionConfig()], parsing_timeout=PARSE_TIMEOUT_S
    )
    whole = len(parsed) == 2 and _digits_and_symbols(str(parsed[1])) == _digits_and_symbols(text)
    return parsed if whole else []


def _digits_and_symbols(text: str) -> str:
    return re.sub(r"[\s,.]", "", text)


def parse_answer(text: str):
    """An answer text (gold or stated answer) -> math-verify's parsed form; [] if unreadable.

    Plain text that is one expression is read as such (``2**(1/4)`` is not LaTeX); text with
    math delimiters or prose is searched by math-verify; bare LaTeX is read in math mode."""
    text = text.replace("\\$", "").strip()  # an escaped dollar is a currency sign
    if not text:
        return []
    if not LATEX_MARKERS.search(text):
        parsed = _parse_plain_expression(text)
        if parsed or PROSE.search(text):
            return parsed or _parse(text)
    if MATH_DELIMITERS.search(text):
        return _parse(text)
    return _parse(f"${text}$") or _parse(f"\\boxed{{{text}}}") or _parse(text)


def is_program_text(text: str) -> bool:
    """Whether an answer text reads as a program rather than mathematics (PROGRAM_KEYWORDS,
    CALL): ``compute() or 0``, ``int(input())``, ``def f(): return 5``; not ``f(3) = 9``,
    ``\\sqrt{2}``, ``\\lambda + 1``, ``\\log_2(8)``, ``max(a, b)``, ``rx(t)``."""
    if PROGRAM_KEYWORDS.search(text):
        return True
    return any(empty or name in PYTHON_BUILTINS for name, empty in CALL.findall(text))


def _first_parsed(texts: list[str]):
    """The first text that parses to a mathematical object, else the first that parses at all
    (math-verify keeps an unparsable answer as a string). At most MAX_CANDIDATES are tried, so a
    completion repeating 'Answer:' a thousand times costs no more than a few."""
    fallback = []
    for text in texts[:MAX_CANDIDATES]:
        parsed = parse_answer(text)
        if parsed and not isinstance(parsed[0], str):
            return parsed
        fallback = fallback or parsed
    return fallback


def parse_gold(gold: str):
    """A gold answer: plain text, LaTeX, ``$..$``-wrapped, or a solution whose last box holds it."""
    group = last_box_group(str(gold))
    return _first_parsed(boxed_forms(group[0])) if group is not None else parse_answer(str(gold))


def _normalise(text: str) -> str:
    return re.sub(r"\\[ ,;!]|\s+", "", text)


def grade_math(completion: str, gold: str, *, exact_match_fallback: bool = True) -> bool:
    """math-verify equivalence of the stated final answer and the gold answer.

    A boxed answer that is character-for-character the gold answer (whitespace and LaTeX spacing
    aside) is correct even where math-verify cannot parse the gold (multi-part answers).
    """
    from math_verify import verify

    candidates = final_answer_candidates(completion)
    if not candidates or any(is_program_text(c) for c in candidates):
        return False  # no stated answer, or a program's text: numbers in it do not count
    group = last_box_group(response_text(completion))
    if (
        exact_match_fallback
        and group is not None
        and _normalise(", ".join(group[0])) == _normalise(str(gold))
    ):
        return True
    gold_parsed = parse_gold(str(gold))
    answer = _first_parsed(candidates)
    if not gold_parsed or not answer:
        return False
    return bool(verify(gold_parsed, answer, timeout_seconds=PARSE_TIMEOUT_S))


TEXT_WRAPPER = re.compile(
    r"\\(?:text|textbf|textit|mathrm|mathbf|mathit|emph|texttt)\s*\{([^{}]*)\}"
)


def _plain(text: str) -> str:
    """Box or statement content without LaTeX text wrappers, math delimiters, bold or quotes."""
    previous = None
    while previous != text:
        previous, text = text, TEXT_WRAPPER.sub(r"\1", text)
    return re.sub(r"\$|\\[()\[\]]|\*\*|[\"'`]", "", text).strip()


def _stated_texts(completion: str) -> list[str]:
    """The box content (if boxed) else the answer-phrase statements, as plain text."""
    text = response_text(completion)
    group = last_box_group(text)
    if group is not None:
        return [_plain(group[0][-1])]
    return [_plain(statement) for statement in phrase_answers(text)]


BOXED_OPTION = re.compile(r"^\(?([A-Ea-e])\)?(?:$|[\s.:)\]])")
STATED_OPTION = re.compile(r"\(([A-Ea-e])\)|(?<![\w'])([A-E])(?![\w'])")


def _stated_option(completion: str) -> str | None:
    text = response_text(completion)
    group = last_box_group(text)
    if group is not None:
        found = BOXED_OPTION.match(_plain(group[0][-1]))
        return found.group(1).upper() if found else None
    for statement in _stated_texts(completion):
        found = STATED_OPTION.search(statement)
        if found:
            return (found.group(1) or found.group(2)).upper()
    return None


def grade_choice(completion: str, gold: str) -> bool:
    """Multiple choice by letter: ``\\boxed{B}`` (also ``(B)``, ``\\text{B}``, ``B. bank``) or an
    answer phrase ('The answer is (B)', 'Answer: B'); the letter must stand alone, so the 'd'
    of 'definitely' is no answer."""
    return _stated_option(completion) == str(gold).strip().upper()


LABELS = {"true": "true", "false": "false", "uncertain": "uncertain", "unknown": "uncertain"}
STATED_LABEL = re.compile(r"\b(true|false|uncertain|unknown)\b", re.IGNORECASE)


def _stated_label(completion: str) -> str | None:
    text = response_text(completion)
    group = last_box_group(text)
    if group is not None:
        content = _plain(group[0][-1]).rstrip(".!").strip().lower()
        return LABELS.get(content)
    for statement in _stated_texts(completion):
        found = STATED_LABEL.search(statement)
        if found:
            return LABELS[found.group(1).lower()]
    return None


def grade_label(completion: str, gold: str) -> bool:
    """FOLIO labels True / False / Uncertain (Unknown is read as Uncertain): ``\\boxed{False}``,
    ``\\boxed{\\textbf{False}}``, ``\\boxed{False.}`` or 'The answer is False.'."""
    stated = _stated_label(completion)
    return stated is not None and stated == LABELS.get(str(gold).strip().lower())


NONE_ANSWER = re.compile(
    r"^(?:none|no answer|not enough information|cannot be determined|"
    r"insufficient information|undetermined)\.?$",
    re.IGNORECASE,
)


def grade_none_answer(completion: str, gold: str) -> bool:
    """GSM-Plus 'critical thinking' items have no answer: correct when the model says so."""
    return any(NONE_ANSWER.match(text) for text in _stated_texts(completion)[:1])


GRADERS = {
    "math": grade_math,
    "choice": grade_choice,
    "label": grade_label,
    "none_answer": grade_none_answer,
}
CODE_GRADER = "code"  # runs the record's tests in the sandbox (gc2po.evaluation.sandbox)
GRADER_KINDS = (*GRADERS, CODE_GRADER)


def check_graders_run(records: list[dict]) -> None:
    """Raise before any work where a record's grader cannot run on this machine (the code grader
    without a sandbox: SandboxUnavailable, naming why)."""
    if any(record.get("meta", {}).get("grader") == CODE_GRADER for record in records):
        from gc2po.evaluation.sandbox import sandbox_description

        sandbox_description()


def grade_fields(record: dict, completion: str) -> dict:
    """``{"correct": grade_record(...)}``, or the fields of a sample the grader could not grade
    (``status: "error"``, ``correct`` None: a grader error is never a wrong answer)."""
    from gc2po.evaluation.grading_errors import GraderError, error_fields

    try:
        return {"correct": grade_record(record, completion)}
    except GraderError as error:
        return error_fields(error)


def grade_record(record: dict, completion: str) -> bool:
    """A benchmark record's grade, by its ``meta.grader`` (math when absent): the one grading of
    non-testbed records, for evaluation and for the training reward alike. Raises GraderError
    where the grader could not give a verdict (the code sandbox)."""
    meta = record.get("meta", {})
    kind = meta.get("grader", "math")
    if kind == CODE_GRADER:
        from gc2po.evaluation.sandbox import grade_code

        return grade_code(completion, meta)
    if kind not in GRADERS:
        raise ValueError(
            f"record {record.get('id')!r}: meta.grader {kind!r} is not a grader; "
            f"valid: {list(GRADER_KINDS)}"
        )
    return GRADERS[kind](completion, record["answer"])
