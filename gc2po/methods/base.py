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
    extras: dict[str, torch.Tensor] = field(default_factory=dict)  # per-sample tensors a method's loss needs
    services: Any = None  # the trainer: forced_answer_success(...), context_states(...), ... (duck-typed)


AdvantageFn = Callable[[RolloutBatch, Any], tuple[torch.Tensor, dict[str, float]]]
LossFn = Callable[[torch.Tensor, dict, Any], torch.Tensor]  # (per-token log-probs [B,T], inputs, config) -> loss


@dataclass(frozen=True)
class Method:
    name: str
    summary: str
    loss_type: str  # TRL loss aggregation: "grpo" (1/|o_i| then mean) or "dr_grpo" (constant normaliser)
    advantages: AdvantageFn  # (batch, config) -> ([B] or [B, T] advantages, metrics)
    needs_episodes: bool = False  # needs segmentation of the completions into episodes
    needs_cf: bool | None = None  # needs episode states and the counterfactual reward (default: needs_episodes)
    needs_states: bool | None = None  # needs the completions' final-norm hidden states (default: needs_cf)
    fixed: dict[str, Any] = field(default_factory=dict)  # config values the method forces (ablations)
    defaults: dict[str, Any] = field(default_factory=dict)  # config values it uses unless the run config sets them
    fidelity: str = "as in the paper"  # how faithful to the original; shown in the README table
    loss: LossFn | None = None  # replaces TRL's clipped loss when set (GVPO, ReST-MCTS*)
    max_episodes_field: str = "max_episodes"  # config field capping the episodes of a completion

    def __post_init__(self):
        if self.needs_cf is None:
            object.__setattr__(self, "needs_cf", self.needs_episodes)
        if self.needs_states is None:
            object.__setattr__(self, "needs_states", self.needs_cf)


def group_view(values: torch.Tensor, group_size: int) -> torch.Tensor:
    """[N] -> [N / K, K] (completions of one prompt are consecutive, as TRL's sampler emits them)."""
    if values.numel() % group_size:
        raise ValueError(f"{values.numel()} completions do not split into groups of {group_size}")
    return values.view(-1, group_size)
