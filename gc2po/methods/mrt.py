"""MRT (Qu et al. 2025, arXiv 2503.07572; BASELINES 5), the online dense-reward form.

At each episode boundary of a completion (episodes from the same <episode_i> tags GC2PO uses,
at most ``mrt_max_episodes``), the meta-prover is the same policy forced to answer: the prefix
plus ``mrt_force_text`` is continued ``mrt_num_stops`` times and J_j is the mean outcome reward
of those answers (J_0: before any episode; the last level is the real outcome). Episode j earns
alpha * (J_j - J_{j-1}) at its last token and the outcome reward is added at the last token;
token advantages are GRPO's process-supervision reward-to-go within the group.

Deviations, disclosed: this is "our construction" of BASELINES 5 (ii), close to the authors'
later MRT-online; the meta-prover is sampled at the training temperature; one forced-answer
prompt for every task (configurable).
"""

from __future__ import annotations

import torch

from gc2po.core.positions import episode_end_positions
from gc2po.core.step_baselines import mrt_token_advantages
from gc2po.methods.base import RolloutBatch, advantage_metrics, register_method


def boundaries(
    episode_ids: torch.Tensor,
) -> tuple[list[int], list[int], list[int], torch.Tensor, torch.Tensor]:
    """Episode boundaries of each row: before episode 1 (empty prefix, -1) and after episodes
    1..L-1. episode_ids [B,T] -> (rows, slots, prefix ends, num_episodes [B], step ends [B,S])."""
    rows, slots, ends, num_slots = episode_end_positions(episode_ids)
    batch = episode_ids.shape[0]
    step_ends = torch.full((batch, num_slots), -1, dtype=torch.long)
    step_ends[rows.cpu(), slots.cpu()] = ends.cpu()
    num_episodes = (step_ends >= 0).sum(-1)
    boundary_rows, boundary_slots, prefix_ends = [], [], []
    for row in range(batch):
        for slot in range(int(num_episodes[row])):
            boundary_rows.append(row), boundary_slots.append(slot)
            prefix_ends.append(-1 if slot == 0 else int(step_ends[row, slot - 1]))
    return boundary_rows, boundary_slots, prefix_ends, num_episodes, step_ends


@register_method(
    "mrt",
    "MRT: dense progress rewards from forced answers at episode boundaries, "
    "reward-to-go advantages",
    display_name="MRT",
    colour="#17becf",
    order=70,
    needs_episodes=True,
    local_groups=True,
    max_episodes_field="mrt_max_episodes",
    fidelity="deviation: online dense-reward construction (BASELINES 5 ii); groups must be local "
    "to a process",
)
def mrt_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    rows, slots, prefix_ends, num_episodes, step_ends = boundaries(batch.episode_ids)
    success_flat = batch.services.forced_answer_success(rows, prefix_ends, config.mrt_num_stops)
    success = torch.zeros(step_ends.shape)
    success[torch.tensor(rows, dtype=torch.long), torch.tensor(slots, dtype=torch.long)] = (
        success_flat.float().cpu()
    )
    r_out = batch.rewards.float().cpu()
    adv, steps = mrt_token_advantages(
        success,
        num_episodes,
        step_ends,
        r_out,
        batch.completion_mask.bool().cpu(),
        group_size=batch.group_size,
        alpha=config.mrt_alpha,
    )
    metrics = advantage_metrics(adv, batch.completion_mask.cpu())
    scored = torch.isfinite(r_out)
    metrics.update(
        {
            "mrt/j0_mean": success[:, 0].mean().item(),
            "mrt/progress_mean": (steps.sum(-1) - torch.nan_to_num(r_out))[scored].mean().item()
            if scored.any()
            else 0.0,
            "mrt/forced_answers": len(rows) * config.mrt_num_stops,
        }
    )
    return adv.to(batch.completion_mask.device), metrics
