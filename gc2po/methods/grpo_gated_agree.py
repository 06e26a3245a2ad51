"""GRPO on f x sibling agreement (beyond the paper): the gated form of the policy-only candidate
``sibling_agreement`` (``gc2po_add_agree`` is its additive form). The reward of a completion is
its outcome times the mean, over its episodes, of each episode's agreement with its siblings'
same step (``gc2po.core.signals_policy.gated_signal``); GRPO's advantage of that reward.

It is the positive control's form (``grpo_fxp``: f x p, p from the oracle's validity) with the
oracle replaced by a signal from the policy's own samples: no oracle, no extra model pass. It
inherits the signal's weakness: where most of a group copies the bet, a copy agrees with its
siblings and keeps its reward."""

from __future__ import annotations

import dataclasses

import torch

from gc2po.core.signals_policy import gated_signal
from gc2po.methods.base import RolloutBatch, register_method
from gc2po.methods.grpo import grpo_advantages


@register_method(
    "grpo_gated_agree",
    "GRPO on f x sibling agreement: outcome times the mean agreement of the completion's "
    "episodes with their siblings' (beyond the paper)",
    display_name="GRPO on f x sibling agreement (gated; beyond the paper)",
    colour="#b5cf6b",
    order=98,
    # the signal is per episode over a whole group (agreement needs every sibling on the process)
    needs_episodes=True,
    needs_cf=True,
    local_groups=True,
    fixed={"cf_signal": "sibling_agreement"},
    fidelity="beyond the paper: GRPO on the outcome times the mean sibling agreement of the "
    "completion's episodes (the gated control's form, no oracle)",
)
def grpo_gated_agree_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """GRPO's advantages [B] of the gated reward f x mean_l agreement_l (``batch.r_cf`` [B, L]
    holds the agreement per episode)."""
    gated = gated_signal(batch.r_cf, batch.episode_ids, batch.rewards).to(batch.rewards)
    advantages, metrics = grpo_advantages(dataclasses.replace(batch, rewards=gated), config)
    scored = torch.isfinite(gated)
    mean = gated[scored].mean().item() if bool(scored.any()) else 0.0
    return advantages, {**metrics, "rewards/gated_agreement/mean": mean}
