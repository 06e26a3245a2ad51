"""Episodes of generated completions: token -> episode ids (``segment_completions``) and the
final-norm hidden states u read at one token per episode (``EpisodeStates``).

Shared by the trainer and the reward audit; built on the pure functions of ``gc2po.core``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from gc2po.core.segment import segment_with_info, token_episode_ids
from gc2po.models.tokenization import decode_with_offsets


@dataclass
class EpisodeBatch:
    episode_ids: torch.Tensor  # [B, T], -1 = no episode (padding)
    used_fallback: list[bool]  # no episode tag found (blank-line fallback)
    num_episodes: list[int]
    texts: list[str]
    # per row: each token's (start, end) character span in its text
    offsets: list[list[tuple[int, int]]] = field(default_factory=list)


def segment_completions(
    tokenizer, completion_ids: torch.Tensor, mask: torch.Tensor, max_episodes: int = 32
) -> EpisodeBatch:
    """Segment each completion [B, T] (right-padded, ``mask`` True on real tokens)."""
    episode_ids = torch.full_like(completion_ids, -1)
    fallbacks, counts, texts, all_offsets = [], [], [], []
    for row in range(completion_ids.shape[0]):
        n = int(mask[row].sum())
        text, offsets = decode_with_offsets(tokenizer, completion_ids[row, :n].tolist())
        seg = segment_with_info(text, max_episodes)
        fallbacks.append(seg.used_fallback)
        counts.append(len(seg.spans))
        texts.append(text)
        all_offsets.append(offsets)
        offsets_t = torch.tensor(offsets, dtype=torch.long).reshape(-1, 2)
        ids = token_episode_ids(offsets_t, seg.spans, torch.ones(n, dtype=torch.bool))
        episode_ids[row, :n] = ids.to(completion_ids.device)
    return EpisodeBatch(episode_ids, fallbacks, counts, texts, all_offsets)


@dataclass
class EpisodeStates:
    """Final-norm hidden states u [E, d] at the last token of every episode (rows, slots,
    positions [E], ordered by row then episode; ``num_slots`` = Lmax)."""

    rows: torch.Tensor
    slots: torch.Tensor
    positions: torch.Tensor
    num_slots: int
    u: torch.Tensor

    def table(self, values: torch.Tensor, num_rows: int) -> torch.Tensor:
        """Per-episode values [E] -> [num_rows, Lmax] (0 where a row has no such episode)."""
        out = torch.zeros(num_rows, self.num_slots, dtype=values.dtype, device=values.device)
        out[self.rows.to(values.device), self.slots.to(values.device)] = values
        return out

    def final_states(self, rows: list[int]) -> torch.Tensor:
        """The state at each row's last episode end (= its last completion token) [R, d]."""
        last = {}
        for index, row in enumerate(self.rows.tolist()):
            last[row] = index  # rows are ordered, so the last index of a row is its last episode
        return self.u[[last[r] for r in rows]].float()
