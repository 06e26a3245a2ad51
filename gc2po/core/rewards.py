"""Reward shaping of the baselines (pure torch).

``length_penalty_rewards``: Arora & Zanette 2025 (BASELINES 6),
    r = 1{correct} * (1 - alpha * sigmoid((len - MEAN) / (STD + 1e-7)))
MEAN/STD over the correct samples of the same prompt (population std); incorrect -> 0.
"""

from __future__ import annotations

import torch


def length_penalty_rewards(correct: torch.Tensor, lengths: torch.Tensor, alpha: float) -> torch.Tensor:
    """correct [G,K] in {0,1}, lengths [G,K] -> shaped rewards [G,K]."""
    if correct.shape != lengths.shape or correct.ndim != 2:
        raise ValueError(f"correct and lengths must both have shape [G, K], got {list(correct.shape)} and {list(lengths.shape)}")
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    is_correct = correct > 0.5
    lengths = lengths.float()
    count = is_correct.sum(-1, keepdim=True).clamp(min=1)
    mean = torch.where(is_correct, lengths, 0.0).sum(-1, keepdim=True) / count
    var = torch.where(is_correct, (lengths - mean) ** 2, 0.0).sum(-1, keepdim=True) / count
    penalty = alpha * torch.sigmoid((lengths - mean) / (var.sqrt() + 1e-7))
    return torch.where(is_correct, 1.0 - penalty, torch.zeros_like(lengths))
