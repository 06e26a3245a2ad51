"""Which token's hidden state u stands for an episode in R_cf (the ``cf_state`` setting).

The trainer and the reward audit both take their states from :func:`state_table`, so they
score the same tokens. Choices, for an episode such as ``<episode_2>7*2=14</episode_2>``:

- ``episode_end``: the episode's last token (the paper's; the closing tag for inner episodes,
  EOS for the last one, whose next-token distribution was never trained);
- ``closing_tag``: the last token that ends by the end of the closing tag ``</episode_i>``;
- ``last_content``: the last token that ends before the closing tag (the result ``14``);
- ``result``: the token before a step's result, i.e. the last token that ends by the char after
  the episode's last ``=`` (its next-token distribution is the result's first token).

Where the episode lacks what a choice looks for (no closing tag, no ``=``), ``result`` falls back
to ``last_content`` and that to the episode's last real (non-special) token: every choice but
``episode_end`` never reads EOS or another special token.
"""

from __future__ import annotations

import re

import torch

from gc2po.core.positions import episode_end_positions
from gc2po.training.episodes import EpisodeBatch

STATE_CHOICES = ("episode_end", "closing_tag", "last_content", "result")
CLOSING_TAG = re.compile(r"</episode_\d+>")


def _last_ending_by(tokens: list[int], offsets, boundary: int | None) -> int | None:
    """The last of ``tokens`` whose character span ends at or before ``boundary``."""
    if boundary is None:
        return None
    chosen = [t for t in tokens if offsets[t][1] <= boundary]
    return chosen[-1] if chosen else None


def _episode_state(text: str, offsets, tokens: list[int], real: list[int], choice: str) -> int:
    """Token index (into the completion) of one episode's state. ``tokens``: the episode's
    tokens in order; ``real``: those of them that carry text and are not special tokens."""
    if choice == "episode_end" or not real:
        return tokens[-1]
    start, end = offsets[real[0]][0], offsets[real[-1]][1]
    tags = list(CLOSING_TAG.finditer(text, start, end))
    content_end = tags[-1].start() if tags else end
    state = None
    if choice == "closing_tag" and tags:
        state = _last_ending_by(real, offsets, tags[-1].end())
    if choice == "result":
        equals = text.rfind("=", start, content_end)
        state = _last_ending_by(real, offsets, equals + 1 if equals >= 0 else None)
    if state is None and choice in ("result", "last_content") and tags:
        state = _last_ending_by(real, offsets, content_end)
    return real[-1] if state is None else state


def state_table(
    episodes: EpisodeBatch,
    completion_ids: torch.Tensor,
    choice: str,
    special_ids: set[int] | frozenset[int] = frozenset(),
) -> torch.Tensor:
    """Completion-token position of every episode's state: [B, Lmax] long, -1 where a row has no
    such episode (Lmax = the largest episode id + 1). ``completion_ids`` [B, T] are the ids that
    ``episodes`` was segmented from; ``special_ids`` are never chosen except by ``episode_end``."""
    if choice not in STATE_CHOICES:
        raise ValueError(f"cf_state must be one of {list(STATE_CHOICES)}, got {choice!r}")
    episode_ids = episodes.episode_ids
    rows, slots, ends, num_slots = episode_end_positions(episode_ids)
    table = torch.full(
        (episode_ids.shape[0], num_slots), -1, dtype=torch.long, device=episode_ids.device
    )
    if choice == "episode_end":
        table[rows, slots] = ends
        return table
    ids, owner = completion_ids.tolist(), episode_ids.tolist()
    for row, slot in zip(rows.tolist(), slots.tolist()):
        offsets = episodes.offsets[row]
        tokens = [t for t, e in enumerate(owner[row]) if e == slot]
        real = [
            t for t in tokens if offsets[t][1] > offsets[t][0] and ids[row][t] not in special_ids
        ]
        table[row, slot] = _episode_state(episodes.texts[row], offsets, tokens, real, choice)
    return table


def flatten(table: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """[B, Lmax] state positions -> (rows [E], slots [E], positions [E], Lmax), ordered by row
    then episode, as :func:`gc2po.core.positions.episode_end_positions` returns them."""
    rows, slots = (table >= 0).nonzero(as_tuple=True)
    return rows, slots, table[rows, slots], table.shape[1]
