"""Shared fixtures: a tokenizer trained in-process and a tiny random causal LM saved with
``save_pretrained`` (no download anywhere)."""

from __future__ import annotations

import json

import pytest

from ci.system_packages import cannot_install_reason, install, read_list


def pytest_sessionstart(session):
    """Install the Debian packages of system-packages.txt that are missing, once, before any test
    runs: a test that reaches the sandbox (or SLURM, or LaTeX) must not find them absent on a
    fresh machine. Where installing is impossible (not root, no apt-get) the tests that need a
    package skip and say why (tests/system_packages.py)."""
    entries = read_list()
    if any(e.missing() for e in entries) and cannot_install_reason() is None:
        install(entries)


CORPUS = [
    "<episode_1> First, 3 + 4 = 7. </episode_1> <episode_2> Then 7 * 2 = 14. </episode_2> The "
    "answer is \\boxed{14}.",
    "Let me think.\n\nWe add 12 and 30 to get 42.\n\nSo the answer is \\boxed{42}.",
    "<episode_3> Compute 5 - 2 = 3 <episode_5> and 3 * 3 = 9 </episode_5> final \\boxed{9}",
    "Tom has 5 apples and buys 3 more. How many apples does Tom have?",
]


@pytest.fixture(scope="session")
def fast_tokenizer():
    from gc2po.models.build import train_tokenizer

    return train_tokenizer(CORPUS * 20, vocab_size=300)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, fast_tokenizer):
    """A 2-layer Llama with random weights and the test tokenizer, saved like a Hub model."""
    from gc2po.models.build import build_causal_lm

    path = tmp_path_factory.mktemp("tiny_model")
    model = build_causal_lm(fast_tokenizer, hidden_size=32, num_layers=2, num_heads=2, seed=0)
    model.save_pretrained(path)
    fast_tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def testbed_train_file(tmp_path_factory):
    from gc2po.testbed.generator import generate_splits

    path = tmp_path_factory.mktemp("testbed") / "train.jsonl"
    problems = generate_splits({"train": 16}, seed=0)["train"]
    path.write_text("".join(json.dumps(p.record()) + "\n" for p in problems))
    return path


@pytest.fixture
def run_files(tmp_path):
    """The smallest valid run config's files: an (empty) model folder and one training row."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    data = tmp_path / "train.jsonl"
    data.write_text(json.dumps({"id": "a", "question": "q", "answer": "1"}) + "\n")
    return {
        "model": str(model),
        "train_data": str(data),
        "output_dir": str(tmp_path / "out"),
        "task": "testbed",
    }
