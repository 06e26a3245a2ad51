"""The mechanism table (gc2po.reporting.mechanism) from per-sample evaluation files and the
testbed splits' problems."""

from gc2po.reporting.mechanism import write_mechanism
from gc2po.testbed.data import read_split
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    problems = {
        split: {problem.id: problem for problem in read_split(path)}
        for split, path in zip(sm.params.splits, sm.input.data)
    }
    rows = write_mechanism(
        list(sm.input.samples),
        problems,
        md=sm.output.md,
        csv=sm.output.csv,
        title=sm.params.title,
        names=sm.params.names,
    )
    log(rows.to_string())
