"""Answer graders: math-verify for math, choice letters for CommonsenseQA, labels for FOLIO,
and the testbed oracle. Each takes (completion, gold) and returns True/False; none raises on
malformed model output."""

from __future__ import annotations

import re

from gc2po.data.benchmarks import last_boxed

BOXED_LETTER = re.compile(r"\\boxed\{\s*\(?([A-Ea-e])\)?\s*\}")
LETTER_FALLBACK = re.compile(r"(?:answer is|Answer:)\s*\(?([A-Ea-e])\)?", re.IGNORECASE)
BOXED_LABEL = re.compile(r"\\boxed\{\s*(?:\\text\{)?\s*(True|False|Uncertain|Unknown)\s*\}?\s*\}", re.IGNORECASE)


def _parse_gold(gold: str):
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse

    text = gold.strip()
    candidates = [f"${text}$", f"\\boxed{{{text}}}", text]
    for candidate in candidates:
        parsed = parse(candidate, extraction_config=[LatexExtractionConfig(), ExprExtractionConfig()], parsing_timeout=5)
        if parsed:
            return parsed
    return []


def _normalise(text: str) -> str:
    return re.sub(r"\\[ ,;!]|\s+", "", text)


def grade_math(completion: str, gold: str, *, exact_match_fallback: bool = True) -> bool:
    """math-verify: the model's stated final answer (last \\boxed{}, else an 'answer is X' line)
    against the gold answer.

    A boxed answer that is character-for-character the gold answer (whitespace and LaTeX spacing
    aside) is correct even where math-verify cannot parse the gold (multi-part answers).
    """
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    if exact_match_fallback:
        boxed = last_boxed(completion)
        if boxed is not None and _normalise(boxed) == _normalise(str(gold)):
            return True
    gold_parsed = _parse_gold(str(gold))
    if not gold_parsed:
        return False
    final = final_answer_text(completion)
    if final is None:
        return False  # no stated final answer: numbers elsewhere in the text do not count
    answer = parse(f"${final}$", extraction_config=[LatexExtractionConfig(), ExprExtractionConfig()], parsing_timeout=5)
    if not answer:
        answer = parse(final, extraction_config=[ExprExtractionConfig()], parsing_timeout=5)
    if not answer:
        return False
    return bool(verify(gold_parsed, answer, timeout_seconds=5))


FINAL_ANSWER_PHRASE = re.compile(r"(?:final answer|the answer)\s*(?:is|:)\s*:?\s*\$?([^\n$]+?)\$?\s*(?:\.\s*)?$",
                                 re.IGNORECASE | re.MULTILINE)


def final_answer_text(completion: str) -> str | None:
    """The model's stated final answer: the last \\boxed{...}, else the last
    'the answer is X' / 'final answer: X' line; None when it states none."""
    boxed = last_boxed(completion)
    if boxed is not None:
        return boxed
    found = FINAL_ANSWER_PHRASE.findall(completion)
    return found[-1].strip() if found else None


NONE_ANSWER = re.compile(r"\\boxed\{\s*(?:\\text\{)?\s*(none|no answer|not enough information|cannot be determined|"
                         r"insufficient information)\s*\}?\s*\}", re.IGNORECASE)


def grade_none_answer(completion: str, gold: str) -> bool:
    """GSM-Plus 'critical thinking' items have no answer: correct when the model says so."""
    return bool(NONE_ANSWER.search(completion))


def grade_choice(completion: str, gold: str) -> bool:
    """Multiple choice by letter: ``\\boxed{B}`` (or 'answer is B')."""
    found = BOXED_LETTER.findall(completion) or LETTER_FALLBACK.findall(completion)
    return bool(found) and found[-1].upper() == str(gold).strip().upper()


def grade_label(completion: str, gold: str) -> bool:
    """FOLIO labels True / False / Uncertain (Unknown is read as Uncertain)."""
    found = BOXED_LABEL.findall(completion)
    if not found:
        return False
    norm = {"unknown": "uncertain"}
    got = norm.get(found[-1].lower(), found[-1].lower())
    return got == norm.get(str(gold).strip().lower(), str(gold).strip().lower())


GRADERS = {"math": grade_math, "choice": grade_choice, "label": grade_label, "none_answer": grade_none_answer}
