"""The corrected GC2PO with R_cf replaced by each episode's operand sensitivity (beyond the
paper): the fall in the log-probability of the episode's written result when the operand it
uses is changed, in the episode and in the prompt (``gc2po.core.signals_policy``). The paper's
causal question asked of the inputs: a derived result follows its operand, a copied bet does
not. One extra no-grad forward pass per episode with an equation and one per completion, at
generation.

A preset of the additive form, the same as
``{method: gc2po_add, trainer: {cf_signal: operand_sensitivity}}``, under the name
earlier configs and results use."""

from __future__ import annotations

import gc2po.methods.gc2po_corrected  # noqa: F401  (registers the form first)
from gc2po.methods.base import register_preset

register_preset(
    "gc2po_add",
    "gc2po_add_operand",
    "GC2PO (corrected) on each episode's operand sensitivity instead of R_cf (beyond the paper)",
    fixed={"cf_signal": "operand_sensitivity"},
    display_name="GC2PO (corrected, operand sensitivity; beyond the paper)",
    colour="#5254a3",
    order=97,
    fidelity="beyond the paper: the corrected GC2PO with the fall of an episode's written "
    "result's log-probability when its operand is changed as its signal",
)
