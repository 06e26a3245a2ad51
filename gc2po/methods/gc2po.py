"""GC2PO and its ablations (paper section 4, SPEC 2-3)."""

from __future__ import annotations

import torch

from gc2po.core.advantages import distribute_advantage, grpo_advantage, trajectory_token_rewards
from gc2po.methods.base import Method, RolloutBatch, group_view


def gc2po_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """Token-level advantages from R_out and R_cf = lambda_sta S_sta + lambda_exp S_exp.

    Trajectory scores r~ are gathered across processes before group normalisation, so a
    group split over processes is normalised as a whole.
    """
    r_cf = config.lambda_sta * batch.s_sta + config.lambda_exp * batch.s_exp
    mask = batch.completion_mask.bool()
    token_reward, traj_score = trajectory_token_rewards(
        batch.rewards_all[batch.local], batch.episode_ids, r_cf, batch.old_logps, mask,
        lambda_cf=config.lambda_cf, trunc_frac=config.trunc_frac, episode_weight_norm=config.episode_weight_norm,
    )
    all_scores = batch.gather(traj_score)
    seq_adv = grpo_advantage(group_view(all_scores, batch.group_size)).reshape(-1)[batch.local]
    adv = distribute_advantage(seq_adv, token_reward, traj_score, mask & (batch.episode_ids >= 0), adv_clip=config.adv_clip)
    valid = adv[mask]
    metrics = {
        "advantages/mean": valid.mean().item() if valid.numel() else 0.0,
        "advantages/std": valid.std(unbiased=False).item() if valid.numel() else 0.0,
        "advantages/abs_max": valid.abs().max().item() if valid.numel() else 0.0,
        "advantages/sequence_std": seq_adv.std(unbiased=False).item(),
        "advantages/clipped_frac": (valid.abs() >= config.adv_clip).float().mean().item() if valid.numel() else 0.0,
        "rewards/trajectory_score/mean": traj_score.mean().item(),
    }
    return adv, metrics


def _gc2po(name, summary, fixed=None, fidelity="as in the paper (SPEC 2 fills its gaps)"):
    return Method(name, summary, loss_type="grpo", advantages=gc2po_advantages, needs_episodes=True,
                  fixed=fixed or {}, fidelity=fidelity)


GC2PO = _gc2po("gc2po", "GC2PO: episodic causal counterfactual reward + outcome, token-level advantages")
GC2PO_NO_SEXP = _gc2po("gc2po_no_sexp", "GC2PO w/o S_exp (lambda_exp = 0)", {"lambda_exp": 0.0})
GC2PO_NO_SSTA = _gc2po("gc2po_no_ssta", "GC2PO w/o S_sta (R_cf = lambda_exp S_exp)", {"lambda_sta": 0.0})
GC2PO_NO_RCF = _gc2po("gc2po_no_rcf", "GC2PO w/o R_cf (lambda_cf = 0): outcome reward on episodes only", {"lambda_cf": 0.0})
