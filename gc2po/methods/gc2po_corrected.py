"""The corrected GC2PO (additive form) and its ablations: a departure from the paper
(``gc2po.core.corrected``; ``../shared/RESEARCH.md`` sections 1 and 3).

Chosen over the multiplicative GRPO-scaled form (A_t = A^ S'_l / s_k): that form gives every
token its trajectory's sign, so inside a failed trajectory it pushes hardest on the episodes
with the highest R_cf (the credit the paper wants to give them is inverted), and its ratio
S'_l / s_k = R_cf_l / mean R_cf on a wrong trajectory has no bound. The additive form lets an
episode's sign differ from its trajectory's (the paper's stated intent) with |A - A_GRPO| <=
lambda_cf * z_clip.

The std floor (``cf_std_floor``) stays at 0.1, chosen on the train split (the base model, 300
problems x 8 completions, ``benchmarks/std_floor.py``, docs/benchmarks.md): R_cf's spread within
a group is Monte-Carlo noise of its perturbations, not a property of the states (median group
std 0.0150, noise std 0.0145; two independent draws correlate +0.18 within a group), and its
within-problem correlation with episode validity given f is +0.02 [-0.01, +0.05] at
``last_content``. A floor below that spread (0.001) makes the bonus a full z-score of that noise:
47% of the token advantage variance, of which about 0.02% tracks validity; at 0.1 the floor binds
in 99.7% of groups and the bonus carries 4.5%. The floor therefore keeps the corrected form close
to GRPO on this testbed, by design, because its signal is noise here
(``config/testbed_control.yaml`` trains 0.001 beside it to show what the full z-score does). A
signal with real spread meets the floor only where it is constant in a group (the oracle's
validity: 11.7% of groups, at every floor from 0.001 to 0.1).
"""

from __future__ import annotations

import torch

from gc2po.core.corrected import additive_token_advantages
from gc2po.methods.base import RolloutBatch, advantage_metrics, register_method
from gc2po.methods.gc2po import register_ablations

FIDELITY = (
    "departure from the paper: additive GRPO + lambda_cf * group z-score of R_cf per episode, "
    "no surprise weights, R_cf read at the last content token of an episode (cf_state "
    "'last_content', never EOS)"
)
# the state with the tightest positive cor(R_cf, p | f) on the testbed's train split that never
# reads EOS (benchmarks/state_choice.py, docs/results.md "Choosing cf_state")
KIND = dict(needs_episodes=True, needs_cf=True, fidelity=FIDELITY, cf_state="last_content")


@register_method(
    "gc2po_add",
    "GC2PO (corrected, additive): GRPO's advantage + lambda_cf * z(R_cf) per episode",
    display_name="GC2PO (corrected, additive)",
    colour="#393b79",
    order=90,
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
    return adv, metrics


# w/o R_cf is GRPO exactly (tests/training/test_trainer.py checks it)
register_ablations(
    "gc2po_add", "GC2PO (corrected)", colours=["#98df8a", "#c5b0d5", "#c49c94"], orders=[91, 92, 93]
)
