"""tables/training_signals.{md,csv} (report.training_signals): floor binds and sign flips over
training, from the runs' metrics."""

from gc2po.reporting.training_signals import write_training_signals
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    rows = write_training_signals(
        list(sm.input), md=sm.output.md, csv=sm.output.csv, names=sm.params.names
    )
    log(rows.to_string())
