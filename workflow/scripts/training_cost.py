"""The training-cost figure of one base model: mean step time of each run relative to the
reference method, paired by seed."""

import json
from collections import defaultdict
from pathlib import Path

from gc2po.layout import RunDir
from gc2po.reporting import training_figures
from gc2po.reporting.names import method_order
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    by_run = defaultdict(list)  # run -> metrics per seed, in seed order
    runs_of = {path: RunDir.parse(path.parent) for path in map(Path, sm.input)}
    for path in sorted(runs_of, key=lambda path: runs_of[path].seed):
        by_run[runs_of[path].run].append(path)
    runs = {run: by_run[run] for run in method_order(list(by_run))}
    ratios = training_figures.training_cost(
        runs,
        sm.params.reference,
        sm.output[0],
        f"Training cost ({sm.wildcards.base})",
        sm.params.names,
    )
    log("step time / reference (mean, 95% CI over seeds):", json.dumps(ratios))
