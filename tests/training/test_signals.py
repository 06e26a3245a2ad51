"""The corrected GC2PO's per-episode signals on real testbed text (``gc2po.training.signals``):
the oracle's episode l is the trainer's token episode l, the noisy oracle is seeded per step and
does not depend on the process split, the answer-dependence probe and its forward passes."""

from __future__ import annotations

import random

import pytest
import torch

from gc2po.core.segment import segment_episodes
from gc2po.testbed.generator import CueConfig, generate_splits, solution_text
from gc2po.testbed.oracle import grade
from gc2po.training import signals
from gc2po.training.episodes import segment_completions

KINDS = ("correct", "slip", "shortcut", "copy")


@pytest.fixture(scope="module")
def testbed_tokenizer():
    """The warm start's kind of tokenizer (digits split, episode tags as tokens), trained on
    testbed solutions."""
    from gc2po.testbed.warmstart import WarmStartConfig, sft_pairs, sft_tokenizer

    problems = generate_splits({"train": 300}, seed=0)["train"]
    config = WarmStartConfig()  # vocab_size 400
    return sft_tokenizer(sft_pairs(problems, config), config)


def completions(tokenizer, count=24, seed=0):
    """Cued testbed problems and completions of every kind (plus text around the episodes), as
    the trainer holds them: right-padded ids ending in EOS, and their mask."""
    rng = random.Random(seed)
    cue = CueConfig(frac=0.5, accuracy=0.9)  # the default's
    problems = [p for p in generate_splits({"train": 200}, seed, cue)["train"] if p.cue][:count]
    texts = [
        ("Let me see. " if i % 3 == 0 else "")
        + solution_text(p, KINDS[i % 4], rng)
        + (" done" if i % 5 == 0 else "")
        for i, p in enumerate(problems)
    ]
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
           for t in texts]  # fmt: skip
    width = max(map(len, ids))
    padded = torch.tensor([r + [tokenizer.pad_token_id] * (width - len(r)) for r in ids])
    mask = torch.tensor([[t < len(r) for t in range(width)] for r in ids])
    return problems, ids, padded, mask


@pytest.mark.parametrize("max_episodes", [32, 2])
def test_the_oracles_episodes_are_the_trainers_token_episodes(testbed_tokenizer, max_episodes):
    tok = testbed_tokenizer
    problems, ids, padded, mask = completions(tok)
    episodes = segment_completions(tok, padded, mask, max_episodes)
    validity, f = signals.oracle_validity(problems, episodes, max_episodes)
    assert validity.sum() > 0 and (validity == 0).any()  # both kinds of episode occur
    for row, problem in enumerate(problems):
        # the text a reward function sees (TRL decodes without special tokens)
        text = tok.decode(ids[row], skip_special_tokens=True)
        graded = grade(problem, text, max_episodes=max_episodes)
        assert validity[row, : len(graded.episode_valid)].tolist() == list(graded.episode_valid)
        assert (validity[row, len(graded.episode_valid) :] == 0).all() and f[row] == graded.f
        # the trainer's token episode l spells the oracle's episode l
        spans = segment_episodes(text, max_episodes)
        owners = episodes.episode_ids[row].tolist()
        for slot, (start, end) in enumerate(spans):
            spelled = "".join(
                episodes.texts[row][a:b] for t, (a, b) in enumerate(episodes.offsets[row])
                if owners[t] == slot
            )  # fmt: skip
            assert spelled.replace(tok.eos_token, "") == text[start:end], (row, slot)


def test_a_segmentation_disagreement_is_refused(testbed_tokenizer):
    problems, _, padded, mask = completions(testbed_tokenizer, count=4)
    episodes = segment_completions(testbed_tokenizer, padded, mask, 32)
    episodes.num_episodes[1] += 1
    with pytest.raises(RuntimeError, match="row 1: the oracle found"):
        signals.oracle_validity(problems, episodes, 32)


def test_the_noisy_oracle_is_seeded_per_step_and_the_same_on_any_process(testbed_tokenizer):
    problems, _, padded, mask = completions(testbed_tokenizer, count=24)
    episodes = segment_completions(testbed_tokenizer, padded, mask, 32)
    validity, f = signals.oracle_validity(problems, episodes, 32)
    present = signals.present_episodes(episodes, validity.shape[1])
    rows = torch.arange(24)

    def noisy(chosen, seed):
        return signals.noisy_oracle(validity[chosen], present[chosen], f[chosen], rows[chosen], 4,
                                    0.3, seed, 32)  # fmt: skip

    whole = noisy(rows, seed=5)
    assert torch.equal(whole, noisy(rows, seed=5))
    assert not torch.equal(whole, noisy(rows, seed=6))
    # two processes holding whole groups (K = 4) each: rows 0..11 and 12..23
    halves = torch.cat([noisy(rows[:12], 5), noisy(rows[12:], 5)])
    torch.testing.assert_close(halves, whole)


def test_the_gated_oracle_at_rho_one_is_the_f_x_p_reward_exactly(testbed_tokenizer):
    """grpo_fxp's trajectory signal: at rho None or 1 the reward function's f x p on the same
    text, exactly; below 1 a reward in [0, 1] that is 0 for every wrong completion."""
    import json

    from gc2po.methods.grpo_fxp import outcome_x_validity

    tok = testbed_tokenizer
    problems, ids, padded, mask = completions(tok, count=24)
    episodes = segment_completions(tok, padded, mask, 32)
    rows = [{"question": p.question, "meta_json": json.dumps(p.record()["meta"])} for p in problems]
    texts = [tok.decode(r, skip_special_tokens=True) for r in ids]
    reward = outcome_x_validity(None, texts, [r["meta_json"] for r in rows],
                                question=[r["question"] for r in rows])  # fmt: skip
    assert 0 < sum(reward) < len(reward)  # right and wrong completions (fractions: tests/core)
    for rho in (None, 1.0, 0.3):
        table, metrics = signals.oracle_signal(
            rows, episodes, torch.arange(24), 4, max_episodes=32, rho=rho, seed=3, trajectory=True
        )
        assert table.shape == (24, 1)
        assert metrics["signal/gated_reward"] == pytest.approx(table.mean().item())
        if rho != 0.3:
            assert table[:, 0].tolist() == reward  # exactly, not approximately
        else:
            assert table[:, 0].tolist() != reward
            assert ((table >= 0) & (table <= 1)).all()
            wrong = torch.tensor([grade(p, t).f == 0 for p, t in zip(problems, texts)])
            assert wrong.any() and (table[wrong] == 0).all()


def test_the_answer_probe_finds_the_answer_and_each_episodes_tokens(testbed_tokenizer):
    tok = testbed_tokenizer
    problems, ids, padded, mask = completions(tok, count=8)
    episodes = segment_completions(tok, padded, mask, 32)
    for row in range(8):
        text, offsets = episodes.texts[row], episodes.offsets[row]
        probe = signals.answer_probe(text, offsets, episodes.episode_ids[row].tolist())
        answer = "".join(text[a:b] for a, b in (offsets[t] for t in probe.answer))
        box = text.rindex("\\boxed{")
        assert answer == text[box + 7 : text.index("}", box)]  # the boxed number's tokens
        assert sorted(probe.removed) == list(range(episodes.num_episodes[row]))
        for slot, positions in probe.removed.items():
            spelled = "".join(text[a:b] for a, b in (offsets[t] for t in positions))
            assert spelled.endswith(f"</episode_{slot + 1}>") and "\\boxed" not in spelled


def test_no_final_answer_no_probe_and_still_one_call_of_the_policy(testbed_tokenizer):
    offsets = [(0, 5), (5, 9)]
    assert signals.answer_probe("hello 3+4", offsets, [0, 0]) is None
    assert signals.answer_probe("\\boxed{}", [(0, 7), (7, 8)], [0, 0]) is None
    ids = testbed_tokenizer("<episode_1>3+4=7</episode_1>", add_special_tokens=False)["input_ids"]
    episodes = segment_completions(
        testbed_tokenizer, torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.bool), 32
    )
    calls = []
    table = signals.answer_dependence(
        lambda s, p: calls.append((s, p)) or [], [[1]], [ids], episodes
    )
    assert calls == [([], [])] and table.tolist() == [[0.0]]  # every process enters the pass


def test_answer_dependence_by_hand(testbed_tokenizer):
    """With a fake policy whose answer log-prob is -0.1 per answer token plus -1 for every
    episode missing from the context, each probed episode's drop is 1 x the answer's length."""
    tok = testbed_tokenizer
    _, ids, padded, mask = completions(tok, count=6)
    episodes = segment_completions(tok, padded, mask, 32)
    prompt = tok("How many?", add_special_tokens=False)["input_ids"]
    first_tag, calls = tok.convert_tokens_to_ids("<episode_1>"), []

    def logps_of(sequences, positions):
        calls.append(len(sequences))
        missing = [first_tag not in sequence for sequence in sequences]
        return [torch.full((len(w),), -0.1 - 1.0 * m) for w, m in zip(positions, missing)]

    table = signals.answer_dependence(logps_of, [prompt] * 6, ids, episodes)
    assert calls == [6 + sum(episodes.num_episodes)]  # every pass in one call
    for row in range(6):
        probe = signals.answer_probe(
            episodes.texts[row], episodes.offsets[row], episodes.episode_ids[row].tolist()
        )
        expected = [len(probe.answer) * 1.0] + [0.0] * (episodes.num_episodes[row] - 1)
        assert table[row, : episodes.num_episodes[row]].tolist() == pytest.approx(expected)
        assert (table[row, episodes.num_episodes[row] :] == 0).all()


@pytest.mark.slow
def test_answer_token_logps_equal_one_plain_forward_per_sequence(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    generator = torch.Generator().manual_seed(0)
    sequences = [torch.randint(5, 200, (n,), generator=generator).tolist() for n in (7, 12, 4)]
    positions = [[3, 6], [1, 5, 11], [3]]
    got = signals.answer_token_logps(
        model, sequences, positions, pad_id=0, temperature=0.7, batch_size=2
    )
    for sequence, where, values in zip(sequences, positions, got):
        with torch.no_grad():
            logits = model(torch.tensor([sequence])).logits[0].float() / 0.7
        expected = torch.log_softmax(logits, -1)[
            [p - 1 for p in where], [sequence[p] for p in where]
        ]
        torch.testing.assert_close(values, expected, atol=1e-5, rtol=1e-5)
