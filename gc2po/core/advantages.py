"""GC2PO's token-level advantages in the paper's form (paper section 4.3); the
corrected form is ``gc2po.core.corrected``, the group normalisation both share
``gc2po.core.groups``.

``gc2po_token_advantages`` is what training calls: R_cf per episode -> trajectory scores ->
group normalisation (across processes through ``gather``) -> token distribution.
``token_advantages`` (one group on a single process) is the public name for the same
computation.

A non-finite outcome reward marks a completion that no reward function scored (TRL's
convention): it is left out of its group's statistics and gets advantage 0. No NaN or inf
leaves these functions for any input.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from gc2po.core.groups import Gather, check_episode_inputs, check_shape, group_normalised

EPISODE_WEIGHT_NORMS = ("sum", "mean")


# -- GC2PO ----------------------------------------------------------------------------------------
def truncated_mean(values: torch.Tensor, mask: torch.Tensor, trunc_frac: float) -> torch.Tensor:
    """Mean over masked entries of each row after dropping ``floor(trunc_frac * n)`` of the
    smallest and of the largest values.  values, mask: [..., T] -> [...]. Rows with no valid
    entry give 0; if trimming would leave nothing the plain mean is used."""
    mask = mask.bool()
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
        w_{k,t}  = w~_{k,t} / sum_{t' in E_{k,l(t)}} w~_{k,t'},  w~ = -log pi_old
                   (uniform if the sum is 0)
        r_{k,t}  = S_{k,l(t)} w_{k,t};   r~_k = TruncMean_t r_{k,t}

    Shapes: r_out [B], episode_ids [B,T] (-1 = no episode), r_cf [B,Lmax], old_logps [B,T],
    mask [B,T] (bool or 0/1 numbers) -> (token rewards [B,T], zero where masked; trajectory
    scores [B]), both float64. A non-finite R_out gives token rewards 0 and score NaN (the marker
    of an unscored trajectory). L_k counts the episodes that own at least one token.
    ``episode_weight_norm="mean"`` makes weights average 1 inside an episode instead of summing
    to 1 (removes the incentive to emit many short episodes). Nothing here mixes
    trajectories, so it runs per process.
    """
    batch, length = check_episode_inputs(r_out, episode_ids, r_cf, mask)
    check_shape("old_logps", old_logps, (batch, length))

    # float64 inside: trajectories whose scores are equal in exact arithmetic must stay equal
    # (float32 rounding would otherwise be amplified by the 1e-4 std epsilon of A^)
    scored = torch.isfinite(r_out)
    mask = mask.bool() & (episode_ids >= 0) & scored.unsqueeze(-1)
    maskf = mask.double()
    ep = episode_ids.long().clamp(min=0)
    r_cf = torch.nan_to_num(r_cf.double(), nan=0.0, posinf=0.0, neginf=0.0)
    r_out = torch.where(scored, r_out.double(), torch.zeros_like(r_out, dtype=torch.float64))

    # tokens and surprise per episode: [B, Lmax]
    tokens_per_ep = torch.zeros_like(r_cf).scatter_add_(-1, ep, maskf)
    surprise = torch.nan_to_num((-old_logps.double()).clamp(min=0), nan=0.0, posinf=0.0)
    surprise = torch.where(mask, surprise, torch.zeros_like(maskf))
    surprise_per_ep = torch.zeros_like(r_cf).scatter_add_(-1, ep, surprise)
    num_episodes = (tokens_per_ep > 0).sum(-1).clamp(min=1)  # L_k

    ep_surprise = surprise_per_ep.gather(-1, ep)
    ep_tokens = tokens_per_ep.gather(-1, ep).clamp(min=1)
    has_surprise = ep_surprise > 0
    safe_total = torch.where(has_surprise, ep_surprise, torch.ones_like(ep_surprise))
    weight = torch.where(has_surprise, surprise / safe_total, 1.0 / ep_tokens)
    if episode_weight_norm == "mean":
        weight = weight * ep_tokens
    score = r_out.unsqueeze(-1) / num_episodes.unsqueeze(-1) + lambda_cf * r_cf  # S [B, Lmax]
    token_reward = torch.where(mask, score.gather(-1, ep) * weight, torch.zeros_like(maskf))
    traj_score = truncated_mean(token_reward, mask, trunc_frac)
    return token_reward, torch.where(scored, traj_score, torch.full_like(traj_score, torch.nan))


def distribute_advantage(
    seq_adv: torch.Tensor,
    token_reward: torch.Tensor,
    traj_score: torch.Tensor,
    mask: torch.Tensor,
    *,
    adv_clip: float,
    eps: float = 1e-8,
) -> torch.Tensor:
    """A_{k,t} = clamp(A^_k r_{k,t} / r~_k, -adv_clip, adv_clip), 0 where masked or where the
    trajectory is unscored; |r~_k| is raised to at least eps, keeping its sign (the sign of the
    token rewards' sum where r~_k is 0), so a negative score (from a negative R_out, which the
    paper's {0, 1} rewards never give) cannot flip the sign of A^_k on its tokens.
    seq_adv [B], token_reward [B,T], traj_score [B], mask [B,T] -> [B,T] float32."""
    scored = torch.isfinite(traj_score)
    direction = torch.where(traj_score != 0, traj_score, token_reward.sum(-1))
    magnitude = traj_score.abs().clamp(min=eps)
    safe_score = torch.where(direction < 0, -magnitude, magnitude)
    safe_score = torch.where(scored, safe_score, torch.ones_like(traj_score))
    ratio = token_reward / safe_score.unsqueeze(-1)
    adv = (seq_adv.unsqueeze(-1) * ratio).clamp(-adv_clip, adv_clip)
    keep = mask.bool() & scored.unsqueeze(-1) & torch.isfinite(adv)
    return torch.where(keep, adv, torch.zeros_like(adv)).float()


class GC2POAdvantages(NamedTuple):
    token_advantages: torch.Tensor  # [B, T] float32, 0 where masked
    trajectory_scores: torch.Tensor  # [B] r~ (float64; NaN = unscored)
    sequence_advantages: torch.Tensor  # [B] A^ (float64)


def gc2po_token_advantages(
    r_out: torch.Tensor,
    episode_ids: torch.Tensor,
    r_cf: torch.Tensor,
    old_logps: torch.Tensor,
    mask: torch.Tensor,
    *,
    group_size: int,
    lambda_cf: float,
    trunc_frac: float,
    adv_clip: float,
    episode_weight_norm: str = "sum",
    row_index: torch.Tensor | None = None,
    gather: Gather | None = None,
) -> GC2POAdvantages:
    """GC2PO's token advantages, the entry point training calls (paper section 4.3).

        r, r~    = trajectory_token_rewards(...)                 (per process)
        A^_k     = (r~_k - mean_k r~) / (std_k r~ + 1e-4)         (over the whole group)
        A_{k,t}  = clamp(A^_k r_{k,t} / r~_k, -adv_clip, adv_clip)       (|r~_k| >= eps, sign kept)

    Shapes: r_out [B], episode_ids [B,T], r_cf [B,Lmax] (lambda_sta S_sta + lambda_exp S_exp per
    episode), old_logps [B,T], mask [B,T] -> GC2POAdvantages. ``row_index`` [B] places this
    process's rows in the generation batch (default: 0..B-1, one process, groups consecutive);
    ``gather`` all-gathers across processes so a group split over them is normalised whole.
    """
    mask = mask.bool()
    token_reward, traj_score = trajectory_token_rewards(
        r_out,
        episode_ids,
        r_cf,
        old_logps,
        mask,
        lambda_cf=lambda_cf,
        trunc_frac=trunc_frac,
        episode_weight_norm=episode_weight_norm,
    )
    if row_index is None:
        row_index = torch.arange(traj_score.numel(), device=traj_score.device)
    seq_adv = group_normalised(traj_score, row_index, group_size, gather=gather)
    adv = distribute_advantage(
        seq_adv, token_reward, traj_score, mask & (episode_ids >= 0), adv_clip=adv_clip
    )
    return GC2POAdvantages(adv, traj_score, seq_adv)


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
    old_logps [K,T], mask [K,T] -> [K,T] (0 where masked). See :func:`gc2po_token_advantages`."""
    if episode_ids.ndim != 2:
        raise ValueError(f"episode_ids must have shape [K, T], got {list(episode_ids.shape)}")
    if r_cf.ndim != 2:
        raise ValueError(f"r_cf must have shape [K, Lmax], got {list(r_cf.shape)}")
    result = gc2po_token_advantages(
        r_out,
        episode_ids,
        r_cf,
        old_logps,
        mask,
        group_size=episode_ids.shape[0],
        lambda_cf=lambda_cf,
        trunc_frac=trunc_frac,
        adv_clip=adv_clip,
        episode_weight_norm=episode_weight_norm,
    )
    return result.token_advantages
