# Figures (PNG + PDF) and the report's setup page, collected with captions by
# `snakemake --report report.html` (categories: the workflow's stages).

# a forest plot per pre-registered family, drawn from its table (gc2po.reporting.result_figures)
FAMILY_FIGURES = [figure_file(OUT, family) for family in FAMILIES]
# the pipeline's picture: this config's rule graph (docs/rulegraph.svg is the default's)
RULEGRAPH = [f"{OUT}/figures/rulegraph.dot", f"{OUT}/figures/rulegraph.svg"]


rule figures:
    input:
        metrics=metrics_files(list(RUNS)),
        summaries=eval_summaries(MODELS, BENCHMARKS),
    output:
        grad_norm=report(figure_file(OUT, "grad_norm"), caption="../report/grad_norm.rst",
                         category="2 Training", subcategory="Curves"),
        sampling_ratio=report(figure_file(OUT, "sampling_ratio"),
                              caption="../report/sampling_ratio.rst", category="2 Training",
                              subcategory="Curves"),
        budget_curves=report(figure_file(OUT, "budget_curves"),
                             caption="../report/budget_curves.rst", category="3 Results",
                             subcategory="Figures"),
        token_usage=report(figure_file(OUT, "token_usage"), caption="../report/token_usage.rst",
                           category="3 Results", subcategory="Figures"),
        lambda_ablation=report(figure_file(OUT, "lambda_ablation"),
                               caption="../report/lambda_ablation.rst", category="5 Ablations",
                               subcategory="Figures"),
    params:
        bases=list(BASE_MODELS),
        runs=RUNS,
        names=RUN_NAMES,
        benchmarks=BENCHMARKS,
        sweep_methods=report_plan.figure_sweep_methods(config, METHOD_FACTS),
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


rule training_cost:  # one figure per base model
    input:
        lambda wc: [run_dir(job).metrics(OUT) for job in JOBS.values() if job.base == wc.base],
    output:
        report(figure_file(OUT, "training_cost_{base}"), caption="../report/training_cost.rst",
               category="2 Training", subcategory="Training cost", labels={"base model": "{base}"}),
    params:
        reference=config["report"]["cost_reference"],
        names=RUN_NAMES,
    log:
        f"logs/{NAME}/training_cost_{{base}}.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/training_cost.py"


rule report_setup:  # what the report's first entry shows: the run's setup, models counted from their files
    input:
        models=[f"{RES}/models/{b}" for b, spec in BASE_MODELS.items() if spec["source"] != "hub"],
        summaries=eval_summaries(MODELS, BENCHMARKS),  # all: the machines each evaluation ran on
    output:
        report(report_page(OUT, "setup"), caption="../report/setup.rst", category="1 Setup"),
    params:
        config=config,
        base_models=BASE_MODELS,
        model_paths={b: base_model_path(b) for b in BASE_MODELS},
        runs={label: {"method": r.method, "trainer": r.trainer, "bases": list(r.bases), "seeds": list(r.seeds)}
              for label, r in RUNS.items()},
    log:
        f"logs/{NAME}/report_setup.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/report_setup.py"


if LEARNING_CURVE:

    rule learning_curve_figure:
        input:
            [path for paths in CURVE_FILES.values() for path in paths],
        output:
            report(figure_file(OUT, "learning_curves"), caption="../report/learning_curves.rst",
                   category="2 Training", subcategory="Learning curves"),
        params:
            curves=[[base, run, paths] for (base, run), paths in CURVE_FILES.items()],
            benchmarks=LEARNING_CURVE["benchmarks"],
            names=RUN_NAMES,
        log:
            f"logs/{NAME}/learning_curves.log",
        conda:
            "../envs/gc2po.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=5,
        script:
            "../scripts/learning_curve_figure.py"


if LENGTH_RUNS:

    rule length_figure:  # completion length and episodes per completion over training
        input:
            metrics=metrics_files(LENGTH_RUNS),
        output:
            report(figure_file(OUT, "length_episodes"), caption="../report/length_episodes.rst",
                   category="2 Training", subcategory="Curves"),
        params:
            runs=LENGTH_RUNS,
            bases=list(BASE_MODELS),
            names=RUN_NAMES,
        log:
            f"logs/{NAME}/length_figure.log",
        conda:
            "../envs/gc2po.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=5,
        script:
            "../scripts/length_figure.py"


rule family_figure:  # drawn from the family's table, so it shows the table's numbers
    input:
        csv=table_file(OUT, "{family}", "csv"),
    output:
        png=report(figure_file(OUT, "{family}"), caption="../report/family_figure.rst",
                   category="3 Results", subcategory="Pre-registered families",
                   labels={"figure": "{family}"}),
    params:
        spec=lambda wc: FAMILIES[wc.family],
        names=RUN_NAMES,
    wildcard_constraints:
        family="|".join(FAMILIES) or "no_family",
    log:
        f"logs/{NAME}/figures/{{family}}.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/family_figure.py"


rule rulegraph:  # runs `snakemake --rulegraph` of this config beside the running workflow
    output:
        dot=RULEGRAPH[0],
        svg=report(RULEGRAPH[1], caption="../report/rulegraph.rst", category="1 Setup"),
    log:
        f"logs/{NAME}/figures/rulegraph.log",
    localrule: True  # a Snakemake of its own, on the machine that runs the workflow
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/rulegraph.py"
