# Figures (PNG + PDF), collected with captions by `snakemake --report report.html`.


rule figures:
    input:
        metrics=metrics_files(list(RUNS)),
        summaries=eval_summaries(MODELS, BENCHMARKS),
    output:
        grad_norm=report(f"{OUT}/figures/grad_norm.png", caption="../report/grad_norm.rst", category="Training"),
        sampling_ratio=report(f"{OUT}/figures/sampling_ratio.png", caption="../report/sampling_ratio.rst", category="Training"),
        training_cost=report(f"{OUT}/figures/training_cost.png", caption="../report/training_cost.rst", category="Training"),
        budget_curves=report(f"{OUT}/figures/budget_curves.png", caption="../report/budget_curves.rst", category="Evaluation"),
        token_usage=report(f"{OUT}/figures/token_usage.png", caption="../report/token_usage.rst", category="Evaluation"),
        lambda_ablation=report(f"{OUT}/figures/lambda_ablation.png", caption="../report/lambda_ablation.rst", category="Ablations"),
    params:
        bases=list(BASE_MODELS),
        runs=RUNS,
        models=MODELS,
        seeds={model: seeds_of(model) for model in MODELS},
        models_of={base: models_of(base) for base in BASE_MODELS},
        benchmarks=BENCHMARKS,
        out=lambda wc, output: str(Path(output.grad_norm).parents[1]),
        reference=config["report"]["cost_reference"],
        sweeps=config.get("sweeps") or {},
    log:
        f"logs/{NAME}/figures.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/figures.py"
