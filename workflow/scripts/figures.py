"""All figures from run metrics and evaluation summaries (lines are "base/run" when the
config has several base models)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import logged  # noqa: E402

from gc2po.reporting import figures  # noqa: E402

sm = snakemake  # noqa: F821
p = sm.params
with logged(sm) as log:

    def label(base, name):
        return name if len(p.bases) == 1 else f"{base}/{name}"

    def summaries(base, model, bench):
        return [Path(f"{p.out}/eval/{base}/{model}/seed{s}/{bench}.jsonl.summary.json") for s in p.seeds[model]]

    metrics = {label(b, r): [Path(f"{p.out}/runs/{b}/{r}/seed{s}/metrics.jsonl") for s in p.seeds[r]]
               for b in p.bases for r in p.runs if r in p.models_of[b]}
    figures.metric_over_steps(metrics, "grad_norm", "gradient norm", sm.output.grad_norm, "Gradient norm")
    figures.metric_over_steps(metrics, "sampling_ratio/mean", "mean pi/pi_old", sm.output.sampling_ratio, "Sampling ratio")
    ratios = {}
    for base in p.bases:
        ratios[base] = figures.training_cost({r: metrics[label(base, r)] for r in p.runs if r in p.models_of[base]},
                                             p.reference, sm.output.training_cost)
    log("training cost / reference:", json.dumps(ratios))
    first = p.benchmarks[0]
    figures.budget_curves({label(b, m): summaries(b, m, first) for b in p.bases for m in p.models_of[b]},
                          sm.output.budget_curves, f"Token-budget curves ({first})")
    figures.token_usage({(label(b, m), bench): summaries(b, m, bench) for b in p.bases for m in p.models_of[b]
                         for bench in p.benchmarks}, sm.output.token_usage)

    def pass1(base, model):
        values = [json.loads(f.read_text())["pass@1"] for f in summaries(base, model, first)]
        return sum(values) / len(values)

    # lambda = 0 is the ablation method, the paper's value is the gc2po run, the rest the sweeps
    sweep_points = {"lambda_exp": {0.0: "gc2po_no_sexp", 0.9: "gc2po"}, "lambda_cf": {0.0: "gc2po_no_rcf", 0.8: "gc2po"}}
    series = {}
    for base in p.bases:
        for key, points in sweep_points.items():
            points = {**points, **{v: f"gc2po_{key}_{v}" for v in p.sweeps.get(key, [])}}
            series[label(base, key)] = {value: pass1(base, run) for value, run in points.items()
                                        if run in p.models_of[base]}
    figures.lambda_ablation(series, sm.output.lambda_ablation)
    log("lambda ablation:", json.dumps(series))
