"""A pre-registered family of comparisons (report.families): Holm over the family's runs."""

from gc2po.reporting.family import Family, write_family
from gc2po.reporting.tables import EvalFile
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    family = Family.from_mapping(sm.params.spec)
    files = [EvalFile.from_path(path) for path in sm.input.samples]
    rows = write_family(files, family, md=sm.output.md, csv=sm.output.csv, names=sm.params.names)
    log(rows.to_string())
