"""Pure torch math of GC2PO: segmentation, counterfactual reward, advantages, losses, and the
baselines' formulas (``gc2po.core.baselines``, ``gc2po.core.step_baselines``).

Nothing here imports trl or transformers, does I/O or keeps global state beyond the
name -> entry registries filled at import.
"""

from gc2po.core.advantages import gc2po_token_advantages, token_advantages
from gc2po.core.counterfactual import (
    CounterfactualParams,
    CounterfactualReward,
    counterfactual_reward,
)
from gc2po.core.groups import grpo_advantage
from gc2po.core.losses import clipped_token_loss
from gc2po.core.perturbations import PERTURBATIONS
from gc2po.core.segment import segment_episodes, token_episode_ids

__all__ = [
    "PERTURBATIONS",
    "CounterfactualParams",
    "CounterfactualReward",
    "clipped_token_loss",
    "counterfactual_reward",
    "gc2po_token_advantages",
    "grpo_advantage",
    "segment_episodes",
    "token_advantages",
    "token_episode_ids",
]
