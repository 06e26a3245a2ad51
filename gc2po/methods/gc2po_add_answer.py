"""The corrected GC2PO with R_cf replaced by the answer dependence of each episode (beyond the
paper): the fall in the log-probability of the completion's final answer when the
episode is removed from the context (``gc2po.core.signals.answer_logprob_drop``; cf. Lanham et
al. 2023, "Measuring Faithfulness in Chain-of-Thought Reasoning"). It asks the paper's causal
question of the text directly: a copied bet does not depend on its episodes, a valid solution
does. One extra no-grad forward pass per episode and one per completion, at generation.

A preset of the additive form, the same as
``{method: gc2po_add, trainer: {cf_signal: answer_dependence}}``, under the name
earlier configs and results use."""

from __future__ import annotations

import gc2po.methods.gc2po_corrected  # noqa: F401  (registers the form first)
from gc2po.methods.base import register_preset

register_preset(
    "gc2po_add",
    "gc2po_add_answer",
    "GC2PO (corrected) on each episode's answer dependence instead of R_cf (beyond the paper)",
    fixed={"cf_signal": "answer_dependence"},
    display_name="GC2PO (corrected, answer dependence; beyond the paper)",
    colour="#6b6ecf",
    order=95,
    fidelity="beyond the paper: the corrected GC2PO with the fall of the answer's "
    "log-probability when an episode is removed (Lanham et al. 2023) as its signal",
)
