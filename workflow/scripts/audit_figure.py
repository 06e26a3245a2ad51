"""The reward-audit figure from every audited model's summary (panels under display names)."""

import json
from pathlib import Path

from gc2po.audit import plot_audit
from gc2po.layout import CheckpointAuditDir, audit_of_summary
from gc2po.reporting.names import method_name
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:

    def key(path: Path) -> tuple[str, str]:
        """(base, panel label) of an audit's summary.json (of a model or a kept checkpoint)."""
        audit = audit_of_summary(path)
        if isinstance(audit, CheckpointAuditDir):  # a checkpoint along training
            return audit.base, f"{method_name(audit.model, sm.params.names)} at step {audit.step}"
        return audit.base, method_name(audit.model, sm.params.names)

    paths = list(map(Path, sm.input))
    one_base = len({key(path)[0] for path in paths}) == 1
    summaries = {}
    for path in paths:
        base, label = key(path)
        summaries[label if one_base else f"{base}: {label}"] = json.loads(path.read_text())
    plot_audit(summaries, sm.output[0])
    log(f"plotted {list(summaries)}")
