"""The TRL adapter on a tiny random model: every method trains, GC2PO's advantages equal the
core function's, a resumed run matches an uninterrupted one, bad configs fail early."""

from __future__ import annotations

import json

import pytest
import torch

from gc2po.core.advantages import token_advantages
from gc2po.methods import METHODS
from gc2po.train import build_args, build_dataset, read_jsonl

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
    """A reward with variance inside every group: parity of the completion length."""
    return [float(len(c[-1]["content"]) % 2) for c in completions]


parity_reward.__name__ = "outcome"  # logged as rewards/outcome/mean, like the real outcome rewards


def make_trainer(model_dir, train_file, out_dir, method, **trainer):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gc2po.trl_adapter import GC2POTrainer

    run = {"model": str(model_dir), "train_data": str(train_file), "output_dir": str(out_dir),
           "task": "testbed", "method": method, "seed": 0, "trainer": {**SMALL, **trainer}}
    args = build_args(run)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    dataset = build_dataset(read_jsonl(train_file), "testbed")
    return GC2POTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                        reward_funcs=[parity_reward])


@pytest.mark.slow
@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_trains_two_steps_and_changes_parameters(method, tiny_model_dir, testbed_train_file, tmp_path):
    trainer = make_trainer(tiny_model_dir, testbed_train_file, tmp_path, method)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert changed, f"{method}: no parameter changed after 2 steps"
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "loss" in r]
    assert len(steps) == 2
    for key in ("rewards/outcome/mean", "advantages/mean", "grad_norm", "sampling_ratio/mean", "step_time",
                "completions/mean_length"):
        assert key in steps[0], f"{method}: metric {key} not logged"
    expected = []
    if METHODS[method].needs_episodes:
        expected += ["segmentation/fallback_rate", "episodes/mean_count"]
    if METHODS[method].needs_cf:
        expected += ["gc2po/s_sta", "gc2po/s_exp", "gc2po/r_cf"]
    expected += {"mrt": ["mrt/progress_mean"], "gcpo": ["gcpo/upsilon_mean"], "rest_mcts": ["rest/selected_frac"]}.get(method, [])
    for key in expected:
        assert key in steps[0], f"{method}: metric {key} not logged"


@pytest.mark.slow
def test_gc2po_trainer_advantages_equal_core_function(tiny_model_dir, testbed_train_file, tmp_path):
    trainer = make_trainer(tiny_model_dir, testbed_train_file, tmp_path, "gc2po", max_steps=1)
    captured = {}
    original = trainer._generate_and_score_completions

    def capture(inputs):
        out = original(inputs)
        captured["out"], captured["batch"] = out, trainer._last_rollout
        return out

    trainer._generate_and_score_completions = capture
    trainer.train()
    out, batch = captured["out"], captured["batch"]
    args = trainer.args
    r_cf = args.lambda_sta * batch.s_sta + args.lambda_exp * batch.s_exp
    K = args.num_generations
    for g in range(out["advantages"].shape[0] // K):
        rows = slice(g * K, (g + 1) * K)
        expected = token_advantages(
            batch.rewards_all[rows], batch.episode_ids[rows], r_cf[rows], batch.old_logps[rows],
            out["completion_mask"][rows].bool(), lambda_cf=args.lambda_cf, trunc_frac=args.trunc_frac,
            adv_clip=args.adv_clip,
        )
        torch.testing.assert_close(out["advantages"][rows], expected)
    # the single pass gives TRL's log-probs and the backbone's final-norm states of the completion
    # (compared on the current weights: the policy moved by one step since sampling)
    full = torch.cat([out["prompt_ids"], out["completion_ids"]], 1)
    attn = torch.cat([out["prompt_mask"], out["completion_mask"]], 1)
    logps, states = trainer._sampling_policy_pass(out, want_states=True)
    with torch.no_grad():
        trl_logps, _, _ = trainer._get_per_token_logps_and_entropies(trainer.model, full, attn, out["completion_ids"].shape[1])
        hidden = trainer.model.model(input_ids=full, attention_mask=attn).last_hidden_state
    mask = out["completion_mask"].bool()
    torch.testing.assert_close(logps[mask], trl_logps[mask])
    prompt_len = out["prompt_ids"].shape[1]
    torch.testing.assert_close(states[mask], hidden[:, prompt_len:][mask], atol=1e-5, rtol=1e-5)


@pytest.mark.slow
def test_resume_matches_uninterrupted_run(tiny_model_dir, testbed_train_file, tmp_path):
    full = make_trainer(tiny_model_dir, testbed_train_file, tmp_path / "full", "gc2po", max_steps=4)
    full.train()
    first = make_trainer(tiny_model_dir, testbed_train_file, tmp_path / "split", "gc2po", max_steps=2)
    first.train()  # writes checkpoint-2, then the process "dies"
    assert (tmp_path / "split" / "checkpoint-2").exists()
    resumed = make_trainer(tiny_model_dir, testbed_train_file, tmp_path / "split", "gc2po", max_steps=4)
    resumed.train(resume_from_checkpoint=True)
    # tolerance: identical up to float32 reduction order (we see exact equality on CPU)
    for (name, a), (_, b) in zip(full.model.named_parameters(), resumed.model.named_parameters()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5, msg=f"parameter {name} differs after resume")


@pytest.mark.parametrize(
    "override, match",
    [
        ({"method": "ppo"}, r"method: unknown name 'ppo'; valid choices: \["),
        ({"trainer": {"lambda_cf": 1.5}}, r"lambda_cf must be in \[0, 1\]"),
        ({"trainer": {"lambda_exp": -0.1}}, r"lambda_exp must be in \[0, 1\]"),
        ({"trainer": {"num_generations": 1, "per_device_train_batch_size": 4}}, "num_generations"),
        ({"trainer": {"num_generations": 3, "per_device_train_batch_size": 4}}, r"divisible by num_generations"),
        ({"trainer": {"no_such_field": 1}}, r"unknown trainer key\(s\) \['no_such_field'\]"),
        ({"surprise": 1}, r"unknown key\(s\) \['surprise'\]"),
        ({"task": "poetry"}, "task must be one of"),
    ],
)
def test_bad_config_fails_before_model_load(override, match, tmp_path):
    # the model path does not exist: reaching model loading would raise a different error
    run = {"model": str(tmp_path / "missing"), "train_data": "x.jsonl", "output_dir": str(tmp_path)}
    trainer = {**SMALL, **override.pop("trainer", {})}
    with pytest.raises(ValueError, match=match):
        build_args({**run, "trainer": trainer, **override})
