"""Build a group of completions from episode descriptions, for the property tests of the
paper-literal (test_paper_incentives.py) and corrected (test_corrected.py) GC2PO."""

from __future__ import annotations

import torch
from hypothesis import strategies as st

# one completion: (R_out, [(tokens, R_cf, surprise per token), ...] per episode)
Completion = tuple[float, list[tuple[int, float, float]]]


def build(completions: list[Completion], width: int | None = None):
    """-> r_out [K], episode_ids [K,T], r_cf [K,Lmax], old_logps [K,T],
    mask [K,T] (right-padded)."""
    length = max(sum(n for n, _, _ in eps) for _, eps in completions)
    width = max(width or 0, length, 1)
    lmax = max(len(eps) for _, eps in completions)
    K = len(completions)
    ids = torch.full((K, width), -1, dtype=torch.long)
    logps = torch.zeros(K, width)
    r_cf = torch.zeros(K, lmax, dtype=torch.float64)
    for k, (_, eps) in enumerate(completions):
        t = 0
        for index, (n, value, surprise) in enumerate(eps):
            ids[k, t : t + n] = index
            logps[k, t : t + n] = -surprise
            r_cf[k, index] = value
            t += n
    r_out = torch.tensor([float(r) for r, _ in completions])
    return r_out, ids, r_cf, logps, ids >= 0


def stretch(completion: Completion, factor: int) -> Completion:
    """Every episode ``factor`` times as long (the same content at more tokens)."""
    r, eps = completion
    return r, [(n * factor, value, surprise) for n, value, surprise in eps]


def split(completion: Completion, index: int, new_value: float | None = None) -> Completion:
    """Episode ``index`` (at least 2 tokens) cut in two; the second half gets R_cf ``new_value``
    (default: the same as the first half)."""
    r, eps = completion
    n, value, surprise = eps[index]
    first = n // 2
    second = (n - first, value if new_value is None else new_value, surprise)
    return r, eps[:index] + [(first, value, surprise), second] + eps[index + 1 :]


@st.composite
def completions(draw, min_size=2, max_size=6, min_tokens=1) -> list[Completion]:
    """A group of completions with R_out in {0, 1} and R_cf >= 0 (the paper's ranges)."""
    group = []
    for _ in range(draw(st.integers(min_size, max_size))):
        episodes = [
            (draw(st.integers(min_tokens, 6)), draw(st.floats(0, 2)), draw(st.floats(0.05, 4)))
            for _ in range(draw(st.integers(1, 4)))
        ]
        group.append((float(draw(st.integers(0, 1))), episodes))
    return group
