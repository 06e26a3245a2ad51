"""Locally built tokenizers and models behave like Hub checkpoints: they reload through the
Auto classes to the same token ids, with every special token and tag registered."""

from __future__ import annotations

import pytest

from gc2po.models.build import (
    EPISODE_TAGS,
    SPECIAL_TOKENS,
    build_causal_lm,
    check_reload,
    synthetic_tokenizer,
)


@pytest.mark.parametrize("architecture", ["qwen2", "llama"])
def test_synthetic_tokenizer_has_the_size_asked_and_reloads_as_itself(architecture, tmp_path):
    tokenizer = synthetic_tokenizer(5_000)
    assert len(tokenizer) == 5_000
    for token in SPECIAL_TOKENS + EPISODE_TAGS[:2]:
        assert tokenizer.convert_tokens_to_ids(token) != tokenizer.unk_token_id
        assert len(tokenizer(token, add_special_tokens=False)["input_ids"]) == 1
    model = build_causal_lm(
        tokenizer, architecture=architecture, hidden_size=16, num_layers=1, num_heads=2
    )
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    ids = check_reload(tokenizer, tmp_path)
    assert ids[0] == tokenizer.convert_tokens_to_ids("<|user|>")
    assert all(tokenizer.decode([i]) for i in range(300, 5_000, 97))  # every id decodes to text


def test_check_reload_catches_a_tokenizer_that_does_not_survive_a_qwen2_reload(tmp_path):
    # the first wave's benchmark tokenizer: word-level, pad as unknown, chat tags unregistered;
    # transformers 5 reloads it for a qwen2 config as a Qwen2Tokenizer that drops every word
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from gc2po.models.build import CHAT_TEMPLATE

    words = SPECIAL_TOKENS + [f"w{i}" for i in range(200)]
    raw = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<|pad|>"))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="<|pad|>", eos_token="<|eos|>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    build_causal_lm(
        tokenizer, architecture="qwen2", hidden_size=16, num_layers=1, num_heads=2
    ).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="does not reload as itself|pad id"):
        check_reload(tokenizer, tmp_path)


def test_the_test_suite_tokenizer_reloads_as_itself(fast_tokenizer, tiny_model_dir):
    assert check_reload(fast_tokenizer, tiny_model_dir)
