"""The task vocabulary shared by training, evaluation and the workflow config.

``testbed``: the synthetic testbed, prompted with its instruction and graded by its oracle.
``benchmark``: any other record set (benchmarks and training sets alike), prompted by the record's
``meta.answer_format`` and graded by its ``meta.grader`` (math when absent).
"""

from __future__ import annotations

TESTBED = "testbed"
BENCHMARK = "benchmark"
TASKS = (TESTBED, BENCHMARK)
# spellings of earlier versions: run configs' ``task: math``, the workflow's ``mode: benchmarks``
OLD_SPELLINGS = {"math": BENCHMARK, "benchmarks": BENCHMARK}


def check_task(value, where: str) -> str:
    """``value`` when it is a task; else a ValueError naming ``where`` (file and key) and, for an
    old spelling, the value that replaces it."""
    if value in TASKS:
        return value
    if isinstance(value, str) and value in OLD_SPELLINGS:
        raise ValueError(
            f"{where}: {value!r} is now spelled {OLD_SPELLINGS[value]!r}: "
            f"set it to {OLD_SPELLINGS[value]}"
        )
    raise ValueError(f"{where}: must be one of {list(TASKS)}, got {value!r}")
