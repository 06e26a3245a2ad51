"""What a training method is: a name, the TRL loss aggregation it uses, the config values it
fixes, and a function from a scored rollout batch to advantages. No trl import here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class RolloutBatch:
    """One generation batch after scoring, as a method sees it.

    ``*_all`` tensors cover every process's completions (groups may span processes);
    the rest are this process's rows [B, ...]. ``local`` slices this process's rows out of the
    gathered ones.
    """

    rewards_all: torch.Tensor  # [N] outcome reward R_out
    lengths_all: torch.Tensor  # [N] completion lengths in tokens
    group_size: int
    local: slice
    completion_mask: torch.Tensor  # [B, T]
    gather: Callable[[torch.Tensor], torch.Tensor]  # all-gather along dim 0 across processes
    old_logps: torch.Tensor | None = None  # [B, T] sampling-policy log-probs
    episode_ids: torch.Tensor | None = None  # [B, T], -1 = none
    s_sta: torch.Tensor | None = None  # [B, Lmax]
    s_exp: torch.Tensor | None = None  # [B, Lmax]


AdvantageFn = Callable[[RolloutBatch, Any], tuple[torch.Tensor, dict[str, float]]]


@dataclass(frozen=True)
class Method:
    name: str
    summary: str
    loss_type: str  # TRL loss aggregation: "grpo" (1/|o_i| then mean) or "dr_grpo" (constant normaliser)
    advantages: AdvantageFn  # (batch, config) -> ([B] or [B, T] advantages, metrics)
    needs_episodes: bool = False  # needs segmentation, old log-probs and episode states
    defaults: dict[str, Any] = field(default_factory=dict)  # config values the method fixes
    fidelity: str = "as in the paper"  # how faithful to the original; shown in the README table


def group_view(values: torch.Tensor, group_size: int) -> torch.Tensor:
    """[N] -> [N / K, K] (completions of one prompt are consecutive, as TRL's sampler emits them)."""
    if values.numel() % group_size:
        raise ValueError(f"{values.numel()} completions do not split into groups of {group_size}")
    return values.view(-1, group_size)
