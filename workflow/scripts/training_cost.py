"""The training-cost figure of one base model: mean step time of each run relative to the
reference method, paired by seed."""

import json
import sys
from pathlib import Path

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import logged  # noqa: E402

from gc2po.reporting import figures  # noqa: E402
from gc2po.reporting.names import method_order  # noqa: E402

sm = snakemake  # noqa: F821
p = sm.params
with logged(sm) as log:
    base = sm.wildcards.base
    runs = {r: [Path(f"{p.out}/runs/{base}/{r}/seed{s}/metrics.jsonl") for s in p.seeds] for r in method_order(list(p.runs))}
    ratios = figures.training_cost(runs, p.reference, sm.output[0], f"Training cost ({base})")
    log("step time / reference (mean, 95% CI):", json.dumps(ratios))
