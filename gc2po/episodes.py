"""Episodes of generated completions: token -> episode ids and episode-end states.

Shared by the trainer and the reward audit; built on the pure functions of ``gc2po.core``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gc2po.core.segment import segment_with_info, token_episode_ids
from gc2po.tokenization import decode_with_offsets


@dataclass
class EpisodeBatch:
    episode_ids: torch.Tensor  # [B, T], -1 = no episode (padding)
    used_fallback: list[bool]  # no episode tag found (blank-line fallback)
    num_episodes: list[int]
    texts: list[str]


def segment_completions(tokenizer, completion_ids: torch.Tensor, mask: torch.Tensor, max_episodes: int = 32) -> EpisodeBatch:
    """Segment each completion [B, T] (right-padded, ``mask`` True on real tokens)."""
    episode_ids = torch.full_like(completion_ids, -1)
    fallbacks, counts, texts = [], [], []
    for row in range(completion_ids.shape[0]):
        n = int(mask[row].sum())
        text, offsets = decode_with_offsets(tokenizer, completion_ids[row, :n].tolist())
        seg = segment_with_info(text, max_episodes)
        fallbacks.append(seg.used_fallback)
        counts.append(len(seg.spans))
        texts.append(text)
        offsets_t = torch.tensor(offsets, dtype=torch.long).reshape(-1, 2)
        ids = token_episode_ids(offsets_t, seg.spans, torch.ones(n, dtype=torch.bool))
        episode_ids[row, :n] = ids.to(completion_ids.device)
    return EpisodeBatch(episode_ids, fallbacks, counts, texts)


def episode_end_positions(episode_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Last token of every (row, episode) that owns a token.

    episode_ids [B, T] -> (rows [E], slots [E], positions [E], Lmax)."""
    num_slots = max(1, int(episode_ids.max()) + 1) if episode_ids.numel() else 1
    positions = torch.arange(episode_ids.shape[1], device=episode_ids.device).expand_as(episode_ids)
    last = torch.full((episode_ids.shape[0], num_slots), -1, dtype=torch.long, device=episode_ids.device)
    last.scatter_reduce_(1, episode_ids.clamp(min=0), torch.where(episode_ids >= 0, positions, -1), reduce="amax")
    rows, slots = (last >= 0).nonzero(as_tuple=True)
    return rows, slots, last[rows, slots], num_slots
