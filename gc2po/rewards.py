"""Outcome rewards R_out in {0, 1} as TRL reward functions.

TRL calls ``f(prompts, completions, completion_ids, **columns)``; each function here is
named ``outcome`` so every method logs ``rewards/outcome/mean``.
"""

from __future__ import annotations

import json


def _text(completion) -> str:
    return completion[-1]["content"] if isinstance(completion, list) else completion


def testbed_outcome(prompts, completions, meta_json, **kwargs) -> list[float]:
    """Testbed oracle: 1 when the boxed answer is the gold answer."""
    from gc2po.testbed.generator import Problem
    from gc2po.testbed.oracle import grade

    out = []
    for completion, meta, question in zip(completions, meta_json, kwargs.get("question", [None] * len(completions))):
        record = {"id": "", "question": question or "", "meta": json.loads(meta)}
        out.append(float(grade(Problem.from_record(record), _text(completion)).f))
    return out


def math_outcome(prompts, completions, answer, **kwargs) -> list[float]:
    """math-verify against the gold answer."""
    from gc2po.evaluation.graders import grade_math

    return [float(grade_math(_text(c), a)) for c, a in zip(completions, answer)]


testbed_outcome.__name__ = "outcome"
math_outcome.__name__ = "outcome"
REWARDS = {"testbed": testbed_outcome, "math": math_outcome}


def combined_rewards(per_function, weights):
    """One reward per completion as TRL combines them: the weighted sum over reward functions,
    skipping a function's NaN (it did not score the completion); NaN where no function scored it.
    per_function [B, F], weights [F] -> [B]."""
    import torch

    rewards = (per_function * weights.to(per_function.device)).nansum(1)
    return torch.where(torch.isnan(per_function).all(1), torch.full_like(rewards, torch.nan), rewards)
