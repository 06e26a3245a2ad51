"""Incremental decoding with character offsets (token -> episode mapping of sampled ids)."""

from gc2po.models.tokenization import decode_with_offsets


def test_offsets_cover_the_decoded_text_including_multibyte_and_special_tokens(fast_tokenizer):
    text = "<episode_1> héllo 日本 3+4=7 </episode_1> \\boxed{7}"
    ids = fast_tokenizer(text, add_special_tokens=False)["input_ids"] + [
        fast_tokenizer.eos_token_id
    ]
    decoded, offsets = decode_with_offsets(fast_tokenizer, ids)
    assert decoded == fast_tokenizer.decode(ids, skip_special_tokens=False)
    assert len(offsets) == len(ids)
    # spans are contiguous, non-decreasing and cover the text exactly
    assert offsets[0][0] == 0 and offsets[-1][1] == len(decoded)
    for (_, end), (start, _) in zip(offsets, offsets[1:]):
        assert end == start
    assert decoded[slice(*offsets[0])] == "<episode_1>"
    assert decoded[slice(*offsets[-1])] == "<|eos|>"
    # a byte-level token that ends inside a multi-byte character is zero-width
    assert any(start == end for start, end in offsets)


def test_empty_input(fast_tokenizer):
    assert decode_with_offsets(fast_tokenizer, []) == ("", [])
