"""ReST-MCTS*-lite (Zhang et al. 2024, arXiv 2406.03816; BASELINES 7).

Per prompt: the K group rollouts are split into steps (the <episode_i> tags); at one seeded
random step boundary of every rollout, ``rest_branches`` continuations are sampled, giving a
shallow tree. Every step of the rollouts is labelled with the paper's value target (s_k, m_k
from the verified leaves), a value head (a linear layer on the final-norm state at the step's
last token, owned by the trainer, trained by MSE) learns them, and the policy is trained by
behaviour cloning of verified-correct rollouts whose minimum predicted step value is at least
``rest_min_value`` (or the best correct rollout of the prompt): advantage 1{selected} in TRL's
clipped loss, which at the sampling policy is the NLL gradient.

Deviations, disclosed: no MCTS search (one branching point per rollout), the value head is
trained online next to the policy instead of in separate self-training rounds and is not part
of the checkpoint, KL beta = 0 (pure behaviour cloning).
"""

from __future__ import annotations

import random

import torch

from gc2po.core.step_baselines import label_rollout_steps, rest_selection, rest_value_targets
from gc2po.methods.base import RolloutBatch, advantage_metrics, register_method


@register_method(
    "rest_mcts",
    "ReST-MCTS*-lite: shallow branching, value targets, value head, filtered behaviour cloning",
    display_name="ReST-MCTS*",
    colour="#2ca02c",
    order=30,
    needs_episodes=True,
    needs_rollout_states=True,
    local_groups=True,
    fixed={"beta": 0.0},
    fidelity="deviation: lite variant of BASELINES 7 (one branch point per rollout, online value "
    "head, no MCTS search)",
)
def rest_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    services, states = batch.services, batch.states
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
    branch_results = services.branch_outcomes(branch_rows, prefix_ends, config.rest_branches)
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
    predicted = services.fit_value_head(states.u, targets)  # [E]
    min_value = torch.full((local_rows,), float("inf")).scatter_reduce(
        0, states.rows.cpu(), predicted.cpu(), "amin"
    )
    selected = rest_selection(r_out, min_value, batch.group_size, config.rest_min_value)
    metrics = advantage_metrics(selected)
    metrics.update(
        {
            "rest/selected_frac": selected.mean().item(),
            "rest/value_target_mean": targets.mean().item() if targets.numel() else 0.0,
            "rest/branches": len(branch_rows) * config.rest_branches,
        }
    )
    return selected.to(batch.completion_mask.device), metrics
