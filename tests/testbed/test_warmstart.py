"""A miniature warm start: the model saves and loads through the Hub code path."""

import json

import pytest
import torch

from gc2po.testbed.generator import generate_splits
from gc2po.testbed.warmstart import WarmStartConfig, sft_pairs, warm_start


def test_sft_mix_has_the_configured_imperfect_share():
    problems = generate_splits({"train": 400}, 0)["train"]
    pairs = sft_pairs(problems, WarmStartConfig(slip_frac=0.25, shortcut_frac=0.1, seed=0))
    from gc2po.testbed.oracle import grade

    groups = [grade(p, s).group for p, (_, s) in zip(problems, pairs)]
    assert 0.18 < groups.count("near_miss") / 400 < 0.32
    assert 0.05 < groups.count("lucky_guess") / 400 < 0.16


@pytest.mark.slow
def test_mini_warm_start_loads_like_a_hub_model(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gc2po.evaluation.backends import SamplingConfig, TransformersBackend

    problems = generate_splits({"train": 64}, 0)["train"]
    config = WarmStartConfig(hidden_size=32, num_layers=1, num_heads=2, epochs=1, batch_size=16, vocab_size=300)
    stats = warm_start(problems, tmp_path, config, log=lambda *a: None)
    assert stats["steps"] == 4 and json.loads((tmp_path / "warmstart.json").read_text())["steps"] == 4
    model = AutoModelForCausalLM.from_pretrained(tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    assert model.config.model_type == "llama"
    assert tokenizer.convert_tokens_to_ids("<episode_1>") != tokenizer.unk_token_id
    assert len(tokenizer("12", add_special_tokens=False)["input_ids"]) == 2  # digits split
    backend = TransformersBackend.from_pretrained(str(tmp_path))
    out = backend.generate([[{"role": "user", "content": problems[0].question}]], SamplingConfig(n=2, max_new_tokens=5))
    assert len(out) == 2 and all(g.num_tokens <= 5 for g in out)
    assert torch.isfinite(next(model.parameters())).all()
