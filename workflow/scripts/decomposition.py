"""Cue avoidance or accuracy (report.decomposition; gc2po.reporting.decomposition): each run's
wrong-bet pass@1 split into 1 - copy share and accuracy on the answers that do not copy."""

from gc2po.reporting.decomposition import write_decomposition
from gc2po.testbed.data import read_split
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    rows = write_decomposition(
        list(sm.input.samples),
        {problem.id: problem for problem in read_split(sm.input.data)},
        reference=sm.params.reference,
        benchmark=sm.params.benchmark,
        md=sm.output.md,
        csv=sm.output.csv,
        names=sm.params.names,
    )
    log(rows.to_string())
