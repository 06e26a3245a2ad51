"""Math of the baselines only (each as its paper defines it), kept apart from GC2PO's (pure torch).

Length penalty (Arora & Zanette 2025), GVPO (Zhang et al. 2025) and GCPO (Gu et al. 2025) are
here; MRT's progress rewards (Qu et al. 2025) and ReST-MCTS*'s value targets (Zhang et al. 2024),
which value a completion's steps from extra rollouts, are ``gc2po.core.step_baselines``. Each
method whose advantage is more than one line has one entry point that ``gc2po.methods`` calls:
``length_penalty_advantages``, ``gcpo_advantages``, ``mrt_token_advantages``,
``rest_selection``; GVPO's is its loss, ``gvpo_on_policy_loss`` (``gvpo_loss`` is the group form
it is tested against).
"""

from __future__ import annotations

import torch

from gc2po.core.groups import grpo_advantage


# -- length penalty (Arora & Zanette 2025) ---------------------------------------------------------
def length_penalty_rewards(
    correct: torch.Tensor, lengths: torch.Tensor, alpha: float
) -> torch.Tensor:
    """r = 1{correct} * (1 - alpha * sigmoid((len - MEAN) / (STD + 1e-7))), MEAN/STD over the
    correct samples of the same prompt (population std); incorrect -> 0, unscored (non-finite)
    -> NaN. correct [G,K] (outcome rewards, > 0.5 = correct), lengths [G,K] -> [G,K]."""
    if correct.shape != lengths.shape or correct.ndim != 2:
        raise ValueError(
            f"correct and lengths must both have shape [G, K], got {list(correct.shape)} and "
            f"{list(lengths.shape)}"
        )
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    scored = torch.isfinite(correct)
    is_correct = scored & (torch.nan_to_num(correct) > 0.5)
    lengths = lengths.float()
    count = is_correct.sum(-1, keepdim=True).clamp(min=1)
    mean = torch.where(is_correct, lengths, 0.0).sum(-1, keepdim=True) / count
    var = torch.where(is_correct, (lengths - mean) ** 2, 0.0).sum(-1, keepdim=True) / count
    penalty = alpha * torch.sigmoid((lengths - mean) / (var.sqrt() + 1e-7))
    shaped = torch.where(is_correct, 1.0 - penalty, torch.zeros_like(lengths))
    return torch.where(scored, shaped, torch.full_like(shaped, torch.nan))


def length_penalty_advantages(
    correct: torch.Tensor, lengths: torch.Tensor, alpha: float
) -> torch.Tensor:
    """The length-penalised rewards under GRPO's estimator: [G,K], [G,K] -> [G,K]."""
    return grpo_advantage(length_penalty_rewards(correct, lengths, alpha))


# -- GVPO (Zhang et al. 2025) ----------------------------------------------------------------------
def gvpo_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    mask: torch.Tensor,
    group_ids: torch.Tensor,
    centered_rewards: torch.Tensor,
    *,
    beta: float,
    scored: torch.Tensor | None = None,
) -> torch.Tensor:
    """GVPO (Zhang et al. 2025, arXiv 2504.19599): per group,

        R_theta(y_i) = beta * sum_t [log pi_theta(y_i,t) - log pi_old(y_i,t)]   (sequence sum)
        L_g = 1/(K-1) * sum_i 1/2 [(R_i - mean_j R_j) - (r_i - mean_j r_j)]^2

    averaged over the groups of the call. No clip, no ratio, no KL. Every group must be complete
    in the call (``group_ids`` [B] says which rows belong together; rows may come in any order).
    Shapes: logps, old_logps, mask [B, T]; group_ids [B] (long); centered_rewards [B] = r - mean r
    over the scored rows; ``scored`` [B] (default all) leaves unscored rows out of the loss: a
    group is then its n scored rows (1/(n-1) in place of 1/(K-1)), and one with n < 2 gives 0.
    """
    if beta <= 0:
        raise ValueError(f"gvpo beta must be > 0, got {beta!r}")
    all_groups, all_counts = torch.unique(group_ids, return_counts=True)
    if (all_counts < 2).any():
        raise ValueError(
            "gvpo_loss: every group needs >= 2 completions in the same loss computation"
        )
    if scored is not None:
        keep = scored.bool()
        if not keep.any():
            return logps.sum() * 0.0  # nothing scored: a zero loss that still has a graph
        logps, old_logps, mask = logps[keep], old_logps[keep], mask[keep]
        group_ids, centered_rewards = group_ids[keep], centered_rewards[keep]
    maskf = mask.to(logps.dtype)
    reward_model = beta * ((logps - old_logps) * maskf).sum(-1)  # [B]
    groups, inverse, counts = torch.unique(group_ids, return_inverse=True, return_counts=True)
    group_sum = torch.zeros(len(groups), dtype=reward_model.dtype, device=logps.device).index_add(
        0, inverse, reward_model
    )
    centered_model = reward_model - (group_sum / counts)[inverse]
    per_sample = (
        0.5
        * (centered_model - centered_rewards.to(logps.dtype)) ** 2
        / (counts[inverse] - 1).clamp(min=1)
    )
    per_group = torch.zeros(len(groups), dtype=logps.dtype, device=logps.device).index_add(
        0, inverse, per_sample
    )
    return per_group.sum() / len(all_groups)  # groups with no scored row count, as zeros


def group_scored_counts(rewards: torch.Tensor) -> torch.Tensor:
    """n, the number of scored (finite) rewards of each row's group: [G, K] -> [G, K] float."""
    counts = torch.isfinite(rewards).sum(-1, keepdim=True).to(torch.float32)
    return counts.expand(rewards.shape)


def gvpo_on_policy_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    mask: torch.Tensor,
    centered_rewards: torch.Tensor,
    scored_counts: torch.Tensor,
    *,
    beta: float,
    group_size: int,
) -> torch.Tensor:
    """GVPO's loss on on-policy samples, one term per completion, so a group need not be whole in
    a micro-batch or on a process:

        l_i = -beta K/(n-1) * c_i * sum_t (log pi_theta - log pi_old)_{i,t},
        c_i = r_i - mean_group r

    averaged over the rows, n = the scored rows of the row's group (0 for a group with n < 2). At
    theta = theta_old every implicit reward R_i is 0, so the residual of :func:`gvpo_loss` is
    d_i = -c_i, and since sum_i d_i = 0 the group mean of grad R drops out: the gradient equals
    that of ``gvpo_loss(scored=...)`` (averaged over groups) and the value is 0.
    logps, old_logps, mask [B, T]; centered_rewards [B] (0 for an unscored row); scored_counts [B]
    (``group_scored_counts`` of the row's group) -> scalar.
    """
    if beta <= 0:
        raise ValueError(f"gvpo beta must be > 0, got {beta!r}")
    if group_size < 2:
        raise ValueError(f"gvpo needs groups of >= 2 completions, got {group_size}")
    implicit = ((logps - old_logps) * mask.to(logps.dtype)).sum(-1)  # R_i / beta
    counts = scored_counts.to(logps.dtype)
    weight = torch.where(
        counts >= 2, -beta * group_size / (counts - 1).clamp(min=1), torch.zeros_like(counts)
    )
    return (weight * centered_rewards.to(logps.dtype) * implicit).mean()


# -- GCPO (Gu et al. 2025) -------------------------------------------------------------------------
def gcpo_upsilon(
    z: torch.Tensor, z_context: torch.Tensor, z_context_alt: torch.Tensor, alpha: float
) -> torch.Tensor:
    """GCPO's causal weight (Gu et al.) for one group: z, z_context, z_context_alt [K, d] ->
    Upsilon [K] = alpha * cos(z_i, Zbar_i - Zbar'_i + zbar), zbar = mean_i z_i."""
    direction = z_context - z_context_alt + z.mean(0, keepdim=True)
    return alpha * torch.nn.functional.cosine_similarity(
        z.float(), direction.float(), dim=-1, eps=1e-8
    )


def gcpo_reference_logps(
    context_logps: torch.Tensor,
    context_alt_logps: torch.Tensor,
    plain_logps: torch.Tensor,
    min_prob: float = 1e-6,
) -> torch.Tensor:
    """log pi'_ref = log clamp(pi(y|x_i) - Phi + pi(y|q), min_prob, 1) with Phi = pi(y|x_i with the
    alternative integrated output); the clamp keeps k3 defined (pi'_ref is not a probability)."""
    prob = context_logps.exp() - context_alt_logps.exp() + plain_logps.exp()
    return prob.clamp(min_prob, 1.0).log()


def gcpo_advantages(
    rewards: torch.Tensor,
    z: torch.Tensor,
    z_context: torch.Tensor,
    z_context_alt: torch.Tensor,
    alpha: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """B_i = A_i * Upsilon_i for one group:
    rewards [K], states [K, d] -> (advantages [K], Upsilon [K])."""
    upsilon = gcpo_upsilon(z, z_context, z_context_alt, alpha)
    return grpo_advantage(rewards.unsqueeze(0)).squeeze(0) * upsilon.to(rewards.dtype), upsilon
