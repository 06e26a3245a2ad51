"""The trainer's extra-generation services (what MRT, ReST-MCTS*, GCPO and any new method use):
every process issues the same generation calls whatever text it needs (no deadlock under ZeRO-3's
synced generation or vLLM's collective modes), and the vLLM backend uses the run's own engine with
the asked length."""

from __future__ import annotations

import torch

from gc2po.training.continuations import VLLMContinuations, synced_contexts
from gc2po.training.services import RolloutServices


class FakeRanks:
    """Two processes' requests: gather concatenates both ranks' tensors."""

    def __init__(self, counts):
        self.counts = counts

    def gather(self, tensor):
        return torch.tensor(self.counts)


def test_contexts_are_padded_to_the_longest_request_of_any_process():
    ranks = FakeRanks([3, 1])
    assert synced_contexts([[1], [2], [3]], ranks.gather, [0]) == [[1], [2], [3]]
    assert synced_contexts([[7]], ranks.gather, [0]) == [[7], [0], [0]]
    assert synced_contexts([], FakeRanks([0, 2]).gather, [0]) == [
        [0],
        [0],
    ]  # a rank with nothing still calls


def services(generate, counts, rollout=None, tokenizer=None):
    rollout = rollout or {
        "prompt_ids": torch.tensor([[5, 6]]),
        "prompt_mask": torch.tensor([[1, 1]]),
        "completion_ids": torch.tensor([[7, 8, 9]]),
        "completion_mask": torch.tensor([[1, 1, 1]]),
    }
    return RolloutServices(
        generate=generate,
        model_context=None,
        tokenizer=tokenizer,
        outcome=None,
        rollout=rollout,
        gather=FakeRanks(counts).gather,
        step=0,
        temperature=1.0,
        max_completion_length=8,
    )


class EosTokenizer:
    eos_token_id = 2


def test_a_process_needing_fewer_continuations_still_issues_the_same_call():
    calls = []

    def generate(contexts, max_new_tokens):
        calls.append((len(contexts), max_new_tokens))
        return [[1]] * len(contexts)

    # this rank wants 1 context x 2 samples; the other rank wants 3 x 2
    out = services(generate, counts=[2, 6], tokenizer=EosTokenizer()).continuations([[4]], 2, 5)
    assert calls == [(6, 5)] and out == [[1], [1]]
    calls.clear()
    assert services(generate, counts=[0, 6], tokenizer=EosTokenizer()).continuations([], 2, 5) == []
    assert calls == [(6, 5)]  # nothing needed here, but the collective call happens


class FakeVLLMEngine:
    """The interface of TRL's VLLMGeneration that the backend uses."""

    max_completion_length = 1024

    def __init__(self):
        self.seen = []

    def generate(self, prompts, images, num_generations):
        self.seen.append((prompts, num_generations, self.max_completion_length))
        return prompts, [p[-1:] * self.max_completion_length for p in prompts], None, None


def test_the_vllm_backend_uses_the_runs_engine_with_the_length_asked_and_restores_it():
    engine = FakeVLLMEngine()
    out = VLLMContinuations(engine)([[1, 2], [3]], 3)
    assert out == [[2, 2, 2], [3, 3, 3]]
    assert engine.seen == [([[1, 2], [3]], 1, 3)] and engine.max_completion_length == 1024
