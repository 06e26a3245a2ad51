"""GVPO (Zhang et al. 2025, arXiv 2504.19599; BASELINES 3).

Deviations, disclosed: the loss is averaged over groups (the authors' code sums over the
responses of a micro-batch; a constant factor), and all completions of a group must be in one
loss computation on one process, so a generation batch is one optimisation micro-batch
(``steps_per_generation = 1``) holding whole groups (checked in ``GC2POConfig``).
"""

from __future__ import annotations

import torch

from gc2po.core.advantages import dr_grpo_advantage, group_normalised
from gc2po.core.baselines import gvpo_loss
from gc2po.methods.base import RolloutBatch, advantage_metrics, register_method


def gvpo_method_loss(logps, inputs, config) -> torch.Tensor:
    old = inputs.get("old_per_token_logps")
    old = logps.detach() if old is None else old  # on-policy: the sampling policy is the current one
    return gvpo_loss(logps, old, inputs["completion_mask"], inputs["gvpo_group"], inputs["gvpo_centered_reward"],
                     beta=config.gvpo_beta, scored=inputs["gvpo_scored"])


@register_method(
    "gvpo", "GVPO: MSE between centred implicit rewards beta*sum log(pi/pi_old) and centred rewards",
    loss=gvpo_method_loss, fixed={"beta": 0.0}, local_groups=True,
    fidelity="deviation: mean over groups instead of the sum over a micro-batch; one micro-batch per generation batch",
)
def gvpo_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """No advantage in the usual sense: the loss needs each sample's group and centred reward,
    which travel with the (shuffled) batch as extra per-row tensors."""
    centred = group_normalised(batch.rewards, batch.row_index, batch.group_size, estimator=dr_grpo_advantage,
                               gather=batch.gather)
    batch.extras["gvpo_group"] = torch.div(batch.row_index, batch.group_size, rounding_mode="floor")
    batch.extras["gvpo_centered_reward"] = centred
    batch.extras["gvpo_scored"] = torch.isfinite(batch.rewards)
    return centred, advantage_metrics(centred)
