"""Both generation backends send the same prompt token ids, with one BOS (issue 14, silent
error 4); checked without vLLM: the vLLM backend's requests are built without importing it."""

from __future__ import annotations

import pytest
import torch

from gc2po.evaluation.backends import (
    SamplingConfig,
    TransformersBackend,
    VLLMBackend,
    prompt_token_ids,
    render_prompts,
)

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }} \n{% endfor %}"
    "{% if add_generation_prompt %}[assistant] {% endif %}"
)
PROMPTS = [
    [{"role": "user", "content": "what is 2+2 ?"}],
    [{"role": "user", "content": "hello world"}],
]


@pytest.fixture(scope="module")
def llama_tokenizer():
    """A Llama-style tokenizer that adds a BOS to every text it encodes, built locally."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaTokenizerFast

    words = [
        "<unk>",
        "<s>",
        "</s>",
        "<pad>",
        "[user]",
        "[assistant]",
        "hello",
        "world",
        "what",
        "is",
        "2+2",
        "?",
    ]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = LlamaTokenizerFast(
        tokenizer_object=backend,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        add_bos_token=True,
        add_eos_token=False,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    assert tokenizer("hello")["input_ids"][0] == tokenizer.bos_token_id  # it does add one
    return tokenizer


class RecordingModel(torch.nn.Module):
    """Stands in for a causal LM: records the prompts ``generate`` receives, answers with EOS."""

    def __init__(self, eos_token_id):
        super().__init__()
        self.eos_token_id, self.prompts = eos_token_id, []

    def generate(self, input_ids, attention_mask, **kwargs):
        self.prompts += [row[mask.bool()].tolist() for row, mask in zip(input_ids, attention_mask)]
        return torch.cat([input_ids, torch.full((len(input_ids), 1), self.eos_token_id)], dim=1)


def test_text_retokenized_with_special_tokens_has_two_bos(llama_tokenizer):
    # what vLLM's LLM.generate(str) did with the rendered chat template
    text = render_prompts(llama_tokenizer, PROMPTS[:1])[0]
    assert llama_tokenizer(text)["input_ids"][:2] == [llama_tokenizer.bos_token_id] * 2


def test_prompt_ids_hold_exactly_one_bos(llama_tokenizer):
    for ids in prompt_token_ids(llama_tokenizer, PROMPTS):
        assert (
            ids[0] == llama_tokenizer.bos_token_id and ids.count(llama_tokenizer.bos_token_id) == 1
        )
    # rendered text (a budget curve's forced-answer prompt) is not given a second BOS either
    text = render_prompts(llama_tokenizer, PROMPTS[:1])[0] + "hello"
    assert prompt_token_ids(llama_tokenizer, [text])[0].count(llama_tokenizer.bos_token_id) == 1


def test_both_backends_and_training_send_the_same_ids(llama_tokenizer):
    model = RecordingModel(llama_tokenizer.eos_token_id)
    TransformersBackend(model, llama_tokenizer, device="cpu").generate(
        PROMPTS, SamplingConfig(n=1, temperature=0.0, max_new_tokens=1)
    )
    vllm = VLLMBackend.__new__(VLLMBackend)  # no engine: only the requests it would send
    vllm.tokenizer = llama_tokenizer
    vllm_ids = [request["prompt_token_ids"] for request in vllm.requests(PROMPTS)]
    # how TRL's GRPOTrainer tokenizes conversational training prompts
    trl_ids = llama_tokenizer.apply_chat_template(
        PROMPTS, tokenize=True, add_generation_prompt=True, return_dict=True
    )["input_ids"]
    assert model.prompts == vllm_ids == [list(ids) for ids in trl_ids]
    assert vllm_ids[1] == llama_tokenizer.convert_tokens_to_ids(
        ["<s>", "[user]", "hello", "world", "[assistant]"]
    )


def test_load_backend_gives_the_batch_size_to_transformers_only(monkeypatch):
    """vLLM schedules its own batches: ``batch_size`` never reaches it,
    also when ``auto`` picks it."""
    from gc2po.evaluation import backends

    made = []
    monkeypatch.setattr(
        backends, "VLLMBackend", lambda path, **kwargs: made.append(("vllm", kwargs))
    )
    monkeypatch.setattr(
        backends.TransformersBackend,
        "from_pretrained",
        classmethod(lambda cls, path, **kwargs: made.append(("transformers", kwargs))),
    )
    backends.load_backend("vllm", "m", batch_size=8)
    backends.load_backend("transformers", "m", batch_size=8)
    backends.load_backend("transformers", "m")
    assert made == [("vllm", {}), ("transformers", {"batch_size": 8}), ("transformers", {})]


def test_vllm_completion_ids_drop_the_final_eos_as_the_transformers_backend_cuts_at_it():
    from gc2po.evaluation.backends import completion_token_ids

    assert completion_token_ids([5, 6, 2], eos_token_id=2) == [5, 6]
    assert completion_token_ids([5, 6, 7], eos_token_id=2) == [5, 6, 7]  # cut by the length limit
    assert completion_token_ids([], eos_token_id=2) == []


def test_vllm_engine_memory_on_cpu_is_a_fixed_kv_cache_not_a_share_of_ram():
    from gc2po.evaluation.backends import CPU_KV_CACHE_BYTES, engine_memory_kwargs

    assert engine_memory_kwargs(0.85, on_gpu=True, environ={}) == {"gpu_memory_utilization": 0.85}
    cpu = engine_memory_kwargs(0.85, on_gpu=False, environ={})
    assert cpu == {"kv_cache_memory_bytes": CPU_KV_CACHE_BYTES}
    assert engine_memory_kwargs(0.85, on_gpu=False, environ={"VLLM_CPU_KVCACHE_SPACE": "2"}) == {}
