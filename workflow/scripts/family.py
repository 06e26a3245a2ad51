"""A pre-registered family of comparisons (report.families): Holm over the family's runs."""

from gc2po.reporting.family import Family, write_family
from gc2po.reporting.tables import EvalFile
from gc2po.testbed.data import read_split
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    family = Family.from_mapping(sm.params.spec)
    files = [EvalFile.from_path(path) for path in sm.input.samples]
    # a copy-share family reads the split's bets
    problems = {p.id: p for path in sm.input.data for p in read_split(path)} or None
    rows = write_family(
        files,
        family,
        md=sm.output.md,
        csv=sm.output.csv,
        names=sm.params.names,
        problems=problems,
    )
    log(rows.to_string())
