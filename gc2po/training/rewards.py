"""Outcome rewards R_out in {0, 1} as TRL reward functions, and the functions a run trains with.

TRL calls ``f(prompts, completions, completion_ids, **columns)``; each function here is
named ``outcome`` so every method logs ``rewards/outcome/mean``. A method that owns its reward
(``gc2po.methods.base.Method.rewards``, e.g. the f x p control) trains on it, and the outcome is
still computed and logged beside it with weight 0 (:func:`reward_functions`).
"""

from __future__ import annotations

import json

from gc2po.data.tasks import BENCHMARK, TESTBED


def _text(completion) -> str:
    return completion[-1]["content"] if isinstance(completion, list) else completion


def testbed_outcome(prompts, completions, meta_json, **kwargs) -> list[float]:
    """Testbed oracle: 1 when the boxed answer is the gold answer."""
    from gc2po.testbed.metrics import graded_completions

    return [float(r.f) for r in graded_completions(completions, meta_json, kwargs.get("question"))]


def benchmark_outcome(prompts, completions, answer, meta_json, **kwargs) -> list[float]:
    """Each record's grader (``meta.grader``; math-verify when absent), as evaluation grades it."""
    from gc2po.evaluation.graders import grade_record

    return [
        float(grade_record({"answer": a, "meta": json.loads(meta)}, _text(c)))
        for c, a, meta in zip(completions, answer, meta_json)
    ]


testbed_outcome.__name__ = "outcome"
benchmark_outcome.__name__ = "outcome"
REWARDS = {TESTBED: testbed_outcome, BENCHMARK: benchmark_outcome}
# (lowest, highest) value a reward function can return: methods whose advantages divide by a
# trajectory score (GC2PO) check it before training; a user's function declares it the same way
for _function in REWARDS.values():
    _function.reward_range = (0.0, 1.0)


def reward_functions(method, task: str) -> list:
    """The reward functions a run of ``method`` (a ``gc2po.methods.base.Method``) on ``task``
    trains with, the outcome first (TRL logs each as ``rewards/<name>/mean``; the rollout services
    read the first as a continuation's outcome): ``[outcome]``, or for a method that owns its
    reward ``[outcome, its reward]``, which the method's fixed ``reward_weights`` weigh 0 and 1.
    A task the method has no reward for is refused, naming both."""
    if method.rewards is None:
        return [REWARDS[task]]
    if task not in method.rewards:
        raise ValueError(
            f"method {method.name!r} trains on a reward of its own, defined for task(s) "
            f"{sorted(method.rewards)} only, not for task {task!r}"
        )
    return [REWARDS[task], method.rewards[task]]


def check_nonnegative_rewards(method: str, functions, weights) -> None:
    """Refuse reward functions (with their weights) whose weighted value can go below 0, naming
    the first such one; a function without a ``reward_range`` attribute could return anything.
    functions [F] (callables or models), weights [F] numbers -> None or ValueError."""
    need = f"method {method!r} needs rewards >= 0 (the paper's R_out is in {{0, 1}})"
    for function, weight in zip(functions, weights):
        name = getattr(function, "__name__", type(function).__name__)
        bounds = getattr(function, "reward_range", None)
        if bounds is None:
            raise ValueError(
                f"{need}; reward function {name!r} declares no range: set "
                f"{name}.reward_range = (lowest, highest)"
            )
        lowest = min(float(weight) * float(bounds[0]), float(weight) * float(bounds[1]))
        if lowest < 0:
            raise ValueError(
                f"{need}; reward function {name!r} (range {list(bounds)}) with weight {weight} "
                f"can give {lowest:g}: make it >= 0 or use another method"
            )


def combined_rewards(per_function, weights):
    """One reward per completion as TRL combines them: the weighted sum over reward functions,
    skipping a function's NaN (it did not score the completion); NaN where no function scored it.
    per_function [B, F], weights [F] -> [B]."""
    import torch

    rewards = (per_function * weights.to(per_function.device)).nansum(1)
    return torch.where(
        torch.isnan(per_function).all(1), torch.full_like(rewards, torch.nan), rewards
    )
