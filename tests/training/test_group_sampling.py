"""gc2po.models.sampling draws exactly the tokens of transformers' generate, and a training step
through it computes exactly what the step through generate computes."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, GenerationConfig

import gc2po.models.sampling as group_sampling
from gc2po.models.sampling import row_wise_processors, sample_completions

from .conftest import record_advantages


def _prompts(tokenizer, copies: int):
    """Left-padded prompts of different lengths, each repeated ``copies`` times consecutively."""
    texts = [
        "Tom has 5 apples.",
        "Compute 5 - 2 = 3 and then 3 * 3 =",
        "Let me think.",
        "We add 12 and 30",
    ]
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    width = max(map(len, ids))
    padded = torch.tensor([[tokenizer.pad_token_id] * (width - len(s)) + s for s in ids])
    mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in ids])
    return padded.repeat_interleave(copies, 0), mask.repeat_interleave(copies, 0)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_sampled_tokens_and_generator_state_equal_generate(
    tiny_model_dir, fast_tokenizer, temperature
):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    ids, mask = _prompts(fast_tokenizer, copies=6)
    # many stop tokens: rows finish at different steps, so finished rows leave the batch early
    stop = list(range(5, 40))
    config = GenerationConfig(
        max_new_tokens=24,
        do_sample=True,
        temperature=temperature,
        top_k=0,
        top_p=1.0,
        pad_token_id=fast_tokenizer.pad_token_id,
        eos_token_id=stop,
    )
    for seed in range(3):
        torch.manual_seed(seed)
        expected = model.generate(input_ids=ids, attention_mask=mask, generation_config=config)[
            :, ids.shape[1] :
        ]
        state = torch.get_rng_state()
        torch.manual_seed(seed)
        got = sample_completions(
            model,
            ids,
            mask,
            max_new_tokens=24,
            eos_token_ids=stop,
            pad_token_id=fast_tokenizer.pad_token_id,
            processors=row_wise_processors(model, config, ids.shape[1], ids.device),
        )
        lengths = (got == fast_tokenizer.pad_token_id).logical_not().sum(1)
        assert lengths.min() < lengths.max(), "rows must finish at different steps for this test"
        assert torch.equal(got, expected)
        assert torch.equal(
            torch.get_rng_state(), state
        )  # later draws (TRL's shuffle) are unchanged


def test_processors_that_are_not_row_wise_keep_generate(tiny_model_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    for settings in ({"top_k": 5}, {"top_p": 0.9}, {"repetition_penalty": 1.2}):
        config = GenerationConfig(max_new_tokens=4, do_sample=True, **settings)
        assert row_wise_processors(model, config, 8, torch.device("cpu")) is None, settings
    assert (
        row_wise_processors(model, GenerationConfig(max_new_tokens=4, do_sample=False), 8, "cpu")
        is None
    )


def _train(small_run, method, fast, out, monkeypatch):
    calls = []
    original = group_sampling.sample_completions
    monkeypatch.setattr(
        group_sampling, "sample_completions", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    trainer = small_run(
        method,
        out=out,
        fast_generation=fast,
        num_generations=4,
        per_device_train_batch_size=8,
        max_completion_length=16,
        save_strategy="no",
    )
    advantages = record_advantages(trainer)
    trainer.train()
    logs = [
        {
            k: v
            for k, v in r.items()
            if k not in ("step_time", "train_runtime") and "per_second" not in k
        }
        for r in trainer.state.log_history
    ]
    weights = [p.detach().clone() for p in trainer.model.parameters()]
    return bool(calls), logs, advantages, weights


@pytest.mark.parametrize("method", ["grpo", "gc2po"])
def test_a_training_run_is_identical_with_and_without_fast_generation(
    small_run, method, monkeypatch
):
    used_old, logs_old, adv_old, weights_old = _train(small_run, method, False, "old", monkeypatch)
    used_new, logs_new, adv_new, weights_new = _train(small_run, method, True, "new", monkeypatch)
    assert (used_old, used_new) == (False, True)
    assert (
        logs_new == logs_old
    )  # loss, grad norm, rewards, lengths, advantage statistics, every step
    assert len(adv_new) == len(adv_old) > 0
    for (batch_new, a_new), (batch_old, a_old) in zip(adv_new, adv_old):
        assert torch.equal(batch_new.completion_mask, batch_old.completion_mask)
        assert torch.equal(a_new, a_old)
    assert all(torch.equal(a, b) for a, b in zip(weights_new, weights_old))


def test_a_processor_from_the_models_own_generation_config_keeps_generate(small_run):
    """generate fills the fields TRL leaves unset (min_p) from the model's generation_config."""
    from gc2po.models.sampling import trainer_completions

    trainer = small_run("grpo", out="min_p", save_strategy="no")
    prompt = [[5, 6, 7]] * 2
    assert trainer_completions(trainer, prompt) is not None
    trainer.model.generation_config.min_p = 0.1
    assert trainer_completions(trainer, prompt) is None
