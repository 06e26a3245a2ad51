"""The testbed warm start: SFT mix, a Hub-loadable model, and byte-identical model files from
the same config on an idle and on a loaded machine."""

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gc2po.testbed.generator import generate_splits
from gc2po.testbed.warmstart import WarmStartConfig, sft_pairs, warm_start
from tests.shared_outputs import MINI_WARM_START

ROOT = Path(__file__).resolve().parents[2]
MODEL_FILES = (
    "model.safetensors",
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "warmstart.json",
)


def test_sft_mix_has_the_configured_imperfect_share():
    problems = generate_splits({"train": 400}, 0)["train"]
    pairs = sft_pairs(problems, WarmStartConfig(slip_frac=0.25, shortcut_frac=0.1, seed=0))
    from gc2po.testbed.oracle import grade

    groups = [grade(p, s).group for p, (_, s) in zip(problems, pairs)]
    assert 0.18 < groups.count("near_miss") / 400 < 0.32
    assert 0.05 < groups.count("lucky_guess") / 400 < 0.16


def test_config_from_a_mapping_names_a_bad_key_or_value():
    assert WarmStartConfig.from_mapping({"epochs": 2, "lr": 1}).lr == 1
    with pytest.raises(ValueError, match=r"testbed.warm_start: unknown key 'max_seconds'"):
        WarmStartConfig.from_mapping({"max_seconds": 230}, "testbed.warm_start")
    with pytest.raises(ValueError, match=r"warm_start.hidden_size: must be int, got 12.5"):
        WarmStartConfig.from_mapping({"hidden_size": 12.5})
    with pytest.raises(ValueError, match=r"warm_start.epochs: must be float, got 'abc'"):
        WarmStartConfig.from_mapping({"epochs": "abc"})


@pytest.mark.slow
def test_mini_warm_start_loads_like_a_hub_model(mini_warm_start):
    """The session's mini warm start (tests/shared_outputs.py: 64 train problems, hidden 32, one
    layer, one epoch of batches of 16)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gc2po.evaluation.backends import SamplingConfig, TransformersBackend

    problems = generate_splits({"train": 64}, 0)["train"]
    model_dir, stats = mini_warm_start
    assert (
        stats["steps"] == 4 and json.loads((model_dir / "warmstart.json").read_text())["steps"] == 4
    )
    assert sorted(p.name for p in model_dir.iterdir()) == sorted(
        MODEL_FILES
    )  # nothing of the Trainer left behind
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    assert model.config.model_type == "llama"
    assert tokenizer.convert_tokens_to_ids("<episode_1>") != tokenizer.unk_token_id
    assert len(tokenizer("12", add_special_tokens=False)["input_ids"]) == 2  # digits split
    backend = TransformersBackend.from_pretrained(str(model_dir))
    out = backend.generate(
        [[{"role": "user", "content": problems[0].question}]], SamplingConfig(n=2, max_new_tokens=5)
    )
    assert len(out) == 2 and all(g.num_tokens <= 5 for g in out)
    assert torch.isfinite(next(model.parameters())).all()


def _ci_warm_start(out_dir: Path) -> dict:
    """The warm start of the CI miniature (config/ci.yaml sizes), as the workflow runs it."""
    ci = yaml.safe_load((ROOT / "config" / "ci.yaml").read_text())["testbed"]
    problems = generate_splits({"train": ci["sizes"]["train"]}, ci["seed"])["train"]
    return warm_start(
        problems, out_dir, WarmStartConfig.from_mapping(ci["warm_start"]), log=lambda *a: None
    )


@pytest.mark.slow
def test_ci_warm_start_is_byte_identical_on_an_idle_and_a_loaded_machine(tmp_path, mini_warm_start):
    """The first run is the session's mini warm start, which is the ci miniature's (checked
    first); the second runs here beside busy loops on every core."""
    ci = yaml.safe_load((ROOT / "config" / "ci.yaml").read_text())["testbed"]
    assert (ci["warm_start"], ci["sizes"]["train"], ci["seed"]) == (MINI_WARM_START, 64, 0), (
        "config/ci.yaml's warm start is no longer tests/shared_outputs.py's MINI_WARM_START"
    )
    idle_dir, idle = mini_warm_start
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(4)
    ]  # > the CI's cores
    try:
        loaded = _ci_warm_start(tmp_path / "loaded")
        assert all(b.poll() is None for b in burners)  # the load lasted the whole second run
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert idle == loaded and idle["steps"] == idle["total_steps"]
    for name in MODEL_FILES:
        assert (idle_dir / name).read_bytes() == (tmp_path / "loaded" / name).read_bytes(), name


def test_copy_targets_only_where_a_cue_is():
    from gc2po.testbed.generator import CueConfig
    from gc2po.testbed.oracle import grade

    problems = generate_splits({"train": 1000}, 0, CueConfig(frac=0.5, accuracy=0.8))["train"]
    pairs = sft_pairs(problems, WarmStartConfig(copy_frac=0.4, seed=0))
    copies = [p for p, (_, s) in zip(problems, pairs) if s.startswith("<episode_1>bet=")]
    cued = [p for p in problems if p.cue is not None]
    assert copies and all(p.cue is not None for p in copies)
    assert 0.33 < len(copies) / len(cued) < 0.47
    assert all(grade(p, s).p == 0 for p, (_, s) in zip(problems, pairs) if p in copies)
    with pytest.raises(ValueError, match="copy_frac"):
        WarmStartConfig(copy_frac=1.5)


def test_length_buckets_by_hand():
    from gc2po.testbed import warmstart

    # 6 examples, batch 2, chunks of BUCKET_BATCHES * 2 >= 6: one chunk per epoch, sorted by
    # length (ties by index), cut into [0, 3], [1, 4], [2, 5]; the epoch's batches shuffled
    lengths = [5, 9, 7, 5, 9, 7]
    batches = warmstart.length_bucketed_batches(lengths, 2, 5, seed=0)
    assert len(batches) == 5
    assert sorted(map(sorted, batches[:3])) == [[0, 3], [1, 4], [2, 5]]
    assert all(len({lengths[i] for i in b}) == 1 for b in batches)  # no padding at all here
    assert batches == warmstart.length_bucketed_batches(lengths, 2, 5, seed=0)  # pure
    with pytest.raises(ValueError, match="length_bucketed_batches"):
        warmstart.length_bucketed_batches([], 2, 5, seed=0)


@given(
    lengths=st.lists(st.integers(1, 200), min_size=1, max_size=300),
    batch_size=st.integers(1, 40),
    epochs=st.integers(1, 3),
    seed=st.integers(0, 3),
)
@settings(max_examples=60, deadline=None)
def test_length_buckets_cover_each_epoch_once_with_less_padding(lengths, batch_size, epochs, seed):
    from gc2po.testbed.warmstart import BUCKET_BATCHES, length_bucketed_batches

    per_epoch = math.ceil(len(lengths) / batch_size)
    batches = length_bucketed_batches(lengths, batch_size, epochs * per_epoch, seed)
    assert len(batches) == epochs * per_epoch
    for e in range(epochs):  # every example exactly once per epoch, batches of batch_size
        epoch = batches[e * per_epoch : (e + 1) * per_epoch]
        assert sorted(i for b in epoch for i in b) == list(range(len(lengths)))
        assert sum(len(b) < batch_size for b in epoch) <= math.ceil(
            len(lengths) / (BUCKET_BATCHES * batch_size)
        )  # only a chunk's last batch can be short
    if len(lengths) <= BUCKET_BATCHES * batch_size:  # one chunk an epoch: its batches are
        # consecutive runs of the sorted lengths, so no two batches' length ranges interleave
        epoch = batches[:per_epoch]
        ranges = sorted((min(lengths[i] for i in b), max(lengths[i] for i in b)) for b in epoch)
        assert all(high <= next_low for (_, high), (next_low, _) in zip(ranges, ranges[1:]))


def test_length_buckets_cut_the_padding_of_the_default_mix():
    from gc2po.testbed.warmstart import length_bucketed_batches

    problems = generate_splits({"train": 1000}, 0)["train"]
    tokenizer_free = [len(p.question.split()) + 10 * len(p.steps) for p in problems]
    batches = length_bucketed_batches(tokenizer_free, 32, 64, seed=0)
    padded = sum(max(tokenizer_free[i] for i in b) * len(b) for b in batches)
    real = sum(tokenizer_free[i] for b in batches for i in b)
    assert padded / real < 1.05


@pytest.mark.slow
def test_bucketed_warm_start_trains_its_step_budget(tmp_path):
    problems = generate_splits({"train": 70}, 0)["train"]
    config = WarmStartConfig(
        hidden_size=32,
        num_layers=1,
        num_heads=2,
        epochs=2,
        batch_size=16,
        vocab_size=300,
        length_buckets=True,
    )
    stats = warm_start(problems, tmp_path / "a", config, log=lambda *a: None)
    assert stats["steps"] == stats["total_steps"] == 10  # 2 epochs x ceil(70 / 16)
    assert math.isfinite(stats["final_loss"])
    warm_start(problems, tmp_path / "b", config, log=lambda *a: None)
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (
        tmp_path / "b" / "model.safetensors"
    ).read_bytes()
    random_batches = dataclasses.replace(config, length_buckets=False)
    plain = warm_start(problems, tmp_path / "c", random_batches, log=lambda *a: None)
    assert plain["steps"] == 10 and plain["final_loss"] != stats["final_loss"]
