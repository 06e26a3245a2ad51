"""The signal audit table (tables/signal_audit.{md,csv}) from every audited model's summary."""

import json
from pathlib import Path

from gc2po.audit.signals import (
    SIGNAL_CAPTION,
    TRAINED_SIGNAL_CAPTION,
    signal_markdown,
    signal_table,
    trained_signal_markdown,
    trained_signal_table,
)
from gc2po.layout import CheckpointAuditDir, audit_of_summary
from gc2po.reporting.names import method_name
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    audits = []
    for path in map(Path, sm.input):
        audit = audit_of_summary(path)
        checkpoint = isinstance(audit, CheckpointAuditDir)
        step = str(audit.step) if checkpoint else ("0" if audit.model == "base" else "end")
        name = method_name(audit.model, sm.params.names)
        model = (
            name
            if len({a.base for a in map(audit_of_summary, sm.input)}) == 1
            else (f"{audit.base}: {name}")
        )
        audits.append((model, step, json.loads(path.read_text())["signals"]))
    table = signal_table(audits)
    table.to_csv(sm.output.csv, index=False)
    Path(sm.output.md).write_text(signal_markdown(table, SIGNAL_CAPTION))
    log(f"{len(table)} rows from {len(audits)} audits")
    # each run's own signal at base, mid-training and the end (tables/signal_audit_trained.md)
    trained = trained_signal_table(table, sm.params.trained)
    trained.to_csv(sm.output.trained_csv, index=False)
    Path(sm.output.trained_md).write_text(trained_signal_markdown(trained, TRAINED_SIGNAL_CAPTION))
    log(f"{len(trained)} rows of {len(sm.params.trained)} runs' own signals")
