"""Where a completion states its final answer.

Only a stated final answer counts; a number restated from the question or computed on the way
never does. What counts as stating it follows what other graders accept (math-verify, Minerva /
lm-evaluation-harness, simple-evals, Qwen2.5-Math):

1. the last group of boxes: ``\\boxed{..}`` / ``\\fbox{..}`` (several boxes joined only by
   connectors such as ``,``, ``and``, ``\\quad`` form one group: a multi-part answer); an answer
   phrase written after that group (Minerva's closing line after a boxed step) comes first;
2. else the statement after the last answer phrase: ``The (final) answer is X``, ``Answer: X``,
   ``**Answer:** X``, ``Answer $X$``, Minerva's ``Final Answer: The final answer is $X$. I hope
   it is correct.``, or ``X is the answer / solution``;
3. else the expression the response closes with: its last words are ``$X$``, ``\\[X\\]`` or a
   number (a unit or percent sign may follow), or the whole response is one expression.

Text after an end-of-turn token (``<|im_end|>``, ``<|im_start|>``, ...) is not part of the
response, nor is a reasoning block closed by ``</think>``.
"""

from __future__ import annotations

import re

END_OF_TURN = (
    "<|im_end|>",
    "<|im_start|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<｜end▁of▁sentence｜>",
    "<|end|>",
)
REASONING_END = "</think>"
BOX_COMMANDS = re.compile(r"\\(?:boxed|fbox)\s*(?=\{)|\\boxed\s+(?=[^\s{])")
UNBRACED_BOX_CONTENT = re.compile(r"[^\s$]+")
# between boxes of one group: separators, spacing, \text{..}, math delimiters, a part's label
# (``y_2 =``) and one unit word (``\boxed{1} papers and \boxed{2} bins``)
BOX_CONNECTOR = re.compile(
    r"^\s*(?:[A-Za-z]+\s+(?=and|or|,))?(?:\s|[,;.&$]|\\q?quad|\\[,;:! "
    r"]|\\text\{[^{}]*\}|\\\[|\\\]|\\\(|\\\)"
    r"|\band\b|\bor\b|[A-Za-z](?:_\{?\w+\}?)?\s*=)*$",
    re.IGNORECASE,
)
# display math may span lines, inline math may not (as in math-verify); bounded, so that an
# unclosed delimiter costs linear time
MATH_SPAN = re.compile(
    r"\$\$.{1,2000}?\$\$|\\\[.{1,2000}?\\\]|(?<!\\)\$(?:\\\$|[^$\n]){1,1000}?(?<!\\)\$"
    r"|\\\([^\n]{1,1000}?\\\)",
    re.DOTALL,
)
ANSWER_PHRASE = re.compile(
    r"(?:\*\*)?\b(?:final\s+answer|answer)\b(?:\*\*)?"
    r"(?:\s*(?:is|was|will\s+be|would\s+be|=|:)(?:\s*\*\*)?\s*:?|[ \t]*(?=\$|\\\[|\\\(|\*\*\$))",
    re.IGNORECASE,
)
ANSWER_AFTER = re.compile(
    r"\bis\s+(?:our|the|my)\s+(?:final\s+)?(?:answer|solution)\b", re.IGNORECASE
)
CLOSING_PUNCTUATION = " \t\n.,;:!*"  # not "?": a question states no answer
MINERVA_CLOSING = "i hope it is correct"
UNIT = r"[ \t]*(?:\\?%|percent|pct|[$€£¥]|[A-Za-z]{1,2}[²³]?)"
NUMBER = r"[-+−]?(?:\d{1,3}(?:[ ,]\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?|\.\d+)(?:\s*/\s*\d+)?"
NUMBER_AT_END = re.compile(rf"(?:^|(?<=[\s=:(~$€£¥]))(?P<number>{NUMBER})(?P<unit>{UNIT})?$")
SPAN_UNIT_AT_END = re.compile(rf"{UNIT}$")
# a closing expression counts when its sentence states it (``X is 5``, ``= 5``, ``: 5``, ``that 5``)
STATING_CUE = re.compile(
    r"\b(?:is|are|be|equals?|gives?|get|obtain|yields?|becomes?|that)\b|'s\b|[=:≈]", re.IGNORECASE
)
STATEMENT_CHARS = 1000
SENTENCE_END = re.compile(r"[.!?](?=\s)|\n")


def response_text(completion: str) -> str:
    """The completion up to its first end-of-turn token and, when it closes a reasoning block,
    after its last ``</think>`` (an answer inside the reasoning is a draft, as in TRL and rllm)."""
    cut = min(
        (completion.index(t) for t in END_OF_TURN if t in completion), default=len(completion)
    )
    return completion[:cut].rpartition(REASONING_END)[2]


def _closing_braces(text: str) -> dict[int, int]:
    """Position of each ``{`` -> position of its matching ``}`` (one pass; unclosed ones absent)."""
    open_at, closing = [], {}
    for brace in re.finditer(r"[{}]", text):
        if brace.group(0) == "{":
            open_at.append(brace.start())
        elif open_at:
            closing[open_at.pop()] = brace.start()
    return closing


def _box_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of every balanced \\boxed{...} / \\fbox{...} (and ``\\boxed 5``);
    an unclosed box holds no answer."""
    spans, closing = [], None
    for match in BOX_COMMANDS.finditer(text):
        i = match.end()
        if text[i] != "{":  # \boxed 5: up to the next space or $
            token = UNBRACED_BOX_CONTENT.match(text, i)
            spans.append((match.start(), token.end(), token.group(0)))
            continue
        closing = _closing_braces(text) if closing is None else closing
        if i in closing:
            spans.append((match.start(), closing[i] + 1, text[i + 1 : closing[i]].strip()))
    return spans


def last_box_group(text: str) -> tuple[list[str], int] | None:
    """Contents of the last group of boxes (one answer, or the parts of a multi-part one) and
    where the group ends; None without a box."""
    spans = _box_spans(text)
    if not spans:
        return None
    group = [spans[-1]]
    for span in reversed(spans[:-1]):
        between = text[span[1] : group[0][0]]
        if len(between) > 80 or not BOX_CONNECTOR.match(between):
            break
        group.insert(0, span)
    return [content for _, _, content in group], group[-1][1]


def _statement_end(text: str, start: int) -> int:
    """Where the statement starting at ``start`` ends: the first sentence end or line break
    outside math (a period inside ``$..$`` or a line break inside ``$$..$$`` does not end it);
    a statement is at most STATEMENT_CHARS long."""
    window = text[start : start + STATEMENT_CHARS]
    spans = [(m.start(), m.end()) for m in MATH_SPAN.finditer(window)]
    for stop in re.finditer(r"[.!?](?=\s|$)|\n", window):
        if not any(lo <= stop.start() < hi for lo, hi in spans):
            return start + stop.start()
    return start + len(window)


def phrase_answers(text: str, after: int = 0, limit: int = 4) -> list[str]:
    """Statements after the last ``limit`` answer phrases at or after ``after``, the last one
    first ('The answer is X', 'Answer: X', 'X is the answer')."""
    phrases = [(m.start(), m.end(), "before") for m in ANSWER_PHRASE.finditer(text, after)]
    phrases += [(m.start(), m.start(), "after") for m in ANSWER_AFTER.finditer(text, after)]
    statements = []
    for start, end, side in sorted(phrases, reverse=True)[:limit]:
        if side == "before":
            statement = text[end : _statement_end(text, end)].strip().strip("*").strip()
        else:
            statement = closing_expression(text[max(after, start - STATEMENT_CHARS) : start])
        if statement:
            statements.append(statement)
    return statements


def _is_stated(text: str, start: int) -> bool:
    """Whether the expression at ``text[start:]`` is stated: its sentence says what it is, or it
    stands alone (at most a one-word label before it)."""
    masked = MATH_SPAN.sub(lambda m: "M" * len(m.group(0)), text[:start])
    ends = list(SENTENCE_END.finditer(masked))
    sentence = masked[ends[-1].end() :] if ends else masked
    alone = not ends and len(sentence.split()) <= 1
    return alone or bool(STATING_CUE.search(sentence))


def _without_closing_words(text: str) -> str:
    """The text without trailing punctuation and Minerva's 'I hope it is correct.'."""
    while True:
        stripped = text.rstrip(CLOSING_PUNCTUATION).removesuffix("\\.")
        if stripped.lower().endswith(MINERVA_CLOSING):
            stripped = stripped[: -len(MINERVA_CLOSING)]
        if stripped == text:
            return text
        text = stripped


def closing_expression(text: str) -> str | None:
    """The stated expression the text ends with: a math environment or a number, a unit or
    percent sign allowed after it; or the whole text when it is one expression (no spaces).
    An expression the text merely stops at (``... and then 13``) is none. Only the last
    STATEMENT_CHARS characters are read."""
    text = _without_closing_words(text)[-STATEMENT_CHARS:]
    unit = SPAN_UNIT_AT_END.search(text[-20:])
    before_unit = text[: len(text) - len(unit.group(0))] if unit else text
    for candidate in (text, before_unit):
        spans = list(MATH_SPAN.finditer(candidate))
        if spans and spans[-1].end() == len(candidate):
            start = spans[-1].start()
            return text[start:] if _is_stated(text, start) else None
    tail = len(text) - 100
    number = NUMBER_AT_END.search(text, max(tail, 0))
    if number is not None:
        percent = "%" if re.search(r"%|percent|pct", number.group("unit") or "") else ""
        stated = _is_stated(text, number.start())
        return number.group("number").replace("−", "-") + percent if stated else None
    stripped = text.strip()
    if len(stripped) <= 100 and re.search(r"\w", stripped) and not re.search(r"\s", stripped):
        return stripped
    return None


def boxed_forms(parts: list[str]) -> list[str]:
    """Texts to parse for a box group: one part in math mode first (math-verify reads ``$28\\%$``
    but not ``\\boxed{28\\%}``), several parts as boxes (read as one set)."""
    joined_boxes = ", ".join(f"\\boxed{{{part}}}" for part in parts)
    in_math = f"${', '.join(parts)}$"
    return [in_math, joined_boxes] if len(parts) == 1 else [joined_boxes, in_math]


def final_answer_candidates(completion: str) -> list[str]:
    """The stated final answer as texts to try in order; empty when the completion states none."""
    text = response_text(completion)
    group = last_box_group(text)
    if group is not None:
        parts, end = group
        return phrase_answers(text, after=end) + boxed_forms(parts)
    closing = closing_expression(text)
    return phrase_answers(text) + ([closing] if closing is not None else [])
