"""GC2PO and its ablations (paper section 4, SPEC 2-3)."""

from __future__ import annotations

import torch

from gc2po.core.advantages import gc2po_token_advantages
from gc2po.methods.base import RolloutBatch, advantage_metrics, register_method, register_variant

FIDELITY = "as in the paper (SPEC 2 fills its gaps)"
# r / r~ shares A^ among tokens only for scores >= 0: the paper's R_out is in {0, 1}
KIND = dict(needs_episodes=True, needs_cf=True, nonnegative_rewards=True, fidelity=FIDELITY)


@register_method(
    "gc2po", "GC2PO: episodic causal counterfactual reward + outcome, token-level advantages",
    display_name="GC2PO (paper)", colour="#d62728", order=80, **KIND,
)
def gc2po_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """Token-level advantages of ``gc2po.core.advantages.gc2po_token_advantages``."""
    result = gc2po_token_advantages(
        batch.rewards, batch.episode_ids, batch.r_cf, batch.old_logps, batch.completion_mask,
        group_size=batch.group_size, lambda_cf=config.lambda_cf, trunc_frac=config.trunc_frac,
        adv_clip=config.adv_clip, episode_weight_norm=config.episode_weight_norm,
        row_index=batch.row_index, gather=batch.gather,
    )
    adv, mask = result.token_advantages, batch.completion_mask.bool()
    scores = result.trajectory_scores[torch.isfinite(result.trajectory_scores)]
    metrics = advantage_metrics(adv, mask)
    metrics["advantages/sequence_std"] = result.sequence_advantages.float().std(unbiased=False).item()
    metrics["advantages/clipped_frac"] = (adv[mask].abs() >= config.adv_clip).float().mean().item() if mask.any() else 0.0
    metrics["rewards/trajectory_score/mean"] = scores.float().mean().item() if scores.numel() else 0.0
    return adv, metrics


# its ablations, in the tables' order after it
register_variant("gc2po", "gc2po_no_sexp", "GC2PO w/o S_exp (lambda_exp = 0)",
                 fixed={"lambda_exp": 0.0}, display_name="GC2PO (paper) w/o S_exp",
                 colour="#bcbd22", order=81)
register_variant("gc2po", "gc2po_no_ssta", "GC2PO w/o S_sta (R_cf = lambda_exp S_exp)",
                 fixed={"lambda_sta": 0.0}, display_name="GC2PO (paper) w/o S_sta",
                 colour="#aec7e8", order=82)
register_variant("gc2po", "gc2po_no_rcf",
                 "GC2PO w/o R_cf (lambda_cf = 0): outcome reward on episodes only",
                 fixed={"lambda_cf": 0.0}, display_name="GC2PO (paper) w/o R_cf",
                 colour="#ffbb78", order=83)
