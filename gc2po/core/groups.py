"""The GRPO-family group normalisation of advantages (GRPO, Dr. GRPO), shared by the baselines
and both forms of GC2PO (``gc2po.core.advantages``, the paper's; ``gc2po.core.corrected``), and
the checks of GC2PO's advantage inputs.

A non-finite outcome reward marks a completion that no reward function scored (TRL's
convention): it is left out of its group's statistics and gets advantage 0.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

STD_EPS = 1e-4  # the paper's denominator epsilon: (r - mean) / (std + 1e-4)
Gather = Callable[[torch.Tensor], torch.Tensor]  # all-gather along dim 0 across processes


def check_shape(name: str, tensor: torch.Tensor, shape: tuple[int, ...]) -> None:
    if tuple(tensor.shape) != shape:
        raise ValueError(f"{name} must have shape {list(shape)}, got {list(tensor.shape)}")


# -- group estimators: rewards [G, K] -> advantages [G, K] ----------------------------------------
def grpo_advantage(rewards: torch.Tensor, eps: float = STD_EPS) -> torch.Tensor:
    """GRPO outcome supervision: (r - mean_group r) / (std_group r + eps), population std over
    the scored (finite) rewards of each group; unscored entries get 0."""
    scored = torch.isfinite(rewards)
    centred = dr_grpo_advantage(rewards)
    count = scored.sum(-1, keepdim=True).clamp(min=1)
    std = (centred.pow(2).sum(-1, keepdim=True) / count).sqrt()
    return torch.where(scored, centred / (std + eps), torch.zeros_like(centred))


def dr_grpo_advantage(rewards: torch.Tensor) -> torch.Tensor:
    """Dr. GRPO: r - mean_group r (no std scaling), over the scored entries; unscored get 0."""
    scored = torch.isfinite(rewards)
    values = torch.where(scored, rewards, torch.zeros_like(rewards))
    mean = values.sum(-1, keepdim=True) / scored.sum(-1, keepdim=True).clamp(min=1)
    return torch.where(scored, values - mean, torch.zeros_like(values))


def group_normalised(
    values: torch.Tensor,
    row_index: torch.Tensor,
    group_size: int,
    *,
    estimator: Callable[[torch.Tensor], torch.Tensor] = grpo_advantage,
    gather: Gather | None = None,
) -> torch.Tensor:
    """Apply a group estimator to per-completion values whose rows may be shuffled and split
    over processes.

    values [B, ...] (this process's rows), row_index [B] (each row's position in the whole
    generation batch, where the K completions of a prompt are consecutive) -> [B]; the estimator
    maps [G, K, ...] to [G, K]. ``gather`` concatenates every process's tensors (identity on one
    process).
    """
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size!r}")
    check_shape("row_index", row_index, tuple(values.shape[:1]))
    all_values = values if gather is None else gather(values)
    all_index = row_index if gather is None else gather(row_index)
    total = all_index.numel()
    if total % group_size:
        raise ValueError(f"{total} completions do not split into groups of {group_size}")
    if total and not torch.equal(
        torch.bincount(all_index.long(), minlength=total), torch.ones_like(all_index.long())
    ):
        raise ValueError(
            "row_index must hold every position 0..N-1 of the generation batch exactly once"
        )
    ordered = torch.empty_like(all_values)
    ordered[all_index.long()] = all_values
    return estimator(ordered.view(-1, group_size, *values.shape[1:])).reshape(-1)[row_index.long()]


# -- the inputs of GC2PO's advantages (paper form and corrected) ----------------------------------
def check_episode_inputs(
    r_out: torch.Tensor, episode_ids: torch.Tensor, r_cf: torch.Tensor, mask: torch.Tensor
) -> tuple[int, int]:
    """(B, T) of r_out [B], episode_ids [B,T], r_cf [B,Lmax>=1], mask [B,T];
    raises on a mismatch."""
    if episode_ids.ndim != 2:
        raise ValueError(f"episode_ids must have shape [B, T], got {list(episode_ids.shape)}")
    batch, length = episode_ids.shape
    check_shape("r_out", r_out, (batch,))
    check_shape("mask", mask, (batch, length))
    if r_cf.ndim != 2 or r_cf.shape[0] != batch or r_cf.shape[1] < 1:
        raise ValueError(f"r_cf must have shape [{batch}, Lmax>=1], got {list(r_cf.shape)}")
    if episode_ids.numel() and int(episode_ids.max()) >= r_cf.shape[1]:
        raise ValueError(f"episode_ids hold an index >= Lmax={r_cf.shape[1]} (the width of r_cf)")
    return batch, length
