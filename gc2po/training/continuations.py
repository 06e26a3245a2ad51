"""Generation backends of the rollout services (``gc2po.training.services``), one signature
``(contexts, max_new_tokens) -> continuations``: ``HFContinuations`` (transformers ``generate``,
the policy unwrapped the way TRL unwraps it for generation, which gathers ZeRO-3 parameters) and
``VLLMContinuations`` (the run's own vLLM engine). ``synced_contexts`` pads every rank's request
to the same length, so ranks that need different amounts of text still issue identical
collective calls (ZeRO-3's synced generation, vLLM server mode): nothing can deadlock.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

import torch

Continuations = Callable[[list[list[int]], int], list[list[int]]]
Gather = Callable[[torch.Tensor], torch.Tensor]


def synced_contexts(
    contexts: list[list[int]], gather: Gather, filler: list[int]
) -> list[list[int]]:
    """``contexts`` padded with ``filler`` to the longest request of any rank."""
    counts = gather(torch.tensor([len(contexts)]))
    return contexts + [filler] * (int(counts.max()) - len(contexts))


@dataclass
class HFContinuations:
    """Sampled continuations with transformers ``generate`` (training temperature, no top-p/k)."""

    # yields the policy ready for generate/forward
    model_context: Callable[[], AbstractContextManager]
    pad_token_id: int
    eos_token_id: int
    temperature: float
    batch_size: int
    device: torch.device

    @torch.no_grad()
    def __call__(self, contexts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
        out: list[list[int]] = []
        with self.model_context() as model:
            for lo in range(0, len(contexts), self.batch_size):
                ids, attention = left_pad(
                    contexts[lo : lo + self.batch_size], self.pad_token_id, self.device
                )
                generated = model.generate(
                    input_ids=ids,
                    attention_mask=attention,
                    max_new_tokens=max_new_tokens,
                    do_sample=True,
                    temperature=self.temperature,
                    top_p=1.0,
                    top_k=0,
                    pad_token_id=self.pad_token_id,
                    eos_token_id=self.eos_token_id,
                )
                out.extend(
                    _strip(row.tolist(), self.pad_token_id) for row in generated[:, ids.shape[1] :]
                )
        return out


@dataclass
class VLLMContinuations:
    """Continuations from the run's vLLM engine (TRL's ``VLLMGeneration``), its sampling settings
    with the given length limit."""

    engine: object

    def __call__(self, contexts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
        saved = self.engine.max_completion_length
        self.engine.max_completion_length = max_new_tokens
        try:
            _, completions, _, _ = self.engine.generate(
                prompts=contexts, images=None, num_generations=1
            )
        finally:
            self.engine.max_completion_length = saved
        return [list(c) for c in completions]


def left_pad(sequences: list[list[int]], pad: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Token lists -> left-padded ids and attention mask [N, max length]."""
    width = max(len(s) for s in sequences)
    ids = [[pad] * (width - len(s)) + s for s in sequences]
    attention = [[0] * (width - len(s)) + [1] * len(s) for s in sequences]
    return torch.tensor(ids, device=device), torch.tensor(attention, device=device)


def _strip(ids: list[int], pad: int) -> list[int]:
    while ids and ids[-1] == pad:
        ids.pop()
    return ids
