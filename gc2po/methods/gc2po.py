"""GC2PO and its ablations (paper section 4)."""

from __future__ import annotations

import torch

from gc2po.core.advantages import gc2po_token_advantages
from gc2po.methods.base import RolloutBatch, advantage_metrics, register_method, register_variant

FIDELITY = "as in the paper (the project chose what it leaves open)"
# r / r~ shares A^ among tokens only for scores >= 0: the paper's R_out is in {0, 1}
KIND = dict(needs_episodes=True, needs_cf=True, nonnegative_rewards=True, fidelity=FIDELITY)


@register_method(
    "gc2po",
    "GC2PO: episodic causal counterfactual reward + outcome, token-level advantages",
    display_name="GC2PO (paper)",
    colour="#d62728",
    order=80,
    role="paper",
    sweeps=("lambda_exp", "lambda_cf"),
    **KIND,
)
def gc2po_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """Token-level advantages of ``gc2po.core.advantages.gc2po_token_advantages``."""
    result = gc2po_token_advantages(
        batch.rewards,
        batch.episode_ids,
        batch.r_cf,
        batch.old_logps,
        batch.completion_mask,
        group_size=batch.group_size,
        lambda_cf=config.lambda_cf,
        trunc_frac=config.trunc_frac,
        adv_clip=config.adv_clip,
        episode_weight_norm=config.episode_weight_norm,
        row_index=batch.row_index,
        gather=batch.gather,
    )
    adv, mask = result.token_advantages, batch.completion_mask.bool()
    scores = result.trajectory_scores[torch.isfinite(result.trajectory_scores)]
    metrics = advantage_metrics(adv, mask)
    metrics["advantages/sequence_std"] = (
        result.sequence_advantages.float().std(unbiased=False).item()
    )
    metrics["advantages/clipped_frac"] = (
        (adv[mask].abs() >= config.adv_clip).float().mean().item() if mask.any() else 0.0
    )
    metrics["rewards/trajectory_score/mean"] = (
        scores.float().mean().item() if scores.numel() else 0.0
    )
    return adv, metrics


# The paper's ablations, for either form: name suffix, the term of R_cf or S dropped, the setting
# that drops it
ABLATIONS = [
    ("no_sexp", "S_exp", {"lambda_exp": 0.0}),
    ("no_ssta", "S_sta", {"lambda_sta": 0.0}),
    ("no_rcf", "R_cf", {"lambda_cf": 0.0}),
]


def register_ablations(form: str, display_name: str, colours: list[str], orders: list[int]) -> None:
    """Register ``<form>_no_sexp``, ``<form>_no_ssta`` and ``<form>_no_rcf`` (method ``form``
    with one term switched off), in that order, each with its colour and place in tables."""
    for (suffix, term, fixed), colour, order in zip(ABLATIONS, colours, orders, strict=True):
        setting = ", ".join(f"{key} = {value:g}" for key, value in fixed.items())
        register_variant(
            form,
            f"{form}_{suffix}",
            f"{display_name} w/o {term} ({setting})",
            fixed=fixed,
            display_name=f"{display_name} w/o {term}",
            colour=colour,
            order=order,
        )


# w/o R_cf: with the paper's formula a wrong trajectory gets r = 0, so no token advantage
register_ablations(
    "gc2po", "GC2PO (paper)", colours=["#bcbd22", "#aec7e8", "#ffbb78"], orders=[81, 82, 83]
)
