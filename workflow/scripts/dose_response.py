"""A dose-response table and figure (gc2po.reporting.dose_response): the mechanism measures
against the setting a sweep varies."""

from gc2po.reporting.dose_response import write_dose_response
from gc2po.reporting.mechanism import seed_values
from gc2po.testbed.data import read_split
from gc2po.testbed.mechanism import measures_of
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
spec = sm.params.spec
with logged(sm) as log:
    problems = {
        split: {problem.id: problem for problem in read_split(path)}
        for split, path in zip(sm.params.splits, sm.input.data)
    }
    rows = write_dose_response(
        seed_values(list(sm.input.samples), problems),
        sm.params.runs,
        measures_of(problems),
        method=spec["method"],
        key=spec["key"],
        markers=spec.get("markers"),
        md=sm.output.md,
        csv=sm.output.csv,
        png=sm.output.png,
        names=sm.params.names,
    )
    log(rows.to_string())
