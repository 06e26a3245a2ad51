"""GRPO on f x sibling agreement (beyond the paper): the gated form (``grpo_gated``) with the
policy-only signal ``sibling_agreement`` fixed (``gc2po_add_agree`` is its additive form). The
reward of a completion is its outcome times the mean, over its episodes, of each episode's
agreement with its siblings' same step (``gc2po.core.gated.gated_reward``, a share used as it
is); GRPO's advantage of that reward. The same as
``{method: grpo_gated, trainer: {cf_signal: sibling_agreement}}``, under the name earlier configs
and results use.

It is the positive control's form (``grpo_fxp``: f x p, p from the oracle's validity) with the
oracle replaced by a signal from the policy's own samples: no oracle, no extra model pass. It
inherits the signal's weakness: where most of a group copies the bet, a copy agrees with its
siblings and keeps its reward."""

from __future__ import annotations

import gc2po.methods.grpo_gated  # noqa: F401  (registers the form first)
from gc2po.methods.base import register_preset

register_preset(
    "grpo_gated",
    "grpo_gated_agree",
    "GRPO on f x sibling agreement: outcome times the mean agreement of the completion's "
    "episodes with their siblings' (beyond the paper)",
    fixed={"cf_signal": "sibling_agreement"},
    display_name="GRPO on f x sibling agreement (gated; beyond the paper)",
    colour="#b5cf6b",
    order=98,
    fidelity="beyond the paper: GRPO on the outcome times the mean sibling agreement of the "
    "completion's episodes (the gated control's form, no oracle)",
    # as registered before the generic form existed (neither reads R_cf or the oracle)
    trajectory_signal=False,
    nonnegative_rewards=False,
    cf_state="episode_end",
)
