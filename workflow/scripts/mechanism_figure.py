"""Copy share against wrong-bet pass@1 per model (gc2po.reporting.result_figures), from the
mechanism table."""

from gc2po.reporting.result_figures import write_mechanism_figure
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    write_mechanism_figure(sm.input.csv, sm.output.png, sm.params.names, sm.params.greedy)
    log(f"wrote {sm.output.png}")
