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

from gc2po.core.advantages import progress_rewards, reward_to_go_advantages
from gc2po.episodes import episode_end_positions
from gc2po.methods.base import Method, RolloutBatch


def mrt_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    services = batch.services
    local_rows = batch.episode_ids.shape[0]
    rows, slots, ends, num_slots = episode_end_positions(batch.episode_ids)
    r_out = batch.rewards_all[batch.local].float()
    num_episodes = torch.zeros(local_rows, dtype=torch.long).index_add_(0, rows.cpu(), torch.ones_like(rows.cpu()))
    # boundaries before episode 1 (empty prefix) and after episodes 1..L-1
    boundary_rows, boundary_slots, prefix_ends = [], [], []
    for row in range(local_rows):
        boundary_rows.append(row), boundary_slots.append(0), prefix_ends.append(-1)
        for slot in range(1, int(num_episodes[row])):
            end = ends[(rows == row) & (slots == slot - 1)]
            boundary_rows.append(row), boundary_slots.append(slot), prefix_ends.append(int(end))
    success_flat = services.forced_answer_success(boundary_rows, prefix_ends, config.mrt_num_stops)
    success = torch.zeros(local_rows, max(1, num_slots))
    success[torch.tensor(boundary_rows), torch.tensor(boundary_slots)] = success_flat.float().cpu()
    steps = progress_rewards(success, num_episodes, r_out.cpu(), config.mrt_alpha)  # [B, S]
    step_ends = torch.full((local_rows, max(1, num_slots)), -1, dtype=torch.long)
    step_ends[rows.cpu(), slots.cpu()] = ends.cpu()
    step_mask = step_ends >= 0
    # the outcome reward is added at the last token (the end of the last episode)
    last_slot = (num_episodes - 1).clamp(min=0)
    steps[torch.arange(local_rows), last_slot] += r_out.cpu() * (num_episodes > 0)
    adv = torch.zeros(batch.episode_ids.shape, dtype=torch.float32)
    token_mask = batch.completion_mask.bool().cpu()
    for start in range(0, local_rows, batch.group_size):
        g = slice(start, start + batch.group_size)
        adv[g] = reward_to_go_advantages(steps[g], step_ends[g], step_mask[g], token_mask[g])
    valid = adv[token_mask]
    return adv.to(batch.completion_mask.device), {
        "advantages/mean": valid.mean().item() if valid.numel() else 0.0,
        "advantages/std": valid.std(unbiased=False).item() if valid.numel() else 0.0,
        "mrt/j0_mean": success[:, 0].mean().item(),
        "mrt/progress_mean": (steps.sum(-1) - r_out.cpu()).mean().item(),
        "mrt/forced_answers": len(boundary_rows) * config.mrt_num_stops,
    }


MRT = Method(
    "mrt", "MRT: dense progress rewards from forced answers at episode boundaries, reward-to-go advantages",
    loss_type="grpo", advantages=mrt_advantages, needs_episodes=True, needs_cf=False,
    max_episodes_field="mrt_max_episodes",
    fidelity="deviation: online dense-reward construction (BASELINES 5 ii); groups must be local to a process",
)
