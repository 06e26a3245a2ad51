"""The corrected GC2PO (additive form) and its ablations: a departure from the paper
(``gc2po.core.corrected``; docs/method.md says why). Its per-episode signal is the run's
``cf_signal`` (default R_cf): ``{method: gc2po_add, trainer: {cf_signal: sibling_agreement}}``
pairs it with another signal in one config line; ``gc2po_add_oracle``, ``gc2po_add_answer``,
``gc2po_add_agree`` and ``gc2po_add_operand`` are presets of it. Each step logs
``advantages/floor_binds``, the share of the batch's groups whose signal std the floor replaces.

Chosen over the multiplicative GRPO-scaled form (A_t = A^ S'_l / s_k): that form gives every
token its trajectory's sign, so inside a failed trajectory it pushes hardest on the episodes
with the highest R_cf (the credit the paper wants to give them is inverted), and its ratio
S'_l / s_k = R_cf_l / mean R_cf on a wrong trajectory has no bound. The additive form lets an
episode's sign differ from its trajectory's (the paper's stated intent) with |A - A_GRPO| <=
lambda_cf * z_clip.

The std floor (``cf_std_floor``) stays at 0.1, chosen on the train split (the base model, 300
problems x 8 completions, R_cf at ``result``; ``benchmarks/method/std_floor.py``,
docs/measurements.md):
R_cf's within-problem correlation with episode validity given f is +0.14 there, so whatever the
floor, about 2% (rho^2) of the bonus's variance tracks validity. With a floor of 0.001 (never
binding) the bonus is a full z-score and carries 42% of the token advantage variance, 0.86% of it
tracking validity; at 0.1 (binding in every group: R_cf's median group std is 0.044, of which
Monte-Carlo noise of the perturbations 0.028) it carries 16%, 0.34% tracking validity. The larger
floor keeps the unrelated part of the bonus small while the signal is this weak;
``config/testbed_study.yaml`` trains 0.001 beside it to show what the full z-score does. A signal
with real spread meets the floor only where it is constant in a group (the oracle's validity:
11.7% of groups, at every floor from 0.001 to 0.1).
"""

from __future__ import annotations

import torch

from gc2po.core.corrected import additive_token_advantages, floor_binding_share
from gc2po.methods.base import RolloutBatch, advantage_metrics, register_method
from gc2po.methods.gc2po import register_ablations

FIDELITY = (
    "departure from the paper: additive GRPO + lambda_cf * group z-score of R_cf per episode, "
    "no surprise weights, R_cf read at the token before a step's result (cf_state 'result', "
    "never EOS)"
)
# The state chosen on the testbed's train split by the quantity training uses: the within-problem
# correlation of R_cf with episode validity given f (what a within-group z-score sees; base model,
# 300 problems x 8, benchmarks/method/std_floor.py): result +0.143 [+0.113, +0.173], episode_end
# +0.066, last_content +0.019, closing_tag +0.000. (An earlier choice, last_content, rested on a
# correlation pooled over problems, which compares problems rather than a group's episodes.)
KIND = dict(needs_episodes=True, needs_cf=True, fidelity=FIDELITY, cf_state="result")


@register_method(
    "gc2po_add",
    "GC2PO (corrected, additive): GRPO's advantage + lambda_cf * z(R_cf) per episode",
    display_name="GC2PO (corrected, additive)",
    colour="#393b79",
    order=90,
    role="corrected",
    sweeps=("lambda_exp", "lambda_cf", "cf_std_floor"),
    # its signal is the run's cf_signal (default R_cf): a pairing is a config line (docs/method.md)
    signal_from_config=True,
    **KIND,
)
def gc2po_add_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """Token-level advantages of ``gc2po.core.corrected.additive_token_advantages``."""
    result = additive_token_advantages(
        batch.rewards,
        batch.episode_ids,
        batch.r_cf,
        batch.completion_mask,
        group_size=batch.group_size,
        lambda_cf=config.lambda_cf,
        cf_std_floor=config.cf_std_floor,
        cf_z_clip=config.cf_z_clip,
        row_index=batch.row_index,
        gather=batch.gather,
    )
    adv, mask = result.token_advantages, batch.completion_mask.bool()
    metrics = advantage_metrics(adv, mask)
    metrics["advantages/sequence_std"] = (
        result.sequence_advantages.float().std(unbiased=False).item()
    )
    # share of episode tokens whose sign differs from their trajectory's outcome advantage
    outcome = result.outcome_advantages.float().unsqueeze(-1).expand_as(adv)
    flipped = (adv * outcome < 0) & mask
    metrics["advantages/sign_flip_frac"] = flipped.float().sum().item() / max(1, int(mask.sum()))
    # share of this batch's groups (with an episode) whose signal std the floor replaces
    in_group = torch.isfinite(batch.rewards) & (mask & (batch.episode_ids >= 0)).any(-1)
    metrics["advantages/floor_binds"] = floor_binding_share(
        result.signal_std, in_group, batch.row_index, batch.group_size, config.cf_std_floor
    ).item()
    return adv, metrics


# w/o R_cf is GRPO exactly (tests/training/test_trainer.py checks it)
register_ablations(
    "gc2po_add", "GC2PO (corrected)", colours=["#98df8a", "#c5b0d5", "#c49c94"], orders=[91, 92, 93]
)
