"""No non-finite step reaches the weights; precision bf16-mixed keeps fp32 master weights."""

from __future__ import annotations

import copy
import json
import math

import pytest
import torch
from transformers import TrainerCallback

from gc2po.training.step_guard import NonFiniteStepGuard, NonFiniteStepsError


class PoisonGradients(TrainerCallback):
    """Makes one parameter's gradient NaN during the given optimizer steps (1-based), and keeps
    a snapshot of the weights, optimizer state and LR schedule at the start of each step."""

    def __init__(self, trainer, steps: set[int], name: str):
        self.trainer, self.steps, self.name = trainer, steps, name
        self.param = dict(trainer.model.named_parameters())[name]
        self.handle, self.snapshots = None, {}

    def on_step_begin(self, args, state, control, **kwargs):
        step = state.global_step + 1
        t = self.trainer
        self.snapshots[step] = {
            "params": {n: p.detach().clone() for n, p in t.model.named_parameters()},
            "optimizer": copy.deepcopy(t.optimizer.state_dict()),
            "scheduler": copy.deepcopy(t.lr_scheduler.state_dict()),
            "lr": t.lr_scheduler.get_last_lr(),
        }
        if step in self.steps:
            self.handle = self.param.register_hook(lambda grad: grad * float("nan"))

    def on_step_end(self, args, state, control, **kwargs):
        if self.handle is not None:
            self.handle.remove()
            self.handle = None


def same_state(a, b) -> bool:
    def flat(x):
        if isinstance(x, torch.Tensor):
            return [x]
        if isinstance(x, dict):
            return [t for k in sorted(x, key=str) for t in [k, *flat(x[k])]]
        if isinstance(x, list | tuple):
            return [t for v in x for t in flat(v)]
        return [x]

    fa, fb = flat(a), flat(b)
    return len(fa) == len(fb) and all(
        torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(fa, fb)
    )


@pytest.mark.slow
def test_a_nan_gradient_skips_the_step_and_leaves_weights_optimizer_and_schedule_untouched(
    small_run, tmp_path
):
    trainer = small_run(
        "gc2po",
        out="nan",
        max_steps=3,
        save_strategy="no",
        lr_scheduler_type="linear",
        warmup_steps=0,
    )
    name = "model.layers.1.mlp.down_proj.weight"
    poison = PoisonGradients(trainer, {2}, name)
    trainer.add_callback(poison)
    trainer.train()
    before, after = poison.snapshots[2], poison.snapshots[3]  # step 2 was poisoned
    for n, value in before["params"].items():
        assert torch.equal(value, after["params"][n]), f"{n} changed during the skipped step"
    assert same_state(before["optimizer"], after["optimizer"])
    assert same_state(before["scheduler"], after["scheduler"]) and before["lr"] == after["lr"]
    # the steps around it did move the weights and the schedule
    assert not torch.equal(poison.snapshots[2]["params"][name], poison.snapshots[1]["params"][name])
    assert poison.snapshots[2]["lr"] != poison.snapshots[1]["lr"]
    records = [
        json.loads(line) for line in (tmp_path / "nan" / "metrics.jsonl").read_text().splitlines()
    ]
    skipped = {r["step"]: r["nonfinite/skipped_steps"] for r in records if "loss" in r}
    assert skipped == {1: 0.0, 2: 1.0, 3: 1.0}
    assert math.isnan(next(r["grad_norm"] for r in records if r.get("step") == 2 and "loss" in r))


@pytest.mark.slow
def test_consecutive_non_finite_steps_stop_the_run_naming_step_parameter_and_prompts(small_run):
    trainer = small_run(
        "grpo", out="stop", max_steps=5, save_strategy="no", max_consecutive_skipped_steps=2
    )
    name = "model.layers.0.self_attn.q_proj.weight"
    trainer.add_callback(PoisonGradients(trainer, {1, 2, 3, 4, 5}, name))
    with pytest.raises(
        NonFiniteStepsError,
        match=rf"2 consecutive.*last at step 2.*first non-finite parameter: "
        rf"{name}.*prompt ids of the batch: \['train-000\d\d'",
    ):
        trainer.train()


def test_guard_finds_the_first_non_finite_gradient_before_clipping_spreads_it():
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Linear(3, 1))
    model(torch.randn(2, 3)).sum().backward()
    model[1].weight.grad[0, 1] = float("inf")
    guard = NonFiniteStepGuard(max_consecutive=1)
    norm = guard.clip(model.named_parameters(), max_norm=1.0)
    assert not torch.isfinite(norm)
    assert torch.isfinite(model[0].weight.grad).all()  # not clipped by a NaN coefficient
    with pytest.raises(NonFiniteStepsError, match=r"first non-finite parameter: 1.weight"):
        guard.end_step(norm, step=7, parameters=model.parameters())
    assert all(p.grad is None for p in model.parameters())


def test_guard_clips_like_torch_when_finite():
    torch.manual_seed(0)
    a, b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
    b.load_state_dict(a.state_dict())
    (a(torch.randn(3, 4)) * 100).sum().backward()
    b.weight.grad, b.bias.grad = a.weight.grad.clone(), a.bias.grad.clone()
    expected = torch.nn.utils.clip_grad_norm_(a.parameters(), 0.5)
    got = NonFiniteStepGuard(1).clip(b.named_parameters(), 0.5)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(b.weight.grad, a.weight.grad)


def test_a_non_finite_loss_alone_skips_and_a_finite_step_resets_the_count():
    guard = NonFiniteStepGuard(max_consecutive=2)
    p = torch.nn.Parameter(torch.ones(2))
    p.grad = torch.ones(2)
    guard.note_loss(torch.tensor(float("nan")))
    assert guard.end_step(1.0, 1, [p]) and p.grad is None
    p.grad = torch.ones(2)
    assert not guard.end_step(1.0, 2, [p]) and p.grad is not None
    assert guard.consecutive == 0 and guard.skipped_total == 1


@pytest.mark.slow
def test_three_bf16_mixed_steps_give_finite_grad_norms_and_move_the_fp32_weights(
    small_run, tmp_path
):
    trainer = small_run(
        "gc2po",
        out="bf16",
        precision="bf16-mixed",
        max_steps=3,
        save_strategy="no",
        learning_rate=1e-6,
    )
    assert trainer.args.bf16 and trainer.args.precision == "bf16-mixed"
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert all(
        p.dtype == torch.float32 for p in trainer.model.parameters()
    )  # master weights stay fp32
    records = [
        json.loads(line) for line in (tmp_path / "bf16" / "metrics.jsonl").read_text().splitlines()
    ]
    norms = [r["grad_norm"] for r in records if "loss" in r]
    assert len(norms) == 3 and all(math.isfinite(n) and n > 0 for n in norms)
    moved = sum(not torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())
    assert moved == len(
        before
    )  # an lr-1e-6 step changes every fp32 tensor (pure bf16 would round most away)
