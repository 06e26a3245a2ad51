"""The reward audit on the testbed (paper section 3.2, Figure 1c), measured with the oracle:
does a reward track process validity? ``scoring`` samples and scores completions, ``stats``
summarises them (group means, correlations, the partial correlation with p given f per
``cf_state`` and per perturbation), ``figure`` draws them."""

from gc2po.audit.figure import plot_audit
from gc2po.audit.scoring import DEFAULT_GRID, AuditConfig, run_audit, score_rows
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
    "AuditConfig",
    "partial_correlation",
    "pearson",
    "perturbation_study",
    "plot_audit",
    "run_audit",
    "score_rows",
    "spearman",
    "state_choice_study",
    "summarise",
]
