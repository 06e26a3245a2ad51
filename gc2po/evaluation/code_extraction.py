"""The code of a chat completion for HumanEval: the last Python code fence, else the raw text."""

from __future__ import annotations

import re

PYTHON_TAGS = {"", "py", "py3", "python", "python3"}
# an opening fence with an optional language tag; the block ends at a closing fence on its own
# line or, when the model stopped inside it, at the end of the text
FENCE = re.compile(
    r"```[ \t]*(?P<tag>[^\s`]*)[^\n]*\n(?P<body>.*?)(?:^[ \t]*```|\Z)", re.DOTALL | re.MULTILINE
)


def extract_code(completion: str, prompt: str) -> str:
    """The code to append to ``prompt``: the last Python (or untagged) fenced block of a chat
    completion, preceded by a newline (a whole function then overrides the prompt's stub), or
    the raw completion when it has none. Reads ```py, ```Python, ```python3, ``` python, CRLF
    line endings and an unterminated fence."""
    text = completion.replace("\r\n", "\n").replace("\r", "\n")
    blocks = [
        m.group("body") for m in FENCE.finditer(text) if m.group("tag").lower() in PYTHON_TAGS
    ]
    return "\n" + blocks[-1] if blocks else completion
