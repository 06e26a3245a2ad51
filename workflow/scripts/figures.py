"""All figures from run metrics and evaluation summaries."""

import json
import sys
from pathlib import Path

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import logged  # noqa: E402

from gc2po.reporting import figures  # noqa: E402

sm = snakemake  # noqa: F821
p = sm.params
with logged(sm) as log:
    metrics = {run: [Path(f"{p.out}/runs/{run}/seed{s}/metrics.jsonl") for s in p.seeds] for run in p.runs}
    figures.metric_over_steps(metrics, "grad_norm", "gradient norm", sm.output.grad_norm, "Gradient norm")
    figures.metric_over_steps(metrics, "sampling_ratio/mean", "mean pi/pi_old", sm.output.sampling_ratio, "Sampling ratio")
    ratios = figures.training_cost(metrics, p.reference, sm.output.training_cost)
    log("training cost / reference:", json.dumps(ratios))

    def summaries(model, bench):
        return [Path(f"{p.out}/eval/{model}/seed{s}/{bench}.jsonl.summary.json") for s in p.seeds]

    figures.budget_curves({m: summaries(m, p.benchmarks[0]) for m in p.models}, sm.output.budget_curves,
                          f"Token-budget curves ({p.benchmarks[0]})")
    figures.token_usage({(m, b): summaries(m, b) for m in p.models for b in p.benchmarks}, sm.output.token_usage)

    def pass1(model):
        values = [json.loads(f.read_text())["pass@1"] for f in summaries(model, p.benchmarks[0])]
        return sum(values) / len(values)

    # lambda = 0 is the ablation method, the paper's value is the gc2po run, the rest the sweeps
    sweep_points = {"lambda_exp": {0.0: "gc2po_no_sexp", 0.9: "gc2po"}, "lambda_cf": {0.0: "gc2po_no_rcf", 0.8: "gc2po"}}
    series = {}
    for key, points in sweep_points.items():
        points = {**points, **{v: f"gc2po_{key}_{v}" for v in p.sweeps.get(key, [])}}
        series[key] = {value: pass1(run) for value, run in points.items() if run in p.runs}
    figures.lambda_ablation(series, sm.output.lambda_ablation)
    log("lambda ablation:", json.dumps(series))
