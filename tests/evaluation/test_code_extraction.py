"""extract_code: the fences chat models write around HumanEval completions (issue 14)."""

import pytest

from gc2po.evaluation.sandbox import extract_code, humaneval_program, run_python

BODY = "def add(a, b):\n    return a + b\n"


@pytest.mark.parametrize(
    "completion",
    [
        f"Here:\n```python\n{BODY}```\n",
        f"```py\n{BODY}```",
        f"```Python\n{BODY}```",
        f"```python3\n{BODY}```",
        f"``` python\n{BODY}```",
        f"```\n{BODY}```",
        f"Sure.\r\n```python\r\n{BODY.replace(chr(10), chr(13) + chr(10))}```\r\n",
        f"```python\n{BODY}",  # the model stopped inside the fence
        # the last block counts
        f"```python\ndef add(a, b):\n    return 0\n```\nFixed:\n```python\n{BODY}```\nDone.",
        # other languages skipped
        f"```bash\npip install nothing\n```\n```python\n{BODY}```\n```text\nadd(1, 2) -> 3\n```",
    ],
)
def test_fenced_code_is_extracted(completion):
    assert extract_code(completion, "") == "\n" + BODY


def test_raw_completion_and_non_python_fences_are_kept_as_is():
    assert extract_code("    return a + b\n", "") == "    return a + b\n"
    assert extract_code("```bash\nls\n```", "") == "```bash\nls\n```"


@pytest.mark.system("bubblewrap", "util-linux", "python3-minimal")
def test_extracted_code_passes_the_humaneval_check():
    prompt = 'def add(a, b):\n    """Sum of a and b."""\n'
    test = "def check(candidate):\n    assert candidate(2, 3) == 5\n"
    completion = f"Here you go:\r\n```Python\r\n{BODY.replace(chr(10), chr(13) + chr(10))}"
    assert run_python(
        humaneval_program(prompt, extract_code(completion, prompt), test, "add")
    ).passed
