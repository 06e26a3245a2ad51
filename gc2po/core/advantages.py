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
