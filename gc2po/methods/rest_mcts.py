"""ReST-MCTS*-lite (Zhang et al. 2024, arXiv 2406.03816).

Per prompt: the K group rollouts are split into steps (the <episode_i> tags); at one seeded random
step boundary of every rollout, ``branches`` continuations are sampled, giving a shallow tree. Every
step of the rollouts is labelled with the paper's value target (s_k, m_k from the verified leaves),
a value head (a linear layer on the final-norm state at the step's last token, kept in the trainer's
method state, trained by MSE) learns them, and the policy is trained by behaviour cloning of
verified-correct rollouts whose minimum predicted step value is at least ``min_value`` (or the best
correct rollout of the prompt): advantage 1{selected} in TRL's clipped loss, which at the sampling
policy is the NLL gradient.

Deviations, disclosed: no MCTS search (one branching point per rollout), the value head is
trained online next to the policy instead of in separate self-training rounds and is not part
of the checkpoint, KL beta = 0 (pure behaviour cloning).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import torch

from gc2po.core.segment import segment_episodes
from gc2po.core.step_baselines import label_rollout_steps, rest_selection, rest_value_targets
from gc2po.methods.base import RolloutBatch, advantage_metrics, register_method


@dataclass(frozen=True)
class ReSTSettings:
    """ReST-MCTS*-lite's settings (``trainer.method_args`` of a ``rest_mcts`` run)."""

    branches: int = 3  # continuations per branch point
    min_value: float = 0.2  # minimum predicted step value to clone a rollout
    value_lr: float = 1e-3  # learning rate of the value head

    def check(self) -> None:
        if self.branches < 1:
            raise ValueError(f"branches must be >= 1, got {self.branches!r}")
        if not self.value_lr > 0:
            raise ValueError(f"value_lr must be > 0, got {self.value_lr!r}")


class ValueHead:
    """ReST-MCTS*'s value head: a linear layer on final-norm states trained online by MSE, its
    gradients averaged over processes so every rank keeps the same head."""

    def __init__(self, lr: float, reduce_mean: Callable[[torch.Tensor], torch.Tensor]):
        self.lr, self.reduce_mean = lr, reduce_mean
        self.layer: torch.nn.Linear | None = None

    def fit(self, states: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, float]:
        """One MSE step on (states [N, d], targets [N]); returns (predictions after it, loss)."""
        states, targets = states.float().detach(), targets.float().to(states.device)
        if self.layer is None:
            self.layer = torch.nn.Linear(states.shape[-1], 1).to(states.device)
            self.optimizer = torch.optim.Adam(self.layer.parameters(), lr=self.lr)
        with torch.enable_grad():
            self.optimizer.zero_grad()
            loss = (
                torch.nn.functional.mse_loss(self.layer(states).squeeze(-1), targets)
                if len(targets)
                else None
            )
            if loss is not None:
                loss.backward()
            for p in self.layer.parameters():  # every rank steps, with or without states of its own
                p.grad = self.reduce_mean(p.grad if p.grad is not None else torch.zeros_like(p))
            self.optimizer.step()
        with torch.no_grad():
            return self.layer(states).squeeze(-1), (loss.item() if loss is not None else 0.0)


@register_method(
    "rest_mcts",
    "ReST-MCTS*-lite: shallow branching, value targets, value head, filtered behaviour cloning",
    display_name="ReST-MCTS*",
    colour="#2ca02c",
    order=30,
    needs_episodes=True,
    needs_rollout_states=True,
    local_groups=True,
    settings=ReSTSettings,
    fixed={"beta": 0.0},
    fidelity="deviation: lite variant of ReST-MCTS* (one branch point per rollout, online value "
    "head, no MCTS search)",
)
def rest_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    services, states = batch.services, batch.states
    settings: ReSTSettings = config.method_settings
    r_out = batch.rewards.float().cpu()
    local_rows = batch.completion_mask.shape[0]
    rng = random.Random(config.seed * 7919 + services.step)
    step_ends = [states.positions[states.rows == row].tolist() for row in range(local_rows)]
    branch_rows, branch_points, prefix_ends = [], [], []
    for row, ends in enumerate(step_ends):
        if len(ends) > 1:
            point = rng.randrange(1, len(ends))
            (
                branch_rows.append(row),
                branch_points.append(point),
                prefix_ends.append(ends[point - 1]),
            )
    branch_results = branch_outcomes(services, branch_rows, prefix_ends, settings.branches)
    branches = {
        row: (point, results)
        for row, point, results in zip(branch_rows, branch_points, branch_results)
    }
    targets = torch.zeros(len(states.rows))
    for row, ends in enumerate(step_ends):
        point, results = branches.get(row, (0, []))
        correct = bool(torch.nan_to_num(r_out[row]) > 0.5)
        values = rest_value_targets(*label_rollout_steps(len(ends), correct, point, results))
        targets[(states.rows == row).cpu()] = torch.tensor(values)
    if "value_head" not in services.state:  # learned online: one head for the whole run
        services.state["value_head"] = ValueHead(settings.value_lr, services.reduce_mean)
    head = services.state["value_head"]
    predicted, value_loss = head.fit(states.u, targets)  # [E]
    min_value = torch.full((local_rows,), float("inf")).scatter_reduce(
        0, states.rows.cpu(), predicted.cpu(), "amin"
    )
    selected = rest_selection(r_out, min_value, batch.group_size, settings.min_value)
    metrics = advantage_metrics(selected)
    metrics.update(
        {
            "rest/selected_frac": selected.mean().item(),
            "rest/value_target_mean": targets.mean().item() if targets.numel() else 0.0,
            "rest/branches": len(branch_rows) * settings.branches,
            "rest/value_loss": value_loss,
        }
    )
    return selected.to(batch.completion_mask.device), metrics


def branch_outcomes(
    services, rows: list[int], prefix_ends: list[int], num: int
) -> list[list[tuple[bool, int]]]:
    """``num`` continuations of each completion prefix, each as (verified correct, number of
    steps it adds) (``services``: ``gc2po.training.services.RolloutServices``)."""
    continuations, outcome = services.continue_prefixes(
        rows, prefix_ends, [], num, services.max_completion_length
    )
    decode = services.tokenizer.decode
    steps = [len(segment_episodes(decode(c, skip_special_tokens=True))) for c in continuations]
    results = [(bool(o > 0.5), n) for o, n in zip(outcome.tolist(), steps)]
    return [results[i * num : (i + 1) * num] for i in range(len(rows))]
