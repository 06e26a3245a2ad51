"""Learning curves of every run (mean over seeds with 95% bands), one panel per benchmark."""

import json
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import logged  # noqa: E402

from gc2po.reporting import training_figures  # noqa: E402

sm = snakemake  # noqa: F821
with logged(sm) as log:
    curves = {(base, run): paths for base, run, paths in sm.params.curves}
    plotted = training_figures.learning_curves(
        curves, sm.params.benchmarks, sm.output[0], sm.params.names
    )
    log("steps plotted per run:", json.dumps(plotted))
