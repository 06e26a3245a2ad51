"""Control (oracle): GRPO trained on f x p, the outcome times the oracle's process validity of the
completion (a positive control; not in the paper). It shows what a perfect process
reward can do on the testbed: if even this cannot move a split, no process reward will. Testbed
only: the oracle grades testbed problems alone."""

from __future__ import annotations

import torch

from gc2po.data.tasks import TESTBED
from gc2po.methods.base import RolloutBatch, register_method
from gc2po.methods.grpo import grpo_advantages


def outcome_x_validity(prompts, completions, meta_json, **kwargs) -> list[float]:
    """f x p per completion [B] (a TRL reward function): its process validity p when its boxed
    answer is right (f = 1), else 0."""
    from gc2po.testbed.metrics import graded_completions

    graded = graded_completions(completions, meta_json, kwargs.get("question"))
    return [float(result.f * result.p) for result in graded]


outcome_x_validity.reward_range = (0.0, 1.0)


@register_method(
    "grpo_fxp",
    "Control (oracle): GRPO on the reward f x p, outcome times the oracle's process validity",
    display_name="Control (oracle): GRPO on f x p",
    role="control",
    colour="#2f4f4f",
    order=120,
    rewards={TESTBED: outcome_x_validity},
    fidelity="not in any paper: a positive control with the testbed oracle's process validity; "
    "GRPO otherwise",
)
def grpo_fxp_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """GRPO's advantages of the reward it trained on (``batch.rewards`` = f x p)."""
    return grpo_advantages(batch, config)
