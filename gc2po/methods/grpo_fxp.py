"""Control (oracle): GRPO trained on f x p, the outcome times the oracle's process validity of the
completion (a positive control; not in the paper). It shows what a perfect process reward can do
on the testbed: if even this cannot move a split, no process reward will. Testbed only: the
oracle grades testbed problems alone.

With ``cf_signal_rho`` it is the gated dose-response: the reward is f x p_rho, where p_rho is the
process validity computed, as the oracle computes p, from the per-episode validity plus noise to
a within-group correlation rho given f (``gc2po.core.signals.mix_to_correlation``, clamped to
[0, 1]: ``gc2po.core.signals.gated_validity``). At rho 1 it is f x p exactly. The axis is the one
R_cf's measured rho lives on, so the sweep answers how good a process reward must be in the form
that uses it as a gate on the outcome.

It is the gated form (``grpo_gated``) with the oracle fixed and f x p as its own reward (logged
as ``rewards/outcome_x_validity/mean``); ``{method: grpo_gated, trainer: {cf_signal: oracle,
cf_signal_rho: 0.07}}`` trains the same advantages under another name."""

from __future__ import annotations

import torch

from gc2po.data.tasks import TESTBED
from gc2po.methods.base import RolloutBatch, register_preset
from gc2po.methods.grpo import grpo_advantages
from gc2po.methods.grpo_gated import grpo_gated_advantages


def outcome_x_validity(prompts, completions, meta_json, **kwargs) -> list[float]:
    """f x p per completion [B] (a TRL reward function): its process validity p when its boxed
    answer is right (f = 1), else 0."""
    from gc2po.testbed.metrics import graded_completions

    graded = graded_completions(completions, meta_json, kwargs.get("question"))
    return [float(result.f * result.p) for result in graded]


outcome_x_validity.reward_range = (0.0, 1.0)


def grpo_fxp_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """GRPO's advantages of the reward it trained on: f x p (``batch.rewards``, its own reward
    function's), or with ``cf_signal_rho`` the gated form's on f x p_rho (``batch.r_cf`` [B, 1],
    the oracle signal of a trajectory). Without rho, ``grpo_gated`` with ``cf_signal: oracle``
    trains on the trajectory signal f x p, which is this reward exactly
    (tests/methods/test_forms.py)."""
    if config.cf_signal_rho is None:
        return grpo_advantages(batch, config)
    return grpo_gated_advantages(batch, config)


register_preset(
    "grpo_gated",
    "grpo_fxp",
    "Control (oracle): GRPO on the reward f x p, outcome times the oracle's process validity",
    fixed={"cf_signal": "oracle"},
    display_name="Control (oracle): GRPO on f x p",
    colour="#2f4f4f",
    order=120,
    role="control",
    sweeps=("cf_signal_rho",),
    fidelity="not in any paper: a positive control with the testbed oracle's process validity; "
    "GRPO otherwise",
    rewards={TESTBED: outcome_x_validity},
    advantages=grpo_fxp_advantages,
    # as registered before the generic form existed (the oracle's signal needs no states)
    nonnegative_rewards=False,
    cf_state="episode_end",
)
