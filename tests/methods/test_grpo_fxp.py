"""The f x p positive control: its reward on hand-written completions, its label, and the hook that
gives a method its own reward (the outcome logged beside it, weight 0)."""

import json

import pytest

from gc2po.methods import METHODS
from gc2po.methods.grpo_fxp import outcome_x_validity
from gc2po.testbed.generator import Problem
from gc2po.training.rewards import REWARDS, reward_functions

# 5 apples, +3, *2, -4: values 8, 16, 12; a bet on 12
PROBLEM = Problem(
    "p", "test_id", "Ana has 5 apples. ...", 5, (("+", 3), ("*", 2), ("-", 4)), (8, 16, 12), 12
)
CASES = {
    # f = 1, p = 1
    "<episode_1>5+3=8</episode_1><episode_2>8*2=16</episode_2><episode_3>16-4=12</episode_3>"
    "\\boxed{12}": 1.0,
    # right answer, 1 valid episode of 3 (wrong operands): f = 1, p = 1/3
    "<episode_1>5+4=8</episode_1><episode_2>8*3=16</episode_2><episode_3>16-4=12</episode_3>"
    "\\boxed{12}": 1 / 3,
    # the copied bet: right answer, no valid step: f = 1, p = 0
    "<episode_1>bet=12</episode_1>\\boxed{12}": 0.0,
    # a slip: 2 valid episodes of 3, wrong answer: f = 0
    "<episode_1>5+3=8</episode_1><episode_2>8*2=18</episode_2><episode_3>18-4=14</episode_3>"
    "\\boxed{14}": 0.0,
    # 3 valid episodes of 4 (an extra one dilutes p), right answer: f = 1, p = 3/4
    "<episode_1>5+3=8</episode_1><episode_2>8*2=16</episode_2><episode_3>16-4=12</episode_3>"
    "<episode_4>note</episode_4>\\boxed{12}": 0.75,
}


def test_the_reward_is_outcome_times_process_validity():
    meta = json.dumps(PROBLEM.record()["meta"])
    texts = list(CASES)
    # as TRL passes them: conversations, with the dataset's columns
    values = outcome_x_validity(
        prompts=[None] * len(texts),
        completions=[[{"role": "assistant", "content": t}] for t in texts],
        meta_json=[meta] * len(texts),
        question=[PROBLEM.question] * len(texts),
    )
    assert values == pytest.approx(list(CASES.values()))
    outcome = REWARDS["testbed"](None, texts, [meta] * len(texts))
    assert outcome == [1.0, 1.0, 1.0, 0.0, 1.0]  # what rewards/outcome/mean averages


def test_the_control_is_registered_labelled_and_owns_its_reward():
    method = METHODS["grpo_fxp"]
    assert method.display_name.startswith("Control (oracle):")
    assert method.fixed["reward_weights"] == [0.0, 1.0] and method.loss_type == "grpo"
    assert reward_functions(method, "testbed") == [REWARDS["testbed"], outcome_x_validity]
    assert reward_functions(METHODS["grpo"], "benchmark") == [REWARDS["benchmark"]]
    with pytest.raises(ValueError, match=r"'grpo_fxp' .* not for task 'benchmark'"):
        reward_functions(method, "benchmark")
    # only methods that declare a reward get the weights
    assert all("reward_weights" not in m.fixed for m in METHODS.values() if m.rewards is None)


def test_the_gated_dose_response_trains_on_f_x_p_rho():
    """With cf_signal_rho the advantages are GRPO's of the trajectory signal (f x p_rho, r_cf
    [B, 1]); without it, of the reward function's f x p; an unscored row stays unscored."""
    from types import SimpleNamespace

    import torch

    from gc2po.core.groups import grpo_advantage
    from gc2po.methods.base import RolloutBatch
    from gc2po.methods.grpo_fxp import grpo_fxp_advantages

    method = METHODS["grpo_fxp"]
    assert method.sweeps == ("cf_signal_rho",) and method.fixed["cf_signal"] == "oracle"
    assert method.trajectory_signal and method.needs_cf and method.local_groups
    rewards = torch.tensor([1.0, 0.5, 0.0, 0.0, 1.0, float("nan"), 0.25, 0.0])
    gated = torch.tensor([[0.8], [0.7], [0.0], [0.0], [1.0], [0.3], [0.1], [0.0]])
    batch = RolloutBatch(
        rewards, torch.arange(8), 4, torch.ones(8, 3, dtype=torch.bool), lambda t: t, r_cf=gated
    )
    plain, _ = grpo_fxp_advantages(batch, SimpleNamespace(cf_signal="oracle", cf_signal_rho=None))
    torch.testing.assert_close(plain, grpo_advantage(rewards.view(2, 4)).reshape(-1))
    noisy, _ = grpo_fxp_advantages(batch, SimpleNamespace(cf_signal="oracle", cf_signal_rho=0.3))
    expected = grpo_advantage(torch.where(rewards.isnan(), rewards, gated[:, 0]).view(2, 4))
    torch.testing.assert_close(noisy, expected.reshape(-1))
    assert noisy[5] == 0 and not torch.equal(noisy, plain)
