"""Character offsets of generated token ids, for mapping tokens to episodes.

Sampled ids are decoded incrementally, as vLLM's detokenizer does (a short window of earlier
tokens gives the context that decoders such as SentencePiece need for spaces), so each
token's character span is known without re-tokenizing the text, which could split it
differently from what the model sampled.
"""

from __future__ import annotations


def decode_with_offsets(tokenizer, ids: list[int]) -> tuple[str, list[tuple[int, int]]]:
    """Decode ``ids``; return the text and each token's (start, end) character span in it.

    A token that ends inside a multi-byte character gets a zero-width span; the token that
    completes the character carries its text.
    """
    text = ""
    offsets: list[tuple[int, int]] = []
    prefix, read = 0, 0  # ids[prefix:read] is context already emitted
    for i in range(len(ids)):
        context = (
            tokenizer.decode(ids[prefix:read], skip_special_tokens=False) if read > prefix else ""
        )
        window = tokenizer.decode(ids[prefix : i + 1], skip_special_tokens=False)
        if window.endswith("\ufffd"):
            offsets.append((len(text), len(text)))
            continue
        piece = window[len(context) :]
        offsets.append((len(text), len(text) + len(piece)))
        text += piece
        prefix, read = read, i + 1
    return text, offsets


PAD_IN_PROMPT_WARNING = (
    "a prompt contains the pad token id {pad} as a real token: the tokenizer probably maps unknown "
    "text (e.g. unregistered chat tags) to its pad token; fix the tokenizer"
)


def prompts_hold_pad(prompt_ids, prompt_mask, pad_id: int | None) -> bool:
    """Whether a real (mask 1) prompt token is the pad id. prompt_ids, prompt_mask: [B, P]."""
    return pad_id is not None and bool((prompt_ids[prompt_mask.bool()] == pad_id).any())
