"""Shared fixtures: a tokenizer trained in-process on a small corpus (no download)."""

from __future__ import annotations

import pytest

CORPUS = [
    "<episode_1> First, 3 + 4 = 7. </episode_1> <episode_2> Then 7 * 2 = 14. </episode_2> The answer is \\boxed{14}.",
    "Let me think.\n\nWe add 12 and 30 to get 42.\n\nSo the answer is \\boxed{42}.",
    "<episode_3> Compute 5 - 2 = 3 <episode_5> and 3 * 3 = 9 </episode_5> final \\boxed{9}",
    "Tom has 5 apples and buys 3 more. How many apples does Tom have?",
]


@pytest.fixture(scope="session")
def fast_tokenizer():
    from gc2po.models import train_tokenizer

    return train_tokenizer(CORPUS * 20, vocab_size=300)
