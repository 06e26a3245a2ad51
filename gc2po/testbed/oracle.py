"""Process-validity oracle of the testbed.

Episode l is valid when it writes ``left op right = result`` with ``left`` the model's own
previous result (the start value for l = 1), ``op`` and ``right`` the problem's step l, and
``result`` computed correctly. Process validity p = valid episodes / max(steps, episodes);
final correctness f = the boxed answer equals the gold answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gc2po.core.segment import segment_with_info
from gc2po.testbed.generator import OPS, Problem

EQUATION = re.compile(r"(-?\d+)\s*([+\-*])\s*(-?\d+)\s*=\s*(-?\d+)")
BOXED = re.compile(r"\\boxed\{\s*(-?\d+)\s*\}")
GROUPS = ("near_ideal", "near_miss", "lucky_guess", "fully_bad")


@dataclass(frozen=True)
class OracleResult:
    f: int  # final correctness in {0, 1}
    p: float  # process validity in [0, 1]
    episode_valid: tuple[bool, ...]
    group: str  # one of GROUPS
    formatted: bool  # episode tags were found


def final_answer(completion: str) -> int | None:
    found = BOXED.findall(completion)
    return int(found[-1]) if found else None


def assign_group(f: int, p: float, p_threshold: float = 0.5) -> str:
    """near ideal (p high, f=1), near miss (p high, f=0), lucky guess (p low, f=1), fully bad."""
    high = p >= p_threshold
    return {(True, 1): "near_ideal", (True, 0): "near_miss", (False, 1): "lucky_guess", (False, 0): "fully_bad"}[(high, int(f))]


def grade(
    problem: Problem, completion: str, *, p_threshold: float = 0.5, max_episodes: int = 32
) -> OracleResult:
    """Grade one completion of ``problem`` (malformed text grades as invalid, never raises).
    Episodes are segmented as the trainer segments them (``max_episodes`` as its setting), so
    ``episode_valid[l]`` is the trainer's episode l."""
    seg = segment_with_info(completion, max_episodes)
    texts = [completion[s:e] for s, e in seg.spans]
    valid = []
    previous = problem.start
    for index, text in enumerate(texts):
        match = EQUATION.search(text)
        if match is None:
            valid.append(False)
            continue
        left, op, right, result = int(match[1]), match[2], int(match[3]), int(match[4])
        ok = index < len(problem.steps) and (op, right) == problem.steps[index]
        valid.append(bool(ok and left == previous and OPS[op](left, right) == result))
        previous = result
    denominator = max(len(problem.steps), len(texts))
    p = sum(valid) / denominator
    answer = final_answer(completion)
    f = int(answer is not None and answer == problem.answer)
    return OracleResult(f, p, tuple(valid), assign_group(f, p, p_threshold), not seg.used_fallback)
