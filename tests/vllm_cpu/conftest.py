"""Fixtures of the `vllm_cpu` tests (run by ci/vllm_cpu_tests.sh in .venv-vllm, deselected in the
main suite): a testbed-shaped Llama whose head_dim is 32, the least vLLM's CPU attention takes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")  # the CI machine's cores are shared


@pytest.fixture(scope="session")
def vllm_model_dir(tmp_path_factory, fast_tokenizer):
    """2 layers, hidden 64, 2 heads (head_dim 32), tied embeddings, float32, random weights.

    The EOS embedding is scaled so that some greedy completions end at EOS within 16 tokens and
    others run to the limit on gsm8k questions: the EOS handling of both backends is then
    exercised."""
    from transformers import AutoModelForCausalLM

    from gc2po.models.build import build_causal_lm

    model = build_causal_lm(fast_tokenizer, hidden_size=64, num_layers=2, num_heads=2, seed=0)
    eos = fast_tokenizer.eos_token_id
    embedding = model.get_input_embeddings().weight
    problems = json.loads((ROOT / "data" / "benchmarks" / "gsm8k_test.json").read_text())[:32]
    prompts = [
        fast_tokenizer.apply_chat_template(
            [{"role": "user", "content": p["problem"]}],
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
        )["input_ids"]
        for p in problems
    ]
    original = embedding[eos].detach().clone()
    for scale in [1.25**k for k in range(1, 20)]:
        with torch.no_grad():
            embedding[eos] = original * scale
        ended = [eos in _greedy(model, ids, eos) for ids in prompts]
        if 0.25 <= sum(ended) / len(ended) <= 0.75:
            break
    else:
        pytest.fail("no EOS scale gives a mix of finished and truncated greedy completions")
    path = tmp_path_factory.mktemp("vllm_model")
    model.save_pretrained(path)
    fast_tokenizer.save_pretrained(path)
    assert AutoModelForCausalLM.from_pretrained(path).config.head_dim == 32
    return path


@torch.no_grad()
def _greedy(model, ids: list[int], eos: int) -> list[int]:
    out = model.generate(
        input_ids=torch.tensor([ids]),
        max_new_tokens=16,
        do_sample=False,
        eos_token_id=eos,
        pad_token_id=eos,
    )
    return out[0, len(ids) :].tolist()
