"""Episode segmentation (paper section 4.1).

A completion is cut into episodes at ``<episode_i>`` opening tags. The spans returned
partition the whole completion: text before the first tag belongs to the first episode and
the final answer after the last episode belongs to the last one, so every token has exactly
one episode.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import torch

EPISODE_OPEN = re.compile(r"<episode_\d+>")
BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")


class Segmentation(NamedTuple):
    spans: list[tuple[int, int]]  # character spans [start, end) partitioning the text
    used_fallback: bool  # True when no episode tag was found (paper: formatting non-compliance)


def _partition(starts: list[int], length: int) -> list[tuple[int, int]]:
    """Turn sorted episode start offsets into spans that cover [0, length)."""
    starts = [0] + starts[1:] if starts else [0]
    ends = starts[1:] + [length]
    return list(zip(starts, ends))


def segment_with_info(text: str, max_episodes: int = 32) -> Segmentation:
    """Segment ``text`` and say whether the blank-line fallback was used.

    Episodes start at each opening tag (lenient: an unclosed previous episode ends there;
    indices need not be consecutive). Without tags, blank lines separate episodes; a single
    piece is one episode. Episodes past ``max_episodes`` merge into the last one.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    if not isinstance(max_episodes, int) or max_episodes < 1:
        raise ValueError(f"max_episodes must be an int >= 1, got {max_episodes!r}")
    starts = [m.start() for m in EPISODE_OPEN.finditer(text)]
    used_fallback = not starts
    if used_fallback:
        # a piece starts where a run of blank lines ends; the leading piece starts at 0
        starts = [0] + [m.end() for m in BLANK_LINES.finditer(text) if m.end() < len(text)]
    spans = _partition(starts[:max_episodes], len(text))
    return Segmentation(spans, used_fallback)


def segment_episodes(text: str, max_episodes: int = 32) -> list[tuple[int, int]]:
    """Character spans ``[(start, end), ...]`` of the episodes of ``text``.

    The spans are contiguous, start at 0 and end at ``len(text)``; there is always at least
    one (an empty text gives ``[(0, 0)]``).
    """
    return segment_with_info(text, max_episodes).spans


def token_episode_ids(
    offsets: torch.Tensor, spans: list[tuple[int, int]], completion_mask: torch.Tensor
) -> torch.Tensor:
    """Map each completion token to its episode through the tokenizer's offset mapping.

    Args:
        offsets: LongTensor [T, 2], character (start, end) of each token in the completion text
            (``return_offsets_mapping=True`` of a fast tokenizer).
        spans: episode spans from :func:`segment_episodes`.
        completion_mask: BoolTensor [T], False for padding.
    Returns:
        LongTensor [T]: episode index in ``0..len(spans)-1`` per token, -1 where masked.
        A token belongs to the episode holding its first character; zero-width tokens
        (special tokens such as EOS report (0, 0)) inherit the episode of the token before them.
    """
    offsets = torch.as_tensor(offsets)
    completion_mask = torch.as_tensor(completion_mask, dtype=torch.bool)
    if offsets.ndim != 2 or offsets.shape[-1] != 2:
        raise ValueError(f"offsets must have shape [T, 2], got {tuple(offsets.shape)}")
    if completion_mask.shape != offsets.shape[:1]:
        raise ValueError(
            f"completion_mask must have shape [T]={tuple(offsets.shape[:1])}, "
            f"got {tuple(completion_mask.shape)}"
        )
    if not spans:
        raise ValueError("spans must hold at least one (start, end) span")
    starts = torch.tensor([s for s, _ in spans], dtype=torch.long)
    tok_start, tok_end = offsets[:, 0].long(), offsets[:, 1].long()
    # offsets are non-decreasing, so a running max forward-fills zero-width tokens
    position = torch.where(tok_end > tok_start, tok_start, torch.full_like(tok_start, -1))
    position = torch.cummax(position, dim=0).values.clamp(min=0) if len(position) else position
    ids = torch.searchsorted(starts, position, right=True) - 1
    ids = ids.clamp(0, len(spans) - 1)
    return torch.where(completion_mask, ids, torch.full_like(ids, -1))
