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

from gc2po.core.advantages import label_rollout_steps, rest_value_targets
from gc2po.episodes import episode_end_positions
from gc2po.methods.base import Method, RolloutBatch


def rest_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    services = batch.services
    rows, slots, ends, _ = episode_end_positions(batch.episode_ids)
    r_out = batch.rewards_all[batch.local].float().cpu()
    local_rows = batch.completion_mask.shape[0]
    rng = random.Random(config.seed * 7919 + services.state.global_step)
    branch_rows, branch_points, prefix_ends = [], [], []
    step_ends = []
    for row in range(local_rows):
        row_ends = ends[rows == row].tolist()
        step_ends.append(row_ends)
        point = rng.randrange(1, len(row_ends)) if len(row_ends) > 1 else 0
        if point:
            branch_rows.append(row), branch_points.append(point), prefix_ends.append(row_ends[point - 1])
    branch_results = services.branch_outcomes(branch_rows, prefix_ends, config.rest_branches) if branch_rows else []
    branches = {row: (point, results) for row, point, results in zip(branch_rows, branch_points, branch_results)}
    state_rows, state_positions, targets = [], [], []
    for row in range(local_rows):
        point, results = branches.get(row, (0, []))
        signs, min_steps = label_rollout_steps(len(step_ends[row]), bool(r_out[row] > 0.5), point, results)
        for position, value in zip(step_ends[row], rest_value_targets(signs, min_steps)):
            state_rows.append(row), state_positions.append(position), targets.append(value)
    predicted = services.fit_value_head(state_rows, state_positions, torch.tensor(targets))
    min_value = torch.full((local_rows,), float("inf"))
    for row, value in zip(state_rows, predicted.tolist()):
        min_value[row] = min(min_value[row].item(), value)
    selected = torch.zeros(local_rows)
    for start in range(0, local_rows, batch.group_size):
        group = range(start, min(start + batch.group_size, local_rows))
        correct = [r for r in group if r_out[r] > 0.5]
        chosen = [r for r in correct if min_value[r] >= config.rest_min_value]
        if not chosen and correct:
            chosen = [max(correct, key=lambda r: min_value[r].item())]
        selected[chosen] = 1.0
    return selected.to(batch.completion_mask.device), {
        "advantages/mean": selected.mean().item(), "rest/selected_frac": selected.mean().item(),
        "rest/value_target_mean": sum(targets) / max(1, len(targets)),
        "rest/branches": len(branch_rows) * config.rest_branches,
    }


REST_MCTS = Method(
    "rest_mcts", "ReST-MCTS*-lite: shallow branching, value targets, value head, filtered behaviour cloning",
    loss_type="grpo", advantages=rest_advantages, needs_episodes=True, needs_cf=False, needs_states=True,
    fixed={"beta": 0.0},
    fidelity="deviation: lite variant of BASELINES 7 (one branch point per rollout, online value head, no MCTS search)",
)
