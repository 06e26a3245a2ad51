"""Math of the baselines that value the steps (episodes) of a completion from extra rollouts at
its episode boundaries (pure torch): MRT's progress rewards (Qu et al. 2025, arXiv 2503.07572) and
ReST-MCTS*'s value targets and rollout selection (Zhang et al. 2024, arXiv 2406.03816). Their entry
points for ``gc2po.methods`` are ``mrt_token_advantages`` and ``rest_selection``; the other
baselines are ``gc2po.core.baselines``.
"""

from __future__ import annotations

import torch

from gc2po.core.groups import STD_EPS


# -- MRT (Qu et al. 2025) --------------------------------------------------------------------------
def progress_rewards(
    success: torch.Tensor, num_boundaries: torch.Tensor, r_out: torch.Tensor, alpha: float
) -> torch.Tensor:
    """MRT's dense progress rewards: for boundaries j = 0..L-1 with forced-answer success
    J_0..J_{L-1} (J_0 before any episode) and J_L := R_out,

        r_j = alpha * (J_j - J_{j-1})  for j = 1..L   (at the last token of episode j)

    success [B, S] (S >= max L; column j = J_j, j < L), num_boundaries [B] = L, r_out [B]
    -> rewards [B, S] (zero past L). They telescope: sum_j r_j = alpha * (R_out - J_0).
    """
    batch, slots = success.shape
    j = torch.arange(slots, device=success.device).expand(batch, slots)
    levels = torch.where(
        j < num_boundaries.unsqueeze(-1), success, r_out.unsqueeze(-1).to(success.dtype)
    )
    levels = torch.cat(
        [levels, r_out.unsqueeze(-1).to(success.dtype)], dim=-1
    )  # J_0..J_S with J_L.. = R_out
    steps = alpha * (levels[:, 1:] - levels[:, :-1])
    return torch.where(j < num_boundaries.unsqueeze(-1), steps, torch.zeros_like(steps))


def reward_to_go_advantages(
    step_rewards: torch.Tensor,
    step_ends: torch.Tensor,
    step_mask: torch.Tensor,
    token_mask: torch.Tensor,
    eps: float = STD_EPS,
) -> torch.Tensor:
    """GRPO process supervision (DeepSeekMath's) for one group of K completions: step rewards are
    normalised over all valid steps of the group, and A_{i,t} = sum of the normalised rewards
    of the steps of o_i that end at or after t.

    step_rewards, step_ends (token index of each step's last token), step_mask [K, S];
    token_mask [K, T] -> advantages [K, T] (0 where masked)."""
    valid = step_rewards[step_mask]
    if valid.numel() == 0:
        return torch.zeros_like(token_mask, dtype=torch.float32)
    normalised = (step_rewards - valid.mean()) / (valid.std(unbiased=False) + eps)
    normalised = torch.where(step_mask, normalised, torch.zeros_like(normalised))
    t = torch.arange(token_mask.shape[1], device=token_mask.device)
    counts = (step_ends.unsqueeze(1) >= t.view(1, -1, 1)) & step_mask.unsqueeze(1)  # [K, T, S]
    adv = (counts.to(normalised.dtype) * normalised.unsqueeze(1)).sum(-1)
    return torch.where(token_mask.bool(), adv, torch.zeros_like(adv)).float()


def mrt_token_advantages(
    success: torch.Tensor,
    num_episodes: torch.Tensor,
    step_ends: torch.Tensor,
    r_out: torch.Tensor,
    token_mask: torch.Tensor,
    *,
    group_size: int,
    alpha: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """MRT's token advantages for whole groups on one process: progress rewards at each
    episode's last token, the outcome reward added at the last episode, then GRPO's process-
    supervision reward-to-go per group.

    success [B,S] (forced-answer success J_j at boundary j), num_episodes [B], step_ends [B,S]
    (token index of episode j's last token, -1 = none), r_out [B] (non-finite = unscored: no
    steps), token_mask [B,T] -> (advantages [B,T], step rewards [B,S]).
    """
    batch = r_out.shape[0]
    if batch % group_size:
        raise ValueError(f"mrt needs whole groups on each process ({batch} rows, K={group_size})")
    scored = torch.isfinite(r_out)
    outcome = torch.where(scored, r_out, torch.zeros_like(r_out))
    steps = progress_rewards(success, num_episodes, outcome, alpha)
    last = (num_episodes - 1).clamp(min=0)
    steps[torch.arange(batch), last] += outcome * (num_episodes > 0)
    step_mask = (step_ends >= 0) & scored.unsqueeze(-1)
    adv = torch.zeros(token_mask.shape, dtype=torch.float32, device=token_mask.device)
    for start in range(0, batch, group_size):
        g = slice(start, start + group_size)
        adv[g] = reward_to_go_advantages(steps[g], step_ends[g], step_mask[g], token_mask[g])
    return adv, steps


# -- ReST-MCTS* (Zhang et al. 2024) --------------------------------------------------------------
def rest_value_targets(signs: list[int], min_steps: list[int]) -> list[float]:
    """ReST-MCTS* value targets of the steps of one path (its paper's eqs. 1-2):
    v_0 = 0; v_k = max(0, v_{k-1} + (1 - v_{k-1}) * s_k / (m_k + 1)), s_k = +1 on a path to a
    verified-correct leaf else -1, m_k = minimal remaining steps to a correct leaf.
    A correct chain of 3 steps gets 1/3, 2/3, 1."""
    if len(signs) != len(min_steps):
        raise ValueError(f"signs and min_steps differ in length: {len(signs)} vs {len(min_steps)}")
    values, v = [], 0.0
    for s, m in zip(signs, min_steps):
        v = max(0.0, v + (1.0 - v) * s / (m + 1))
        values.append(v)
    return values


def label_rollout_steps(
    num_steps: int, correct: bool, branch_step: int, branches: list[tuple[bool, int]]
) -> tuple[list[int], list[int]]:
    """(s_k, m_k) for the steps k = 1..num_steps of a rollout with branches after step
    ``branch_step`` (each branch: (verified correct, its number of steps)).

    A step is on a path to a correct leaf if the rollout is correct, or if it lies at or before
    the branch point and a branch is correct; m_k is the fewest remaining steps to such a leaf.
    Dead steps inherit m from their nearest live ancestor (or count their own remaining steps)."""
    best_branch = min((n for ok, n in branches if ok), default=None)
    signs, min_steps, inherited = [], [], None
    for k in range(1, num_steps + 1):
        candidates = []
        if correct:
            candidates.append(num_steps - k)
        if best_branch is not None and k <= branch_step:
            candidates.append(branch_step - k + best_branch)
        if candidates:
            inherited = min(candidates)
            signs.append(1)
            min_steps.append(inherited)
        else:
            signs.append(-1)
            min_steps.append(inherited if inherited is not None else num_steps - k)
    return signs, min_steps


def rest_selection(
    r_out: torch.Tensor, min_value: torch.Tensor, group_size: int, threshold: float
) -> torch.Tensor:
    """Rollouts cloned by ReST-MCTS*-lite: verified correct with minimum predicted step value
    >= ``threshold``, else the best correct rollout of the prompt. r_out [B] (> 0.5 = correct),
    min_value [B] -> 1{selected} [B] (whole groups on one process)."""
    if r_out.shape[0] % group_size:
        raise ValueError(
            f"rest_mcts needs whole groups on each process ({r_out.shape[0]} rows, K={group_size})"
        )
    correct = (torch.nan_to_num(r_out) > 0.5).view(-1, group_size)
    values = min_value.view(-1, group_size)
    chosen = correct & (values >= threshold)
    best = torch.where(correct, values, torch.full_like(values, -torch.inf)).argmax(-1)
    fallback = torch.zeros_like(chosen).scatter_(-1, best.unsqueeze(-1), True) & correct
    chosen = torch.where(chosen.any(-1, keepdim=True), chosen, fallback)
    return chosen.reshape(-1).float()
