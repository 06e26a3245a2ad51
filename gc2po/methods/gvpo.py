"""GVPO (Zhang et al. 2025, arXiv 2504.19599; BASELINES 3).

Deviations, disclosed: the loss is averaged over groups (the authors' code sums over the
responses of a micro-batch; a constant factor), and all completions of a group must be in one
loss computation, so a generation batch is one optimisation micro-batch
(``steps_per_generation = 1``); groups split across processes are not supported (checked).
"""

from __future__ import annotations

import torch

from gc2po.core.losses import gvpo_loss
from gc2po.methods.base import Method, RolloutBatch, group_view


def gvpo_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """No advantage in the usual sense: the loss needs each sample's group and centred reward,
    which travel with the (shuffled) batch as extra per-sample tensors."""
    rewards = group_view(batch.rewards_all, batch.group_size)
    centered = (rewards - rewards.mean(-1, keepdim=True)).reshape(-1)
    group_ids = torch.arange(batch.rewards_all.numel(), device=centered.device) // batch.group_size
    batch.extras["gvpo_group"] = group_ids[batch.local]
    batch.extras["gvpo_centered_reward"] = centered[batch.local]
    return centered[batch.local], {"advantages/mean": centered.mean().item(),
                                   "advantages/std": centered.std(unbiased=False).item()}


def gvpo_method_loss(logps, inputs, config) -> torch.Tensor:
    mask = inputs["completion_mask"]
    return gvpo_loss(logps, inputs["old_per_token_logps"], mask, inputs["gvpo_group"], inputs["gvpo_centered_reward"],
                     beta=config.gvpo_beta)


GVPO = Method(
    "gvpo", "GVPO: MSE between centred implicit rewards beta*sum log(pi/pi_old) and centred rewards",
    loss_type="grpo", advantages=gvpo_advantages, loss=gvpo_method_loss, fixed={"beta": 0.0},
    fidelity="deviation: mean over groups instead of the sum over a micro-batch; one micro-batch per generation batch",
)
