"""A pre-registered family's forest plot (gc2po.reporting.result_figures), from its table."""

from gc2po.reporting.result_figures import write_family_figure
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    write_family_figure(sm.input.csv, sm.params.spec, sm.output.png, sm.params.names)
    log(f"wrote {sm.output.png}")
