"""Control (oracle): GRPO trained on f x p, the outcome times the oracle's process validity of the
completion (a positive control; not in the paper). It shows what a perfect process reward can do
on the testbed: if even this cannot move a split, no process reward will. Testbed only: the
oracle grades testbed problems alone.

With ``cf_signal_rho`` it is the gated dose-response: the reward is f x p_rho, where p_rho is the
process validity computed, as the oracle computes p, from the per-episode validity plus noise to
a within-group correlation rho given f (``gc2po.core.signals.mix_to_correlation``, clamped to
[0, 1]: ``gc2po.core.signals.gated_validity``). At rho 1 it is f x p exactly. The axis is the one
R_cf's measured rho lives on, so the sweep answers how good a process reward must be in the form
that uses it as a gate on the outcome."""

from __future__ import annotations

import dataclasses

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
    # the oracle's signal, one value per completion (f x p_rho), mixed within each group: a
    # group's completions must sit on one process
    needs_episodes=True,
    needs_cf=True,
    trajectory_signal=True,
    local_groups=True,
    fixed={"cf_signal": "oracle"},
    sweeps=("cf_signal_rho",),
    fidelity="not in any paper: a positive control with the testbed oracle's process validity; "
    "GRPO otherwise",
)
def grpo_fxp_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """GRPO's advantages of the reward it trained on: f x p (``batch.rewards``), or with
    ``cf_signal_rho`` f x p_rho (``batch.r_cf`` [B, 1], the oracle signal of a trajectory)."""
    if config.cf_signal_rho is None:
        return grpo_advantages(batch, config)
    gated = batch.r_cf[:, 0].to(batch.rewards)
    # a row no reward function scored stays unscored (NaN: advantage 0, out of its group)
    rewards = torch.where(torch.isfinite(batch.rewards), gated, batch.rewards)
    return grpo_advantages(dataclasses.replace(batch, rewards=rewards), config)
