"""The transformers backend samples through ``gc2po.models.sampling`` on CPU when top-p is 1: the
same completions as ``model.generate`` with the same seed, and ``generate`` itself otherwise."""

import pytest

from gc2po.evaluation.backends import SamplingConfig, TransformersBackend
from gc2po.testbed.generator import generate_splits


@pytest.fixture(scope="module")
def tiny_testbed_model(mini_warm_start):
    """The session's mini warm start (tests/shared_outputs.py) and six of its train prompts."""
    path, _ = mini_warm_start
    problems = generate_splits({"train": 64}, 0)["train"]
    return str(path), [[{"role": "user", "content": p.question}] for p in problems[:6]]


def _texts(backend, prompts, sampling):
    return [
        (g.prompt_index, g.sample_index, g.text, g.num_tokens, g.finished)
        for g in backend.generate(prompts, sampling)
    ]


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_fast_sampling_equals_generate(tiny_testbed_model, monkeypatch, temperature):
    path, prompts = tiny_testbed_model
    sampling = SamplingConfig(n=4, temperature=temperature, top_p=1.0, max_new_tokens=24, seed=3)
    backend = TransformersBackend.from_pretrained(
        path, batch_size=10
    )  # a batch splits a prompt's copies
    calls = []
    real = backend._sample_rows
    monkeypatch.setattr(backend, "_sample_rows", lambda *a: calls.append(1) or real(*a))
    fast = _texts(backend, prompts, sampling)
    assert calls and all(c == 1 for c in calls)
    monkeypatch.setattr(backend, "_sample_rows", lambda *a: None)  # generate itself
    slow = _texts(backend, prompts, sampling)
    assert fast == slow
    assert len({text for _, _, text, _, _ in fast}) > 1  # really sampled


def test_greedy_and_top_p_keep_generate(tiny_testbed_model):
    path, prompts = tiny_testbed_model
    backend = TransformersBackend.from_pretrained(path, batch_size=8)
    for sampling in (
        SamplingConfig(n=1, temperature=0.0, max_new_tokens=8),
        SamplingConfig(n=2, temperature=1.0, top_p=0.9, max_new_tokens=8),
    ):
        assert backend._sample_rows(None, None, sampling) is None
