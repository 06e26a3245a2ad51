"""Helpers for trainer tests: a run on the tiny random model of tests/conftest.py."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from gc2po.methods import MethodOutput

SMALL = {
    "num_generations": 2,
    "per_device_train_batch_size": 4,
    "max_completion_length": 12,
    "learning_rate": 1e-2,
    "weight_decay": 0.0,  # parameters may change only through the policy gradient
    "max_steps": 2,
    "save_steps": 2,
    "num_perturbations": 2,
    "answer_topk": 8,
}


def parity_reward(prompts, completions, **kwargs):
    """A reward with variance inside most groups: parity of the completion length."""
    return [float(len(c[-1]["content"]) % 2) for c in completions]


parity_reward.__name__ = "outcome"  # logged as rewards/outcome/mean, like the real outcome rewards
parity_reward.reward_range = (0.0, 1.0)  # GC2PO checks that R_out cannot go below 0


def stand_in_for(own):
    """For a method that owns its reward (``Method.rewards``), a reward under the same name with
    variance inside most groups and other values than the outcome's (length divisible by 3): the
    tiny random model never answers a problem, so the method's real reward would be 0 throughout.
    """

    def reward(prompts, completions, **kwargs):
        return [float(len(c[-1]["content"]) % 3 == 0) for c in completions]

    reward.__name__, reward.reward_range = own.__name__, own.reward_range
    return reward


def trainer_rewards(method: str, outcome) -> list:
    """The reward functions the trainer gets for ``method``, as ``gc2po.training.train`` chooses
    them (``gc2po.training.rewards.reward_functions``), with ``outcome`` for the outcome and a
    stand-in for a method's own reward."""
    from gc2po.methods import get_method
    from gc2po.training.rewards import reward_functions

    functions = reward_functions(get_method(method), "testbed")
    return [outcome] + [stand_in_for(own) for own in functions[1:]]


def run_config(model_dir, train_file, out_dir, method, **trainer):
    return {
        "model": str(model_dir),
        "train_data": str(train_file),
        "output_dir": str(out_dir),
        "task": "testbed",
        "method": method,
        "seed": 0,
        "overwrite": True,
        "trainer": {**SMALL, **trainer},
    }


def make_trainer(
    model_dir,
    train_file,
    out_dir,
    method,
    *,
    reward=parity_reward,
    trainer_class=None,
    precision=None,
    resume=False,
    **trainer,
):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gc2po.data.jsonl import read_jsonl
    from gc2po.training.output_dir import prepare_output_dir
    from gc2po.training.run_config import build_args
    from gc2po.training.train import build_dataset
    from gc2po.training.trainer import GC2POTrainer

    run = run_config(model_dir, train_file, out_dir, method, **trainer)
    if precision:
        run["precision"] = precision
    run["resume"] = resume
    args = build_args(run)
    prepare_output_dir(run, args, log=lambda *a: None)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    dataset = build_dataset(read_jsonl(train_file), "testbed")
    return (trainer_class or GC2POTrainer)(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        reward_funcs=trainer_rewards(method, reward),
    )


def record_advantages(trainer) -> list:
    """Wrap the method's advantage function: every call appends (batch, advantages)."""
    calls = []
    original = trainer.method.advantages

    def recording(batch, config):
        output = MethodOutput(*original(batch, config))
        calls.append((batch, output.advantages.detach().clone()))
        return output

    trainer.method = dataclasses.replace(trainer.method, advantages=recording)
    return calls


@pytest.fixture
def small_run(tiny_model_dir, testbed_train_file, tmp_path):
    def build(method="gc2po", out="run", **kwargs):
        return make_trainer(tiny_model_dir, testbed_train_file, tmp_path / out, method, **kwargs)

    return build
