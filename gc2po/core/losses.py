"""GRPO-style clipped surrogate with token-level advantages (paper eq. J_GC2PO).

    J = 1/K sum_k 1/T_k sum_t [ min(rho A, clip(rho, 1-eps, 1+eps_high) A) - beta * D_k3 ]
    D_k3 = pi_ref/pi - log(pi_ref/pi) - 1          (k3 estimator, >= 0)

The loss returned is -J.
"""

from __future__ import annotations

import torch


def k3_kl(logps: torch.Tensor, ref_logps: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimator of KL(pi || pi_ref): exp(d) - d - 1 with d = ref - logp. [B,T]."""
    delta = ref_logps - logps
    return torch.exp(delta) - delta - 1


def clipped_token_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_eps: float,
    ref_logps: torch.Tensor | None = None,
    beta_kl: float = 0.0,
    clip_eps_high: float | None = None,
    kl_ratio_weighted: bool = False,
) -> torch.Tensor:
    """Negative clipped objective, length-normalised per sequence then averaged over sequences.

    Args:
        logps, old_logps, mask: [B, T] current / sampling-policy log-probs of the sampled tokens.
        advantages: [B, T] token advantages (a [B] or [B, 1] tensor is broadcast over tokens).
        clip_eps: lower clip radius (and upper one unless ``clip_eps_high`` is given).
        ref_logps: [B, T] reference-policy log-probs, required when ``beta_kl > 0``.
        kl_ratio_weighted: weight each token's k3 term by its ratio pi/pi_old (TRL's
            ``use_bias_correction_kl``, on by default in TRL 1.16); off: the paper's plain term.
            On-policy (pi_old = pi, detached) the values agree; the gradients differ by
            beta * D_k3 * grad log pi per token.
    Returns:
        scalar loss; sequences with no valid token contribute 0 and still count in the mean.
    """
    if logps.ndim != 2:
        raise ValueError(f"logps must have shape [B, T], got {list(logps.shape)}")
    for name, tensor in (("old_logps", old_logps), ("mask", mask)):
        if tensor.shape != logps.shape:
            raise ValueError(
                f"{name} must have shape {list(logps.shape)} (as logps), got {list(tensor.shape)}"
            )
    if advantages.ndim == 1:
        advantages = advantages.unsqueeze(-1)
    if (
        advantages.ndim != 2
        or advantages.shape[0] != logps.shape[0]
        or advantages.shape[1] not in (1, logps.shape[1])
    ):
        raise ValueError(
            f"advantages must have shape [B, T], [B, 1] or [B] with B={logps.shape[0]}, got "
            f"{list(advantages.shape)}"
        )
    if not clip_eps > 0:
        raise ValueError(f"clip_eps must be > 0, got {clip_eps!r}")
    if clip_eps_high is not None and not clip_eps_high > 0:
        raise ValueError(f"clip_eps_high must be > 0, got {clip_eps_high!r}")
    if beta_kl < 0:
        raise ValueError(f"beta_kl must be >= 0, got {beta_kl!r}")
    if beta_kl > 0 and ref_logps is None:
        raise ValueError("ref_logps is required when beta_kl > 0")
    if ref_logps is not None and ref_logps.shape != logps.shape:
        raise ValueError(
            f"ref_logps must have shape {list(logps.shape)} (as logps), got {list(ref_logps.shape)}"
        )

    maskf = mask.to(logps.dtype)
    high = clip_eps if clip_eps_high is None else clip_eps_high
    ratio = torch.exp(logps - old_logps)
    surrogate = torch.min(ratio * advantages, ratio.clamp(1 - clip_eps, 1 + high) * advantages)
    per_token = -surrogate
    if beta_kl > 0:
        kl = k3_kl(logps, ref_logps)
        per_token = per_token + beta_kl * (kl * ratio if kl_ratio_weighted else kl)
    per_token = torch.where(mask.bool(), per_token, torch.zeros_like(per_token))
    per_sequence = (per_token * maskf).sum(-1) / maskf.sum(-1).clamp(min=1)
    return per_sequence.mean()
