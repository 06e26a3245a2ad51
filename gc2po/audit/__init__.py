"""The reward audit on the testbed (paper section 3.2, Figure 1c), measured with the oracle:
does a reward track process validity? ``scoring`` samples and scores completions (on the
audited model's view of them, ``batch``), ``stats`` summarises them (group means, correlations,
the partial correlation with p given f per ``cf_state`` and per perturbation), ``signals``
audits the per-episode signals the corrected GC2PO can train on (within problems, given f),
``figure`` draws them."""

from gc2po.audit.figure import plot_audit
from gc2po.audit.scoring import DEFAULT_GRID, AuditResult, AuditSampling, run_audit, score_rows
from gc2po.audit.signals import episode_frame, signal_audit
from gc2po.audit.stats import (
    partial_correlation,
    pearson,
    perturbation_study,
    spearman,
    state_choice_study,
    summarise,
)

__all__ = [
    "DEFAULT_GRID",
    "AuditResult",
    "AuditSampling",
    "episode_frame",
    "partial_correlation",
    "pearson",
    "perturbation_study",
    "plot_audit",
    "run_audit",
    "score_rows",
    "signal_audit",
    "spearman",
    "state_choice_study",
    "summarise",
]
