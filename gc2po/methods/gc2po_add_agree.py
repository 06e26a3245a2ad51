"""The corrected GC2PO with R_cf replaced by each episode's sibling agreement (beyond the paper):
the share of the group's other completions whose episode at the same step index writes the same
equation (``gc2po.core.signals_policy.sibling_agreement``). No oracle and no extra model pass;
it rewards what the policy does most often, so it helps only where most samples derive a step
the same way (a policy that mostly copies a bet rewards the copy).

A preset of the additive form, the same as
``{method: gc2po_add, trainer: {cf_signal: sibling_agreement}}``, under the name
earlier configs and results use."""

from __future__ import annotations

import gc2po.methods.gc2po_corrected  # noqa: F401  (registers the form first)
from gc2po.methods.base import register_preset

register_preset(
    "gc2po_add",
    "gc2po_add_agree",
    "GC2PO (corrected) on each episode's agreement with its siblings' same step instead of "
    "R_cf (beyond the paper)",
    fixed={"cf_signal": "sibling_agreement"},
    display_name="GC2PO (corrected, sibling agreement; beyond the paper)",
    colour="#9c9ede",
    order=96,
    fidelity="beyond the paper: the corrected GC2PO with the share of sibling completions "
    "whose same step writes the same equation as its signal (no oracle, no extra pass)",
)
