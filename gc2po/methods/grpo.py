"""GRPO, Dr. GRPO and the length-penalty baseline (BASELINES 1, 2, 6)."""

from __future__ import annotations

import torch

from gc2po.core.advantages import dr_grpo_advantage, grpo_advantage
from gc2po.core.rewards import length_penalty_rewards
from gc2po.methods.base import Method, RolloutBatch, group_view


def _sequence_metrics(adv: torch.Tensor) -> dict[str, float]:
    return {"advantages/mean": adv.mean().item(), "advantages/std": adv.std(unbiased=False).item(),
            "advantages/abs_max": adv.abs().max().item()}


def grpo_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """A_i = (r_i - mean) / (std + 1e-4), population std, on every token of o_i."""
    adv = grpo_advantage(group_view(batch.rewards_all, batch.group_size)).reshape(-1)
    return adv[batch.local], _sequence_metrics(adv)


def dr_grpo_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """A_i = r_i - mean (no std)."""
    adv = dr_grpo_advantage(group_view(batch.rewards_all, batch.group_size)).reshape(-1)
    return adv[batch.local], _sequence_metrics(adv)


def length_penalty_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """Length-penalised reward of the correct samples, then GRPO's estimator."""
    shaped = length_penalty_rewards(
        group_view(batch.rewards_all, batch.group_size),
        group_view(batch.lengths_all, batch.group_size),
        config.length_penalty_alpha,
    )
    adv = grpo_advantage(shaped).reshape(-1)
    metrics = _sequence_metrics(adv)
    metrics["rewards/length_penalised/mean"] = shaped.mean().item()
    return adv[batch.local], metrics


GRPO = Method(
    "grpo", "GRPO (Shao et al. 2024): group-normalised outcome advantage, clipped surrogate, k3 KL",
    loss_type="grpo", advantages=grpo_advantages,
    fidelity="as in DeepSeekMath; clip 0.2 and population std are common defaults the paper leaves open",
)
DR_GRPO = Method(
    "dr_grpo", "Dr. GRPO (Liu et al. 2025): no std scaling, constant token normaliser",
    loss_type="dr_grpo", advantages=dr_grpo_advantages, defaults={"beta": 0.0},
    fidelity="as in the authors' code (normaliser = max_completion_length, beta 0)",
)
LENGTH_PENALTY = Method(
    "length_penalty", "Length penalty (Arora & Zanette 2025) on correct samples, GRPO estimator",
    loss_type="grpo", advantages=length_penalty_advantages,
    fidelity="deviation: GRPO's estimator instead of RLOO in OpenRLHF-PPO",
)
