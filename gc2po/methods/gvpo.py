"""GVPO (Zhang et al. 2025, arXiv 2504.19599).

The loss is the MSE between the group-centred implicit rewards beta * sum log(pi/pi_old) and the
centred rewards, averaged over groups. Training is on-policy (one iteration per batch), where its
gradient decomposes into one term per completion (``gc2po.core.baselines.gvpo_on_policy_loss``):
groups need not be whole in a micro-batch, so GVPO runs with the same batch layout as the others.

Deviations, disclosed: averaged over groups (the authors' code sums over the responses of a
micro-batch; a constant factor); on-policy only (``num_iterations`` 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gc2po.core.baselines import group_scored_counts, gvpo_on_policy_loss
from gc2po.core.groups import dr_grpo_advantage, group_normalised
from gc2po.methods.base import MethodOutput, RolloutBatch, advantage_metrics, register_method


@dataclass(frozen=True)
class GVPOSettings:
    """GVPO's settings (``trainer.method_args`` of a ``gvpo`` run)."""

    beta: float = 0.1  # beta of the implicit reward (the authors' default)

    def check(self) -> None:
        if not self.beta > 0:
            raise ValueError(f"beta must be > 0, got {self.beta!r}")


def gvpo_method_loss(logps, inputs, config) -> torch.Tensor:
    old = inputs.get("old_per_token_logps")
    old = (
        logps.detach() if old is None else old
    )  # on-policy: the sampling policy is the current one
    return gvpo_on_policy_loss(
        logps,
        old,
        inputs["completion_mask"],
        inputs["gvpo_centered_reward"],
        inputs["gvpo_scored_count"],
        beta=config.method_settings.beta,
        group_size=config.num_generations,
    )


@register_method(
    "gvpo",
    "GVPO: MSE between centred implicit rewards beta*sum log(pi/pi_old) and centred rewards",
    display_name="GVPO",
    colour="#9467bd",
    order=40,
    loss=gvpo_method_loss,
    settings=GVPOSettings,
    fixed={"beta": 0.0, "num_iterations": 1},
    fidelity="deviation: mean over groups instead of the sum over a micro-batch; on-policy (one "
    "iteration per batch)",
)
def gvpo_advantages(batch: RolloutBatch, config) -> MethodOutput:
    """No advantage in the usual sense: the loss needs each completion's centred reward (over the
    scored completions of its group) and how many completions of its group were scored; both
    travel with the shuffled batch as per-row tensors (the loss inputs)."""
    centred = group_normalised(
        batch.rewards,
        batch.row_index,
        batch.group_size,
        estimator=dr_grpo_advantage,
        gather=batch.gather,
    )
    scored = group_normalised(
        batch.rewards,
        batch.row_index,
        batch.group_size,
        estimator=group_scored_counts,
        gather=batch.gather,
    )
    loss_inputs = {"gvpo_centered_reward": centred, "gvpo_scored_count": scored}
    return MethodOutput(centred, advantage_metrics(centred), loss_inputs)
