"""Prompt templates shared by training and evaluation (paper section 4.1: episode tags)."""

from __future__ import annotations

from gc2po.data.tasks import TESTBED

EPISODE_INSTRUCTION = (
    "Solve the problem step by step. Write each reasoning step inside "
    "<episode_1> ... </episode_1>, <episode_2> ... </episode_2>, and so on, then give the "
    "final answer"
)
ANSWER_FORMATS = {
    "math": " in \\boxed{}.",
    "choice": " as \\boxed{X}, where X is the letter of the correct choice.",
    "label": " as \\boxed{True}, \\boxed{False} or \\boxed{Uncertain}.",
    "code": " as a complete Python function in a ```python code block.",
}
# The testbed's tiny model reads a short instruction: every token costs on a 2-core CPU.
TESTBED_INSTRUCTION = "Solve with <episode_i> steps, answer in \\boxed{}."


def build_messages(
    question: str, answer_format: str = "math", *, instruction: str | None = None
) -> list[dict]:
    """Chat messages for one problem: the question followed by the episode instruction."""
    if answer_format not in ANSWER_FORMATS and instruction is None:
        raise ValueError(
            f"answer_format must be one of {sorted(ANSWER_FORMATS)}, got {answer_format!r}"
        )
    text = (
        instruction
        if instruction is not None
        else EPISODE_INSTRUCTION + ANSWER_FORMATS[answer_format]
    )
    return [{"role": "user", "content": f"{question}\n{text}"}]


def record_messages(record: dict, task: str) -> list[dict]:
    """The prompt of a record, the same in training and evaluation: the testbed's instruction, or
    the episode instruction with the record's ``meta.answer_format`` (math when absent)."""
    if task == TESTBED:
        return build_messages(record["question"], instruction=TESTBED_INSTRUCTION)
    return build_messages(record["question"], record.get("meta", {}).get("answer_format", "math"))
