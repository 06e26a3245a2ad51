"""The figures shared by all base models (one line per base and run) from run metrics and
evaluation summaries; colours and names from gc2po.reporting.names."""

import json
from collections import defaultdict
from pathlib import Path

from gc2po.layout import EvalFile, RunDir
from gc2po.reporting import figures, plotting, training_figures
from gc2po.reporting.names import method_order
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
p = sm.params
ORDER = {run: i for i, run in enumerate(["base"] + method_order(list(p.runs)))}

with logged(sm) as log:
    runs = defaultdict(list)  # (base, run) -> metrics per seed
    for path in map(Path, sm.input.metrics):
        run = RunDir.parse(path.parent)
        runs[(run.base, run.run)].append(path)
    evals = defaultdict(list)  # (base, model, benchmark) -> summaries per seed
    for path in map(Path, sm.input.summaries):
        key = EvalFile.of_summary(path)
        evals[(key.base, key.model, key.benchmark)].append(path)
    runs = dict(
        sorted(runs.items(), key=lambda item: (p.bases.index(item[0][0]), ORDER[item[0][1]]))
    )
    evals = dict(
        sorted(evals.items(), key=lambda item: (p.bases.index(item[0][0]), ORDER[item[0][1]]))
    )

    log(
        "grad norm steps:",
        training_figures.metric_over_steps(
            runs,
            "grad_norm",
            "gradient norm",
            sm.output.grad_norm,
            "Gradient norm",
            plotting.NON_NEGATIVE,
            p.names,
        ),
    )
    log(
        "sampling ratio steps:",
        training_figures.metric_over_steps(
            runs,
            "sampling_ratio/mean",
            "mean pi / pi_old",
            sm.output.sampling_ratio,
            "Sampling ratio",
            plotting.NON_NEGATIVE,
            p.names,
        ),
    )
    first = p.benchmarks[0]
    figures.budget_curves(
        {(b, m): paths for (b, m, bench), paths in evals.items() if bench == first},
        sm.output.budget_curves,
        f"Token-budget curves ({first})",
        p.names,
    )
    figures.token_usage(evals, p.benchmarks, sm.output.token_usage, p.names)
    # lambda = 0 is the ablation method, the paper's value the method's own run, the rest the
    # runs that set that one lambda of the form (the sweeps; variants), with the value the plan
    # gives them; for the paper's GC2PO and the corrected one (sweep_methods)
    points = {}
    for base in p.bases:
        for form in p.sweep_methods:
            sweep_points = {
                "lambda_exp": {0.0: f"{form}_no_sexp", 0.9: form},
                "lambda_cf": {0.0: f"{form}_no_rcf", 0.8: form},
            }
            for key, named in sweep_points.items():
                named = {
                    **named,
                    **{
                        run.trainer[key]: label
                        for label, run in p.runs.items()
                        if run.method == form and list(run.trainer) == [key]
                    },
                }
                found = {
                    value: evals[(base, run, first)]
                    for value, run in named.items()
                    if (base, run, first) in evals
                }
                if found or form == "gc2po":
                    points[(base, form, key)] = found
    figures.lambda_ablation(points, first, sm.output.lambda_ablation)
    log("lambda ablation points:", json.dumps({"/".join(k): sorted(v) for k, v in points.items()}))
