"""Where each episode of a batch of completions ends, from its token -> episode ids: the
positions the states of the episodes are read at (``episode_end``) and the boundaries MRT forces
answers at. Pure torch."""

from __future__ import annotations

import torch


def episode_end_positions(
    episode_ids: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Last token of every (row, episode) that owns a token, ordered by row then episode.

    episode_ids [B, T] -> (rows [E], slots [E], positions [E], Lmax)."""
    num_slots = max(1, int(episode_ids.max()) + 1) if episode_ids.numel() else 1
    positions = torch.arange(episode_ids.shape[1], device=episode_ids.device).expand_as(episode_ids)
    last = torch.full(
        (episode_ids.shape[0], num_slots), -1, dtype=torch.long, device=episode_ids.device
    )
    owned = torch.where(episode_ids >= 0, positions, -1)
    last.scatter_reduce_(1, episode_ids.long().clamp(min=0), owned, reduce="amax")
    rows, slots = (last >= 0).nonzero(as_tuple=True)
    return rows, slots, last[rows, slots], num_slots
