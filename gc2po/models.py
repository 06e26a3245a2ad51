"""Tokenizers and small models built locally, loadable exactly like Hub models.

``train_tokenizer`` trains a byte-level BPE on a corpus and wraps it as a
``PreTrainedTokenizerFast`` with a chat template; ``build_causal_lm`` makes a randomly
initialised Llama/Qwen2 model from a few size parameters. Both save with ``save_pretrained``
and load back with the ``Auto*`` classes, the code path used for Hub checkpoints.
"""

from __future__ import annotations

from collections.abc import Iterable

SPECIAL_TOKENS = ["<|pad|>", "<|bos|>", "<|eos|>", "<|user|>", "<|assistant|>"]
# Episode tags become single tokens so segmentation boundaries fall on token boundaries.
EPISODE_TAGS = [f"<episode_{i}>" for i in range(1, 33)] + [f"</episode_{i}>" for i in range(1, 33)]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'user' %}<|user|>{{ message['content'] }}\n"
    "{% elif message['role'] == 'assistant' %}<|assistant|>{{ message['content'] }}<|eos|>\n"
    "{% else %}{{ message['content'] }}\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def train_tokenizer(
    corpus: Iterable[str], vocab_size: int = 512, *, episode_tags: bool = True, individual_digits: bool = True
):
    """Train a byte-level BPE tokenizer on ``corpus``; returns a PreTrainedTokenizerFast.

    ``individual_digits`` splits numbers into single digits (as Qwen and Llama 3 do), which
    makes arithmetic learnable for a tiny model.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.pre_tokenizer = (
        pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
        if individual_digits
        else byte_level
    )
    tokenizer.decoder = decoders.ByteLevel()
    extra = EPISODE_TAGS if episode_tags else []
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(list(corpus), trainer=trainer)
    if extra:
        from tokenizers import AddedToken

        tokenizer.add_tokens([AddedToken(tag, normalized=False) for tag in extra])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="<|pad|>",
        bos_token="<|bos|>",
        eos_token="<|eos|>",
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"  # decoder-only generation pads on the left
    return fast


def build_causal_lm(
    tokenizer,
    *,
    architecture: str = "llama",
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int | None = None,
    intermediate_size: int | None = None,
    max_position_embeddings: int = 512,
    tie_word_embeddings: bool = True,
    seed: int = 0,
):
    """A randomly initialised causal LM (``llama`` or ``qwen2``) sized for ``tokenizer``."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    config_classes = {"llama": LlamaConfig, "qwen2": Qwen2Config}
    if architecture not in config_classes:
        raise ValueError(f"architecture must be one of {sorted(config_classes)}, got {architecture!r}")
    config = config_classes[architecture](
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads or num_heads,
        intermediate_size=intermediate_size or 4 * hidden_size,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=tie_word_embeddings,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model
