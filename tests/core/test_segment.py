import torch

from gc2po.core.segment import segment_episodes, segment_with_info, token_episode_ids


def pieces(text, **kw):
    return [text[s:e] for s, e in segment_episodes(text, **kw)]


def assert_partition(text, spans):
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert end == start


def test_well_formed_tags_with_answer_after_last_episode():
    text = (
        "<episode_1>a = 3 + 4 = 7</episode_1>\n<episode_2>b = 7 * 2 = 14</episode_2>\nThe "
        "answer is \\boxed{14}."
    )
    got = pieces(text)
    assert got == [
        "<episode_1>a = 3 + 4 = 7</episode_1>\n",
        "<episode_2>b = 7 * 2 = 14</episode_2>\nThe answer is \\boxed{14}.",
    ]
    assert not segment_with_info(text).used_fallback


def test_text_before_first_episode_belongs_to_first():
    text = "Let me solve it. <episode_1>x</episode_1><episode_2>y</episode_2>"
    assert pieces(text) == ["Let me solve it. <episode_1>x</episode_1>", "<episode_2>y</episode_2>"]


def test_unclosed_tags_and_skipped_indices():
    text = "<episode_3> 5 - 2 = 3 <episode_7> 3 * 3 = 9 </episode_7><episode_8>so 9"
    assert pieces(text) == [
        "<episode_3> 5 - 2 = 3 ",
        "<episode_7> 3 * 3 = 9 </episode_7>",
        "<episode_8>so 9",
    ]


def test_no_tags_falls_back_to_blank_lines():
    text = "We add 12 and 30.\n\nThat is 42.\n  \n\nSo \\boxed{42}."
    seg = segment_with_info(text)
    assert seg.used_fallback
    assert [text[s:e] for s, e in seg.spans] == [
        "We add 12 and 30.\n\n",
        "That is 42.\n  \n\n",
        "So \\boxed{42}.",
    ]


def test_no_tags_single_piece_is_one_episode():
    text = "Just the answer: 42"
    assert segment_episodes(text) == [(0, len(text))]
    assert segment_episodes("") == [(0, 0)]
    assert segment_episodes("\n\n") == [(0, 2)]


def test_max_episodes_merges_the_rest_into_last():
    text = "".join(f"<episode_{i}>s{i}</episode_{i}>" for i in range(1, 6))
    got = pieces(text, max_episodes=3)
    assert got[:2] == ["<episode_1>s1</episode_1>", "<episode_2>s2</episode_2>"]
    assert got[2] == "<episode_3>s3</episode_3><episode_4>s4</episode_4><episode_5>s5</episode_5>"


def test_spans_always_partition_the_text():
    for text in ["a<episode_1>b", "<episode_2>", "x\n\ny\n\n", "\n\nx"]:
        assert_partition(text, segment_episodes(text))


def test_token_alignment_with_real_fast_tokenizer(fast_tokenizer):
    text = (
        "<episode_1> First, 3 + 4 = 7. </episode_1> <episode_2> Then 7 * 2 = 14. </episode_2> "
        "The answer is \\boxed{14}."
    )
    enc = fast_tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)
    offsets = torch.tensor(enc["offset_mapping"])
    # append an EOS token with the (0, 0) offsets special tokens get
    offsets = torch.cat([offsets, torch.tensor([[0, 0]])])
    mask = torch.ones(len(offsets), dtype=torch.bool)
    mask_with_pad = torch.cat([mask, torch.zeros(2, dtype=torch.bool)])
    offsets_with_pad = torch.cat([offsets, torch.zeros(2, 2, dtype=torch.long)])
    spans = segment_episodes(text)
    ids = token_episode_ids(offsets_with_pad, spans, mask_with_pad)
    boundary = text.index("<episode_2>")
    for (start, end), eid in zip(offsets[:-1].tolist(), ids[:-1].tolist()):
        if end > start:
            assert eid == (0 if start < boundary else 1), (text[start:end], eid)
    assert ids[len(offsets) - 1] == 1  # EOS inherits the last episode
    assert ids[-2:].tolist() == [-1, -1]  # padding
    # episode ids never decrease along the completion
    valid = ids[ids >= 0]
    assert torch.all(valid[1:] >= valid[:-1])


def test_token_episode_ids_rejects_bad_shapes():
    import pytest

    with pytest.raises(ValueError, match="offsets"):
        token_episode_ids(torch.zeros(3), [(0, 1)], torch.ones(3, dtype=torch.bool))
    with pytest.raises(ValueError, match="completion_mask"):
        token_episode_ids(torch.zeros(3, 2), [(0, 1)], torch.ones(4, dtype=torch.bool))
    with pytest.raises(ValueError, match="max_episodes"):
        segment_episodes("x", max_episodes=0)
