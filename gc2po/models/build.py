"""Tokenizers and small models built locally, loadable exactly like Hub models.

``train_tokenizer`` trains a byte-level BPE on a corpus; ``synthetic_tokenizer`` builds a
byte-level BPE of any vocabulary size from letter n-grams, for random models of a real shape
(benchmarks). Both register the special tokens, chat tags and episode tags and carry a chat
template. ``build_causal_lm`` makes a randomly initialised Llama/Qwen2 model. Everything saves
with ``save_pretrained`` and loads back through the ``Auto*`` classes, the code path used for Hub
checkpoints; ``check_reload`` proves a saved tokenizer encodes a prompt to the same ids.
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Iterable
from pathlib import Path

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
    corpus: Iterable[str],
    vocab_size: int = 512,
    *,
    episode_tags: bool = True,
    individual_digits: bool = True,
):
    """Train a byte-level BPE tokenizer on ``corpus``; returns a PreTrainedTokenizerFast.

    ``individual_digits`` splits numbers into single digits (as Qwen and Llama 3 do), which
    makes arithmetic learnable for a tiny model.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.pre_tokenizer = (
        pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
        if individual_digits
        else byte_level
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(list(corpus), trainer=trainer)
    return _wrap(tokenizer, episode_tags)


def _wrap(tokenizer, episode_tags: bool):
    """A tokenizers.Tokenizer -> PreTrainedTokenizerFast with our specials,
    tags and chat template."""
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast

    tokenizer.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS]
    )
    if episode_tags:
        tokenizer.add_tokens([AddedToken(tag, normalized=False) for tag in EPISODE_TAGS])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="<|pad|>", bos_token="<|bos|>", eos_token="<|eos|>"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"  # decoder-only generation pads on the left
    return fast


def synthetic_tokenizer(vocab_size: int, *, episode_tags: bool = True):
    """A byte-level BPE with exactly ``vocab_size`` tokens (specials and tags included): the 256
    byte symbols, then merges forming letter bigrams, trigrams, ... Every id decodes to text, and
    it reloads as itself under model types whose own tokenizer class is BPE (Qwen2Tokenizer)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    extra = len(SPECIAL_TOKENS) + (len(EPISODE_TAGS) if episode_tags else 0)
    target = vocab_size - extra
    vocab = {symbol: i for i, symbol in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    if target < len(vocab):
        raise ValueError(f"vocab_size must be >= {len(vocab) + extra}, got {vocab_size}")
    merges, grams = [], list(string.ascii_lowercase)
    while len(vocab) < target:
        longer = []
        for left, right in itertools.product(grams, string.ascii_lowercase):
            if len(vocab) >= target:
                break
            merges.append((left, right))
            vocab[left + right] = len(vocab)
            longer.append(left + right)
        grams = longer
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    return _wrap(tokenizer, episode_tags)


def check_reload(tokenizer, path: str | Path) -> list[int]:
    """Reload the tokenizer saved at ``path`` through ``AutoTokenizer`` (as a Hub checkpoint
    would be) and check it encodes a chat prompt to the same non-empty ids; returns the ids."""
    from transformers import AutoTokenizer

    messages = [
        {
            "role": "user",
            "content": "Ana has 3 apples and gets 4 more. <episode_1> 3+4=7 </episode_1>",
        }
    ]
    want = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)[
        "input_ids"
    ]
    reloaded = AutoTokenizer.from_pretrained(path)
    got = reloaded.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)[
        "input_ids"
    ]
    if not want or got != want:
        raise ValueError(
            f"{path}: the tokenizer does not reload as itself ({type(reloaded).__name__} "
            "encodes the "
            f"test prompt to {got[:12]}..., the original to {want[:12]}...)"
        )
    if tokenizer.pad_token_id in want:
        raise ValueError(
            f"{path}: the test prompt encodes to the pad id {tokenizer.pad_token_id} "
            "(unknown text?)"
        )
    return want


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
        raise ValueError(
            f"architecture must be one of {sorted(config_classes)}, got {architecture!r}"
        )
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
