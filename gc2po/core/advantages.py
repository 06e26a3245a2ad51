"""Advantage estimators (paper section 4.3, SPEC 2.5, BASELINES 1-2).

``token_advantages`` is GC2PO's token-level advantage for one group of K completions;
``grouped_token_advantages`` is the same vectorised over G groups. ``ADVANTAGE_ESTIMATORS``
holds the sequence-level estimators of the baselines.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

EPISODE_WEIGHT_NORMS = ("sum", "mean")
STD_EPS = 1e-4  # the paper's denominator epsilon: (r - mean) / (std + 1e-4)


def _check(name: str, tensor: torch.Tensor, shape: tuple[int, ...]) -> None:
    if tuple(tensor.shape) != shape:
        raise ValueError(f"{name} must have shape {list(shape)}, got {list(tensor.shape)}")


def truncated_mean(values: torch.Tensor, mask: torch.Tensor, trunc_frac: float) -> torch.Tensor:
    """Mean over masked entries of each row after dropping ``floor(trunc_frac * n)`` of the
    smallest and of the largest values.  values, mask: [..., T] -> [...]. Rows with no valid
    entry give 0; if trimming would leave nothing the plain mean is used."""
    n = mask.sum(-1)
    drop = torch.floor(trunc_frac * n.to(values.dtype)).long()
    drop = torch.where(n - 2 * drop > 0, drop, torch.zeros_like(drop))
    ordered = torch.where(mask, values, torch.full_like(values, torch.inf)).sort(dim=-1).values
    rank = torch.arange(values.shape[-1], device=values.device)
    keep = (rank >= drop.unsqueeze(-1)) & (rank < (n - drop).unsqueeze(-1))
    total = torch.where(keep, ordered, torch.zeros_like(ordered)).sum(-1)
    return total / keep.sum(-1).clamp(min=1)


def trajectory_token_rewards(
    r_out: torch.Tensor,
    episode_ids: torch.Tensor,
    r_cf: torch.Tensor,
    old_logps: torch.Tensor,
    mask: torch.Tensor,
    *,
    lambda_cf: float,
    trunc_frac: float,
    episode_weight_norm: str = "sum",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token rewards r_{k,t} and trajectory scores r~_k: the per-trajectory half of GC2PO.

        S_{k,l}  = R_out_k / L_k + lambda_cf * R_cf_{k,l}
        w_{k,t}  = w~_{k,t} / sum_{t' in E_{k,l(t)}} w~_{k,t'},  w~ = -log pi_old  (uniform if the sum is 0)
        r_{k,t}  = S_{k,l(t)} w_{k,t};   r~_k = TruncMean_t r_{k,t}

    Shapes: r_out [B], episode_ids [B,T] (-1 = no episode), r_cf [B,Lmax], old_logps [B,T],
    mask [B,T] -> (token rewards [B,T], zero where masked; trajectory scores [B]), both float64.
    L_k counts the episodes that own at least one token. ``episode_weight_norm="mean"`` makes
    weights average 1 inside an episode instead of summing to 1 (removes the incentive to emit
    many short episodes, SPEC 2.5). Nothing here mixes trajectories, so it runs per process.
    """
    if episode_weight_norm not in EPISODE_WEIGHT_NORMS:
        raise ValueError(
            f"episode_weight_norm must be one of {list(EPISODE_WEIGHT_NORMS)}, got {episode_weight_norm!r}"
        )
    if not 0 <= trunc_frac < 0.5:
        raise ValueError(f"trunc_frac must be in [0, 0.5), got {trunc_frac!r}")
    if not lambda_cf >= 0:
        raise ValueError(f"lambda_cf must be >= 0, got {lambda_cf!r}")
    if episode_ids.ndim != 2:
        raise ValueError(f"episode_ids must have shape [B, T], got {list(episode_ids.shape)}")
    batch, length = episode_ids.shape
    _check("r_out", r_out, (batch,))
    _check("old_logps", old_logps, (batch, length))
    _check("mask", mask, (batch, length))
    if r_cf.ndim != 2 or r_cf.shape[0] != batch or r_cf.shape[1] < 1:
        raise ValueError(f"r_cf must have shape [{batch}, Lmax>=1], got {list(r_cf.shape)}")
    if episode_ids.numel() and int(episode_ids.max()) >= r_cf.shape[1]:
        raise ValueError(f"episode_ids hold an index >= Lmax={r_cf.shape[1]} (the width of r_cf)")

    # float64 inside: trajectories whose scores are equal in exact arithmetic must stay equal
    # (float32 rounding would otherwise be amplified by the 1e-4 std epsilon of A^)
    mask = mask.bool() & (episode_ids >= 0)
    maskf = mask.double()
    ep = episode_ids.clamp(min=0)
    r_cf = torch.nan_to_num(r_cf.double(), nan=0.0, posinf=0.0, neginf=0.0)

    # tokens and surprise per episode: [B, Lmax]
    tokens_per_ep = torch.zeros_like(r_cf).scatter_add_(-1, ep, maskf)
    surprise = torch.where(mask, (-old_logps.double()).clamp(min=0), torch.zeros_like(maskf))
    surprise = torch.nan_to_num(surprise, nan=0.0, posinf=0.0)
    surprise_per_ep = torch.zeros_like(r_cf).scatter_add_(-1, ep, surprise)
    num_episodes = (tokens_per_ep > 0).sum(-1).clamp(min=1)  # L_k

    ep_surprise = surprise_per_ep.gather(-1, ep)
    ep_tokens = tokens_per_ep.gather(-1, ep).clamp(min=1)
    has_surprise = ep_surprise > 0
    safe_total = torch.where(has_surprise, ep_surprise, torch.ones_like(ep_surprise))
    weight = torch.where(has_surprise, surprise / safe_total, 1.0 / ep_tokens)
    if episode_weight_norm == "mean":
        weight = weight * ep_tokens
    score = r_out.double().unsqueeze(-1) / num_episodes.unsqueeze(-1) + lambda_cf * r_cf  # S [B, Lmax]
    token_reward = torch.where(mask, score.gather(-1, ep) * weight, torch.zeros_like(maskf))
    return token_reward, truncated_mean(token_reward, mask, trunc_frac)


def distribute_advantage(
    seq_adv: torch.Tensor, token_reward: torch.Tensor, traj_score: torch.Tensor, mask: torch.Tensor,
    *, adv_clip: float, eps: float = 1e-8,
) -> torch.Tensor:
    """A_{k,t} = clamp(A^_k r_{k,t} / max(r~_k, eps), -adv_clip, adv_clip), 0 where masked.
    seq_adv [B], token_reward [B,T], traj_score [B], mask [B,T] -> [B,T] float32."""
    if not adv_clip > 0:
        raise ValueError(f"adv_clip must be > 0, got {adv_clip!r}")
    ratio = token_reward / traj_score.clamp(min=eps).unsqueeze(-1)
    adv = (seq_adv.unsqueeze(-1) * ratio).clamp(-adv_clip, adv_clip)
    return torch.where(mask.bool(), adv, torch.zeros_like(adv)).float()


def grouped_token_advantages(
    r_out: torch.Tensor,
    episode_ids: torch.Tensor,
    r_cf: torch.Tensor,
    old_logps: torch.Tensor,
    mask: torch.Tensor,
    *,
    lambda_cf: float,
    trunc_frac: float,
    adv_clip: float,
    episode_weight_norm: str = "sum",
) -> torch.Tensor:
    """GC2PO token advantages for G groups of K completions (paper section 4.3).

        r, r~    = trajectory_token_rewards(...)
        A^_k     = (r~_k - mean_k r~) / (std_k r~ + 1e-4)           (population std)
        A_{k,t}  = clamp(A^_k r_{k,t} / max(r~_k, eps), -adv_clip, adv_clip)

    Shapes: r_out [G,K], episode_ids [G,K,T], r_cf [G,K,Lmax], old_logps [G,K,T],
    mask [G,K,T] -> advantages [G,K,T] (0 where masked).
    """
    if not adv_clip > 0:
        raise ValueError(f"adv_clip must be > 0, got {adv_clip!r}")
    if episode_ids.ndim != 3:
        raise ValueError(f"episode_ids must have shape [G, K, T], got {list(episode_ids.shape)}")
    num_groups, group_size, length = episode_ids.shape
    _check("r_out", r_out, (num_groups, group_size))

    def flat(x):
        return x.reshape(num_groups * group_size, *x.shape[2:])

    if r_cf.ndim != 3 or r_cf.shape[:2] != (num_groups, group_size):
        raise ValueError(f"r_cf must have shape [{num_groups}, {group_size}, Lmax], got {list(r_cf.shape)}")
    for name, tensor in (("old_logps", old_logps), ("mask", mask)):
        _check(name, tensor, (num_groups, group_size, length))
    token_reward, traj_score = trajectory_token_rewards(
        flat(r_out), flat(episode_ids), flat(r_cf), flat(old_logps), flat(mask),
        lambda_cf=lambda_cf, trunc_frac=trunc_frac, episode_weight_norm=episode_weight_norm,
    )
    seq_adv = grpo_advantage(traj_score.view(num_groups, group_size)).reshape(-1)
    adv = distribute_advantage(seq_adv, token_reward, traj_score, flat(mask) & (flat(episode_ids) >= 0), adv_clip=adv_clip)
    return adv.view(num_groups, group_size, length)


def token_advantages(
    r_out: torch.Tensor,
    episode_ids: torch.Tensor,
    r_cf: torch.Tensor,
    old_logps: torch.Tensor,
    mask: torch.Tensor,
    *,
    lambda_cf: float,
    trunc_frac: float,
    adv_clip: float,
    episode_weight_norm: str = "sum",
) -> torch.Tensor:
    """GC2PO token advantages for one group: r_out [K], episode_ids [K,T], r_cf [K,Lmax],
    old_logps [K,T], mask [K,T] -> [K,T]. See :func:`grouped_token_advantages`."""
    if episode_ids.ndim != 2:
        raise ValueError(f"episode_ids must have shape [K, T], got {list(episode_ids.shape)}")
    if r_cf.ndim != 2:
        raise ValueError(f"r_cf must have shape [K, Lmax], got {list(r_cf.shape)}")
    return grouped_token_advantages(
        r_out.unsqueeze(0), episode_ids.unsqueeze(0), r_cf.unsqueeze(0), old_logps.unsqueeze(0),
        mask.unsqueeze(0), lambda_cf=lambda_cf, trunc_frac=trunc_frac, adv_clip=adv_clip,
        episode_weight_norm=episode_weight_norm,
    ).squeeze(0)


# Sequence-level estimators of the baselines: rewards [G, K] -> advantages [G, K].
def grpo_advantage(rewards: torch.Tensor, eps: float = STD_EPS) -> torch.Tensor:
    """GRPO outcome supervision: (r - mean_group r) / (std_group r + eps), population std."""
    mean = rewards.mean(-1, keepdim=True)
    return (rewards - mean) / (rewards.std(-1, unbiased=False, keepdim=True) + eps)


def dr_grpo_advantage(rewards: torch.Tensor) -> torch.Tensor:
    """Dr. GRPO: r - mean_group r (no std scaling)."""
    return rewards - rewards.mean(-1, keepdim=True)


ADVANTAGE_ESTIMATORS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "grpo": grpo_advantage,
    "dr_grpo": dr_grpo_advantage,
}


def progress_rewards(success: torch.Tensor, num_boundaries: torch.Tensor, r_out: torch.Tensor, alpha: float) -> torch.Tensor:
    """MRT's dense rewards (BASELINES 5): for boundaries j = 0..L-1 with forced-answer success
    J_0..J_{L-1} (J_0 before any episode) and J_L := R_out,

        r_j = alpha * (J_j - J_{j-1})  for j = 1..L   (at the last token of episode j)

    success [B, S] (S >= max L; column j = J_j, j < L), num_boundaries [B] = L, r_out [B]
    -> rewards [B, S] (zero past L). They telescope: sum_j r_j = alpha * (R_out - J_0).
    """
    batch, slots = success.shape
    j = torch.arange(slots, device=success.device).expand(batch, slots)
    levels = torch.where(j < num_boundaries.unsqueeze(-1), success, r_out.unsqueeze(-1).to(success.dtype))
    levels = torch.cat([levels, r_out.unsqueeze(-1).to(success.dtype)], dim=-1)  # J_0..J_S with J_L.. = R_out
    steps = alpha * (levels[:, 1:] - levels[:, :-1])
    return torch.where(j < num_boundaries.unsqueeze(-1), steps, torch.zeros_like(steps))


def reward_to_go_advantages(step_rewards: torch.Tensor, step_ends: torch.Tensor, step_mask: torch.Tensor,
                            token_mask: torch.Tensor, eps: float = STD_EPS) -> torch.Tensor:
    """GRPO process supervision (BASELINES 1) for one group of K completions: step rewards are
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


def gcpo_upsilon(z: torch.Tensor, z_context: torch.Tensor, z_context_alt: torch.Tensor, alpha: float) -> torch.Tensor:
    """GCPO's causal weight (BASELINES 4) for one group: z, z_context, z_context_alt [K, d] ->
    Upsilon [K] = alpha * cos(z_i, Zbar_i - Zbar'_i + zbar), zbar = mean_i z_i."""
    direction = z_context - z_context_alt + z.mean(0, keepdim=True)
    return alpha * torch.nn.functional.cosine_similarity(z.float(), direction.float(), dim=-1, eps=1e-8)


def gcpo_reference_logps(context_logps: torch.Tensor, context_alt_logps: torch.Tensor, plain_logps: torch.Tensor,
                         min_prob: float = 1e-6) -> torch.Tensor:
    """log pi'_ref = log clamp(pi(y|x_i) - Phi + pi(y|q), min_prob, 1) with Phi = pi(y|x_i with the
    alternative integrated output); the clamp keeps k3 defined (pi'_ref is not a probability)."""
    prob = context_logps.exp() - context_alt_logps.exp() + plain_logps.exp()
    return prob.clamp(min_prob, 1.0).log()


def rest_value_targets(signs: list[int], min_steps: list[int]) -> list[float]:
    """ReST-MCTS* value targets of the steps of one path (BASELINES 7, paper eqs. 1-2):
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


def label_rollout_steps(num_steps: int, correct: bool, branch_step: int,
                        branches: list[tuple[bool, int]]) -> tuple[list[int], list[int]]:
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
