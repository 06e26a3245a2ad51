"""GRPO, Dr. GRPO and the length-penalty baseline (Arora & Zanette 2025)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gc2po.core.baselines import length_penalty_advantages
from gc2po.core.groups import dr_grpo_advantage, group_normalised
from gc2po.methods.base import RolloutBatch, advantage_metrics, register_method


@register_method(
    "grpo",
    "GRPO (Shao et al. 2024): group-normalised outcome advantage, clipped surrogate, k3 KL",
    display_name="GRPO",
    colour="#1f77b4",
    order=10,
    role="reference",
    fidelity="as in DeepSeekMath; clip 0.2 and population std (TRL: sample std, a rescaling) are "
    "choices the paper leaves open",
)
def grpo_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """A_i = (r_i - mean) / (std + 1e-4), population std, on every token of o_i."""
    adv = group_normalised(batch.rewards, batch.row_index, batch.group_size, gather=batch.gather)
    return adv, advantage_metrics(adv)


@register_method(
    "dr_grpo",
    "Dr. GRPO (Liu et al. 2025): no std scaling, constant token normaliser",
    display_name="Dr.GRPO",
    colour="#8c564b",
    order=50,
    loss_type="dr_grpo",
    fixed={"beta": 0.0},
    fidelity="as in the authors' code (normaliser = max_completion_length, beta 0)",
)
def dr_grpo_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """A_i = r_i - mean (no std)."""
    adv = group_normalised(
        batch.rewards,
        batch.row_index,
        batch.group_size,
        estimator=dr_grpo_advantage,
        gather=batch.gather,
    )
    return adv, advantage_metrics(adv)


@dataclass(frozen=True)
class LengthPenaltySettings:
    """The length penalty's settings (``trainer.method_args`` of a ``length_penalty`` run)."""

    alpha: float = 0.1  # weight of the penalty


@register_method(
    "length_penalty",
    "Length penalty (Arora & Zanette 2025) on correct samples, GRPO estimator",
    display_name="Length penalty",
    colour="#ff7f0e",
    order=20,
    settings=LengthPenaltySettings,
    fidelity="deviation: GRPO's estimator instead of RLOO in OpenRLHF-PPO",
)
def length_penalty_advantages_(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """Length-penalised reward of the correct samples, then GRPO's estimator."""
    columns = torch.stack([batch.rewards.float(), batch.lengths.float()], dim=-1)  # [B, 2]
    adv = group_normalised(
        columns,
        batch.row_index,
        batch.group_size,
        gather=batch.gather,
        estimator=lambda grouped: length_penalty_advantages(
            grouped[..., 0], grouped[..., 1], config.method_settings.alpha
        ),
    )
    return adv, advantage_metrics(adv)
