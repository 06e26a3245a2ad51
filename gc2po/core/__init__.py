"""Pure torch math of GC2PO: segmentation, counterfactual reward, advantages, losses.

Nothing here imports trl or transformers, does I/O or keeps global state beyond the
name -> function registries.
"""

from gc2po.core.advantages import ADVANTAGE_ESTIMATORS, token_advantages
from gc2po.core.counterfactual import PERTURBATIONS, CounterfactualReward, counterfactual_reward
from gc2po.core.losses import clipped_token_loss
from gc2po.core.segment import segment_episodes, token_episode_ids

__all__ = [
    "ADVANTAGE_ESTIMATORS",
    "PERTURBATIONS",
    "CounterfactualReward",
    "clipped_token_loss",
    "counterfactual_reward",
    "segment_episodes",
    "token_advantages",
    "token_episode_ids",
]
