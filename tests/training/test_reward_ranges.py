"""GC2PO and its ablations refuse, before training, a reward that can go below 0 (the paper's
R_out is in {0, 1}; issue 26), naming the reward function and its weight."""

from __future__ import annotations

import pytest

from gc2po.training.rewards import REWARDS, check_nonnegative_rewards
from gc2po.training.run_config import build_args


def penalty(prompts, completions, **kwargs):
    return [-1.0 for _ in completions]


def undeclared(prompts, completions, **kwargs):
    return [1.0 for _ in completions]


penalty.reward_range = (-1.0, 0.0)


@pytest.mark.parametrize(
    "functions, weights, message",
    [
        (
            [penalty],
            [1.0],
            "reward function 'penalty' (range [-1.0, 0.0]) with weight 1.0 can give -1",
        ),
        (
            [REWARDS["benchmark"]],
            [-2.0],
            "reward function 'outcome' (range [0.0, 1.0]) with weight -2.0 can give -2",
        ),
        (
            [REWARDS["benchmark"], undeclared],
            [1.0, 1.0],
            "'undeclared' declares no range: set undeclared.reward_range",
        ),
    ],
)
def test_a_reward_that_can_go_negative_is_refused_by_name(functions, weights, message):
    with pytest.raises(ValueError) as err:
        check_nonnegative_rewards("gc2po", functions, weights)
    assert message in str(err.value) and "'gc2po' needs rewards >= 0" in str(err.value)
    assert "\n" not in str(err.value)


def test_non_negative_rewards_and_weights_pass():
    check_nonnegative_rewards(
        "gc2po", [REWARDS["testbed"], penalty], [0.5, -1.0]
    )  # -1 x [-1, 0] >= 0
    check_nonnegative_rewards("gc2po", [REWARDS["benchmark"]], [0.0])


def run(tmp_path, method, weight):
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    data = tmp_path / "train.jsonl"
    data.write_text('{"id": "a", "question": "q", "answer": "1"}\n')
    return {
        "model": str(model),
        "train_data": str(data),
        "output_dir": str(tmp_path / "out"),
        "task": "benchmark",
        "method": method,
        "trainer": {
            "reward_weights": [weight],
            "num_generations": 2,
            "per_device_train_batch_size": 2,
        },
    }


@pytest.mark.parametrize("method", ["gc2po", "gc2po_no_sexp", "gc2po_no_ssta", "gc2po_no_rcf"])
def test_run_config_with_a_negative_weight_is_refused_for_gc2po(method, tmp_path):
    with pytest.raises(
        ValueError, match=r"^run config: trainer.reward_weights: .* weight -1.0 can give -1"
    ):
        build_args(run(tmp_path, method, -1.0))


@pytest.mark.parametrize("method, weight", [("grpo", -1.0), ("gc2po", 2.0)])
def test_other_methods_and_positive_weights_are_accepted(method, weight, tmp_path):
    assert build_args(run(tmp_path, method, weight)).method == method


def test_the_trainer_refuses_an_undeclared_reward_before_training(small_run):
    with pytest.raises(ValueError, match="reward function 'undeclared' declares no range"):
        small_run("gc2po", reward=undeclared)
    assert small_run("grpo", out="grpo", reward=undeclared).method.name == "grpo"
