"""Learning curves of every run (mean over seeds with 95% bands), one panel per benchmark."""

import json

from gc2po.reporting import training_figures
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    curves = {(base, run): paths for base, run, paths in sm.params.curves}
    plotted = training_figures.learning_curves(
        curves, sm.params.benchmarks, sm.output[0], sm.params.names
    )
    log("steps plotted per run:", json.dumps(plotted))
