"""Completion length and episodes per completion over training for the runs of
report.length_runs (base model, GRPO, GC2PO as in the paper, the corrected GC2PO)."""

import json
from collections import defaultdict
from pathlib import Path

from gc2po.layout import RunDir
from gc2po.reporting import training_figures
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    runs = defaultdict(list)  # (base, run) -> metrics per seed
    for path in sorted(map(Path, sm.input.metrics)):
        run = RunDir.parse(path.parent)
        runs[(run.base, run.run)].append(path)
    order = {run: i for i, run in enumerate(sm.params.runs)}
    runs = dict(
        sorted(
            runs.items(), key=lambda item: (sm.params.bases.index(item[0][0]), order[item[0][1]])
        )
    )
    plotted = training_figures.length_and_episodes(runs, sm.output[0], sm.params.names)
    log("length figure:", json.dumps(plotted))
